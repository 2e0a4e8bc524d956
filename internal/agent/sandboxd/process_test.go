package sandboxd

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/emptypb"

	processv1 "github.com/kubox-dev/kubox/proto/process/v1"
)

func TestExecute(t *testing.T) {
	type result struct {
		Code           int32
		Stdout, Stderr string
	}
	cases := map[string]struct {
		opts     ProcessOptions
		config   *processv1.ProcessConfig
		want     result
		wantCode connect.Code
	}{
		"output and exit code": {
			config: config("sh", "-c", "echo out; echo err >&2; exit 3"),
			want:   result{Code: 3, Stdout: "out\n", Stderr: "err\n"},
		},
		"environment on top of the agent's": {
			config: &processv1.ProcessConfig{Command: []string{"sh", "-c", `echo "$GREETING $PATH"`}, EnvVars: map[string]string{"GREETING": "hi"}},
			want:   result{Stdout: "hi " + os.Getenv("PATH") + "\n"},
		},
		"cwd relative to the root": {
			config: &processv1.ProcessConfig{Command: []string{"sh", "-c", "basename $(pwd)"}, Cwd: ptr("/sub")},
			want:   result{Stdout: "sub\n"},
		},
		"no cwd runs in the root": {
			config: config("sh", "-c", "test -d sub && echo root"),
			want:   result{Stdout: "root\n"},
		},
		"killed by a signal: 128+n": {
			config: config("sh", "-c", "kill -KILL $$"),
			want:   result{Code: 128 + int32(syscall.SIGKILL)},
		},
		"no command": {
			config:   config(),
			wantCode: connect.CodeInvalidArgument,
		},
		"cwd outside the root": {
			config:   &processv1.ProcessConfig{Command: []string{"true"}, Cwd: ptr("../..")},
			wantCode: connect.CodePermissionDenied,
		},
		"output over the limit fails instead of being cut": {
			opts:     ProcessOptions{MaxExecuteOutput: 10},
			config:   config("sh", "-c", "echo 0123456789abcdef"),
			wantCode: connect.CodeResourceExhausted,
		},
		"endless output is stopped, not cut": {
			opts:     ProcessOptions{MaxExecuteOutput: 1 << 20},
			config:   config("yes"),
			wantCode: connect.CodeResourceExhausted,
		},
		"the agent's time limit": {
			opts:     ProcessOptions{ExecuteTimeout: 100 * time.Millisecond},
			config:   config("sleep", "10"),
			wantCode: connect.CodeDeadlineExceeded,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.opts)
			f.mkdir(t, "sub")
			res, err := f.procs.Execute(guardCtx(t), connect.NewRequest(&processv1.ExecuteRequest{Config: tc.config}))
			if got := codeOf(err); got != tc.wantCode {
				t.Fatalf("Execute error %v (code %v), want code %v", err, got, tc.wantCode)
			}
			if err != nil {
				return
			}
			got := result{Code: res.Msg.GetExitCode(), Stdout: string(res.Msg.GetStdout()), Stderr: string(res.Msg.GetStderr())}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Execute (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExecuteReturnsAllOfALargeOutput(t *testing.T) {
	f := newFixture(t, ProcessOptions{})
	const n = 5 << 20 // more than the process manager's replay buffer and default capture
	res, err := f.procs.Execute(guardCtx(t), connect.NewRequest(&processv1.ExecuteRequest{
		Config: config("sh", "-c", "head -c 5242880 /dev/zero; head -c 1000 /dev/zero >&2")}))
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if len(res.Msg.GetStdout()) != n || len(res.Msg.GetStderr()) != 1000 || res.Msg.GetExitCode() != 0 {
		t.Errorf("stdout %d bytes, stderr %d bytes, exit %d; want %d, 1000 and 0",
			len(res.Msg.GetStdout()), len(res.Msg.GetStderr()), res.Msg.GetExitCode(), n)
	}
}

func TestExecuteHonoursTheCallersDeadline(t *testing.T) {
	f := newFixture(t, ProcessOptions{})
	ctx, cancel := context.WithTimeout(guardCtx(t), 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := f.procs.Execute(ctx, connect.NewRequest(&processv1.ExecuteRequest{Config: config("sleep", "10")}))
	if code := codeOf(err); code != connect.CodeDeadlineExceeded && code != connect.CodeCanceled {
		t.Fatalf("Execute past its deadline: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("Execute returned after %s; the deadline was 200ms", d)
	}
}

func TestStartStreamsStdinToStdout(t *testing.T) {
	f := newFixture(t, ProcessOptions{})
	ctx := guardCtx(t)
	s := f.start(t, ctx, &processv1.StartRequest{Config: config("sh", "-c", "cat; echo done >&2")})
	for _, in := range []string{"hello ", "world"} {
		if _, err := f.procs.WriteStdin(ctx, connect.NewRequest(&processv1.WriteStdinRequest{
			ProcessId: s.id, Payload: &processv1.WriteStdinRequest_Input{Input: []byte(in)}})); err != nil {
			t.Fatalf("WriteStdin: %v", err)
		}
	}
	if _, err := f.procs.WriteStdin(ctx, connect.NewRequest(&processv1.WriteStdinRequest{
		ProcessId: s.id, Payload: &processv1.WriteStdinRequest_Eof{Eof: &emptypb.Empty{}}})); err != nil {
		t.Fatalf("WriteStdin eof: %v", err)
	}
	stdout, stderr, code := s.finish(t)
	if stdout != "hello world" || stderr != "done\n" || code != 0 {
		t.Errorf("stdout %q, stderr %q, exit %d; want %q, %q, 0", stdout, stderr, code, "hello world", "done\n")
	}
	// The stream ended: the process is no longer reachable by its id.
	_, err := f.procs.WriteStdin(ctx, connect.NewRequest(&processv1.WriteStdinRequest{
		ProcessId: s.id, Payload: &processv1.WriteStdinRequest_Input{Input: []byte("late")}}))
	if codeOf(err) != connect.CodeNotFound {
		t.Errorf("WriteStdin after the stream ended: %v, want NotFound", err)
	}
}

func TestSendSignalExitCode(t *testing.T) {
	cases := map[string]struct {
		signal processv1.Signal
		want   int32
	}{
		"SIGTERM": {processv1.Signal_SIGNAL_SIGTERM, 128 + int32(syscall.SIGTERM)},
		"SIGINT":  {processv1.Signal_SIGNAL_SIGINT, 128 + int32(syscall.SIGINT)},
		"SIGKILL": {processv1.Signal_SIGNAL_SIGKILL, 128 + int32(syscall.SIGKILL)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, ProcessOptions{})
			ctx := guardCtx(t)
			s := f.start(t, ctx, &processv1.StartRequest{Config: config("sleep", "30")})
			if _, err := f.procs.SendSignal(ctx, connect.NewRequest(&processv1.SendSignalRequest{ProcessId: s.id, Signal: tc.signal})); err != nil {
				t.Fatalf("SendSignal: %v", err)
			}
			if _, _, code := s.finish(t); code != tc.want {
				t.Errorf("exit code %d after %s, want %d", code, name, tc.want)
			}
		})
	}
}

func TestRequestsForUnknownOrWrongProcesses(t *testing.T) {
	f := newFixture(t, ProcessOptions{})
	ctx := guardCtx(t)
	s := f.start(t, ctx, &processv1.StartRequest{Config: config("sleep", "30")})
	cases := map[string]struct {
		call func() error
		want connect.Code
	}{
		"signal to an unknown id": {func() error {
			_, err := f.procs.SendSignal(ctx, connect.NewRequest(&processv1.SendSignalRequest{ProcessId: s.id + 100000, Signal: processv1.Signal_SIGNAL_SIGTERM}))
			return err
		}, connect.CodeNotFound},
		"unspecified signal": {func() error {
			_, err := f.procs.SendSignal(ctx, connect.NewRequest(&processv1.SendSignalRequest{ProcessId: s.id}))
			return err
		}, connect.CodeInvalidArgument},
		"resize without a PTY": {func() error {
			_, err := f.procs.ResizeTTY(ctx, connect.NewRequest(&processv1.ResizeTTYRequest{ProcessId: s.id, Rows: 10, Cols: 10}))
			return err
		}, connect.CodeFailedPrecondition},
		"resize to zero": {func() error {
			_, err := f.procs.ResizeTTY(ctx, connect.NewRequest(&processv1.ResizeTTYRequest{ProcessId: s.id}))
			return err
		}, connect.CodeInvalidArgument},
		"stdin to an unknown id": {func() error {
			_, err := f.procs.WriteStdin(ctx, connect.NewRequest(&processv1.WriteStdinRequest{ProcessId: -1}))
			return err
		}, connect.CodeNotFound},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := tc.call(); codeOf(err) != tc.want {
				t.Errorf("%v, want code %v", err, tc.want)
			}
		})
	}
}

func TestPTYStartAndResize(t *testing.T) {
	f := newFixture(t, ProcessOptions{})
	ctx := guardCtx(t)
	s := f.start(t, ctx, &processv1.StartRequest{
		Config: config("sh", "-c", "stty size; read line; stty size"),
		Pty:    &processv1.PTY{Rows: 30, Cols: 100},
	})
	first := s.readUntil(t, "30 100")
	if _, err := f.procs.ResizeTTY(ctx, connect.NewRequest(&processv1.ResizeTTYRequest{ProcessId: s.id, Rows: 40, Cols: 120})); err != nil {
		t.Fatalf("ResizeTTY: %v", err)
	}
	if _, err := f.procs.WriteStdin(ctx, connect.NewRequest(&processv1.WriteStdinRequest{
		ProcessId: s.id, Payload: &processv1.WriteStdinRequest_Input{Input: []byte("\n")}})); err != nil {
		t.Fatalf("WriteStdin: %v", err)
	}
	stdout, stderr, code := s.finish(t)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want 0 and nothing on stderr (a PTY has one stream)", code, stderr)
	}
	if !strings.Contains(stdout, "40 120") {
		t.Errorf("terminal output after ResizeTTY %q (before: %q); want the size 40 120", stdout, first)
	}
}

func TestEndingTheStartStreamKillsTheProcess(t *testing.T) {
	f := newFixture(t, ProcessOptions{})
	ctx, cancel := context.WithCancel(guardCtx(t))
	s := f.start(t, ctx, &processv1.StartRequest{Config: config("sleep", "30")})
	cancel()
	deadline := time.Now().Add(guard)
	for syscall.Kill(int(s.id), 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs after its Start stream ended", s.id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }
