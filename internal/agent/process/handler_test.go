package process

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/durationpb"

	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// testServer serves a Manager's handler on 127.0.0.1 over HTTP/1.1 and h2c and records the HTTP
// versions of the requests it got.
type testServer struct {
	*httptest.Server
	mu     sync.Mutex
	protos map[string]int
}

func newTestServer(t testing.TB, m *Manager) *testServer {
	t.Helper()
	path, h := agentv1connect.NewProcessServiceHandler(NewHandler(m))
	mux := http.NewServeMux()
	s := &testServer{protos: map[string]int{}}
	mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.protos[r.Proto]++
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	s.Server = httptest.NewUnstartedServer(mux)
	s.Config.Protocols = new(http.Protocols)
	s.Config.Protocols.SetHTTP1(true)
	s.Config.Protocols.SetUnencryptedHTTP2(true)
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *testServer) sawProto(proto string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.protos[proto] > 0
}

// clients are the ways a caller reaches the agent: the Connect protocol over HTTP/1.1 with JSON
// (what curl and browsers speak) and with binary protobuf, and gRPC over HTTP/2 without TLS.
func clients(t testing.TB, s *testServer) map[string]struct {
	client agentv1connect.ProcessServiceClient
	proto  string
} {
	h1 := &http.Transport{Protocols: new(http.Protocols)}
	h1.Protocols.SetHTTP1(true)
	h2 := &http.Transport{Protocols: new(http.Protocols)}
	h2.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(h1.CloseIdleConnections)
	t.Cleanup(h2.CloseIdleConnections)
	return map[string]struct {
		client agentv1connect.ProcessServiceClient
		proto  string
	}{
		"connect-json-http1":  {agentv1connect.NewProcessServiceClient(&http.Client{Transport: h1}, s.URL, connect.WithProtoJSON()), "HTTP/1.1"},
		"connect-proto-http1": {agentv1connect.NewProcessServiceClient(&http.Client{Transport: h1}, s.URL), "HTTP/1.1"},
		"grpc-h2c":            {agentv1connect.NewProcessServiceClient(&http.Client{Transport: h2}, s.URL, connect.WithGRPC()), "HTTP/2.0"},
	}
}

// streamEvents reads a StartProcess or AttachProcess stream to its end.
func streamEvents[T interface{ GetEvent() *agentv1.ProcessEvent }](t *testing.T, s interface {
	Receive() bool
	Msg() T
	Err() error
}) []*agentv1.ProcessEvent {
	t.Helper()
	var evs []*agentv1.ProcessEvent
	for s.Receive() {
		evs = append(evs, s.Msg().GetEvent())
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return evs
}

// summary reduces events to kinds and concatenated output.
func summary(evs []*agentv1.ProcessEvent) (kinds []string, stdout, stderr string, exit *agentv1.ProcessExit) {
	for _, e := range evs {
		switch {
		case e.GetStarted() != nil:
			kinds = append(kinds, "started")
		case e.GetAttached() != nil:
			kinds = append(kinds, "attached")
		case e.GetOutput() != nil:
			if len(kinds) == 0 || kinds[len(kinds)-1] != "output" {
				kinds = append(kinds, "output")
			}
			if e.GetOutput().GetStream() == agentv1.OutputStream_OUTPUT_STREAM_STDERR {
				stderr += string(e.GetOutput().GetData())
			} else {
				stdout += string(e.GetOutput().GetData())
			}
		case e.GetDropped() != nil:
			kinds = append(kinds, "dropped")
		case e.GetExited() != nil:
			kinds = append(kinds, "exited")
			exit = e.GetExited()
		}
	}
	return kinds, stdout, stderr, exit
}

func TestHandler(t *testing.T) {
	m := newManager(t, Options{})
	srv := newTestServer(t, m)
	for name, c := range clients(t, srv) {
		t.Run(name, func(t *testing.T) {
			ctx := guardCtx(t)
			client := c.client

			stream, err := client.StartProcess(ctx, connect.NewRequest(&agentv1.StartProcessRequest{
				Spec: &agentv1.ProcessSpec{ShellCommand: "echo hi; echo oops >&2; exit 5", Tag: name},
			}))
			if err != nil {
				t.Fatal(err)
			}
			evs := streamEvents(t, stream)
			kinds, stdout, stderr, exit := summary(evs)
			if kinds[0] != "started" || kinds[len(kinds)-1] != "exited" {
				t.Errorf("events %v, want started first and exited last", kinds)
			}
			if st := evs[0].GetStarted(); st.GetProcessId() == "" || st.GetPid() <= 0 {
				t.Errorf("started = %v", st)
			}
			if stdout != "hi\n" || stderr != "oops\n" || exit.GetExitCode() != 5 || exit.GetSignal() != "" {
				t.Errorf("stdout %q stderr %q exit %v", stdout, stderr, exit)
			}

			run, err := client.RunProcess(ctx, connect.NewRequest(&agentv1.RunProcessRequest{
				Spec:  &agentv1.ProcessSpec{Argv: []string{"cat"}},
				Stdin: []byte("round trip"),
			}))
			if err != nil {
				t.Fatal(err)
			}
			if string(run.Msg.GetStdout()) != "round trip" || run.Msg.GetExit().GetExitCode() != 0 || run.Msg.GetStdoutTruncated() {
				t.Errorf("run = %v", run.Msg)
			}

			run, err = client.RunProcess(ctx, connect.NewRequest(&agentv1.RunProcessRequest{
				Spec: &agentv1.ProcessSpec{Argv: []string{"sleep", "1000"}, Timeout: durationpb.New(1)},
			}))
			if err != nil {
				t.Fatal(err)
			}
			if e := run.Msg.GetExit(); !e.GetTimedOut() || e.GetSignal() != "SIGTERM" || e.GetExitCode() != 143 {
				t.Errorf("timed-out run exit = %v", e)
			}

			if !srv.sawProto(c.proto) {
				t.Errorf("the server saw no %s request", c.proto)
			}
		})
	}
}

func TestHandlerErrors(t *testing.T) {
	m := newManager(t, Options{MaxProcesses: 1})
	srv := newTestServer(t, m)
	sleeper, err := m.Start(Spec{Argv: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range clients(t, srv) {
		t.Run(name, func(t *testing.T) {
			ctx := guardCtx(t)
			client := c.client
			_, err := client.SendSignal(ctx, connect.NewRequest(&agentv1.SendSignalRequest{ProcessId: "missing", Signal: "TERM"}))
			wantCode(t, err, connect.CodeNotFound, "missing")
			_, err = client.SendSignal(ctx, connect.NewRequest(&agentv1.SendSignalRequest{ProcessId: sleeper.ID(), Signal: "SIGNOPE"}))
			wantCode(t, err, connect.CodeInvalidArgument, "signal")
			_, err = client.ResizePty(ctx, connect.NewRequest(&agentv1.ResizePtyRequest{ProcessId: sleeper.ID(), Size: &agentv1.PtySize{Rows: 1, Cols: 1}}))
			wantCode(t, err, connect.CodeFailedPrecondition, "without a PTY")
			_, err = client.ResizePty(ctx, connect.NewRequest(&agentv1.ResizePtyRequest{ProcessId: sleeper.ID(), Size: &agentv1.PtySize{Rows: 70000, Cols: 1}}))
			wantCode(t, err, connect.CodeInvalidArgument, "size")
			_, err = client.RunProcess(ctx, connect.NewRequest(&agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{}}))
			wantCode(t, err, connect.CodeInvalidArgument, "spec.argv is empty")
			_, err = client.RunProcess(ctx, connect.NewRequest(&agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: []string{"true"}, Cwd: "/no/such"}}))
			// The directory is checked before the process limit.
			wantCode(t, err, connect.CodeInvalidArgument, "spec.cwd")
			_, err = client.RunProcess(ctx, connect.NewRequest(&agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: []string{"true"}}}))
			wantCode(t, err, connect.CodeResourceExhausted, "maximum")
			_, err = client.SendInput(ctx, connect.NewRequest(&agentv1.SendInputRequest{ProcessId: sleeper.ID(), Data: []byte("x")}))
			wantCode(t, err, connect.CodeFailedPrecondition, "stdin")
			attach, err := client.AttachProcess(ctx, connect.NewRequest(&agentv1.AttachProcessRequest{ProcessId: sleeper.ID(), StdoutOffset: 10}))
			if err == nil {
				for attach.Receive() {
					t.Errorf("attach at a bad offset sent %v", attach.Msg())
				}
				err = attach.Err()
			}
			wantCode(t, err, connect.CodeInvalidArgument, "stdout_offset")
		})
	}
}

func TestHandlerInputSignalAttach(t *testing.T) {
	m := newManager(t, Options{})
	srv := newTestServer(t, m)
	for name, c := range clients(t, srv) {
		t.Run(name, func(t *testing.T) {
			ctx := guardCtx(t)
			client := c.client
			// Start, read the started event, then disconnect: the process keeps running.
			startCtx, disconnect := context.WithCancel(ctx)
			stream, err := client.StartProcess(startCtx, connect.NewRequest(&agentv1.StartProcessRequest{
				Spec:  &agentv1.ProcessSpec{Argv: []string{"cat"}, Tag: "cat"},
				Stdin: true,
			}))
			if err != nil {
				t.Fatal(err)
			}
			if !stream.Receive() {
				t.Fatalf("no started event: %v", stream.Err())
			}
			id := stream.Msg().GetEvent().GetStarted().GetProcessId()
			disconnect()
			_ = stream.Close()

			if _, err := client.SendInput(ctx, connect.NewRequest(&agentv1.SendInputRequest{ProcessId: id, Data: []byte("abc")})); err != nil {
				t.Fatal(err)
			}
			// cat echoes the input; wait until the agent has read it.
			var found *agentv1.ProcessInfo
			for found.GetStdoutBytes() < 3 {
				list, err := client.ListProcesses(ctx, connect.NewRequest(&agentv1.ListProcessesRequest{}))
				if err != nil {
					t.Fatal(err)
				}
				found = nil
				for _, p := range list.Msg.GetProcesses() {
					if p.GetProcessId() == id {
						found = p
					}
				}
				if found == nil || found.GetTag() != "cat" || !found.GetStdinOpen() || found.GetExit() != nil || found.GetStdoutBytes() > 3 {
					t.Fatalf("ListProcesses = %v, want the running cat", list.Msg)
				}
			}
			if _, err := client.SendInput(ctx, connect.NewRequest(&agentv1.SendInputRequest{ProcessId: id, CloseStdin: true})); err != nil {
				t.Fatal(err)
			}
			attach, err := client.AttachProcess(ctx, connect.NewRequest(&agentv1.AttachProcessRequest{ProcessId: id, StdoutOffset: 1}))
			if err != nil {
				t.Fatal(err)
			}
			evs := streamEvents(t, attach)
			kinds, stdout, _, exit := summary(evs)
			if diff := cmp.Diff([]string{"attached", "output", "exited"}, kinds); diff != "" {
				t.Errorf("attach events (-want +got):\n%s", diff)
			}
			if stdout != "bc" || evs[1].GetOutput().GetOffset() != 1 || exit.GetExitCode() != 0 {
				t.Errorf("attach from 1: stdout %q, events %v", stdout, evs)
			}

			stream, err = client.StartProcess(ctx, connect.NewRequest(&agentv1.StartProcessRequest{
				Spec: &agentv1.ProcessSpec{ShellCommand: "echo ready; exec sleep 1000"},
			}))
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			for !strings.Contains(out.String(), "ready") && stream.Receive() {
				ev := stream.Msg().GetEvent()
				out.Write(ev.GetOutput().GetData())
				if st := ev.GetStarted(); st != nil {
					id = st.GetProcessId()
				}
			}
			if _, err := client.SendSignal(ctx, connect.NewRequest(&agentv1.SendSignalRequest{ProcessId: id, Signal: "SIGINT"})); err != nil {
				t.Fatal(err)
			}
			_, _, _, exit = summary(streamEvents(t, stream))
			if exit.GetSignal() != "SIGINT" || exit.GetExitCode() != 130 {
				t.Errorf("exit after SIGINT = %v", exit)
			}
		})
	}
}

func TestHandlerPTY(t *testing.T) {
	m := newManager(t, Options{})
	srv := newTestServer(t, m)
	client := clients(t, srv)["grpc-h2c"].client
	ctx := guardCtx(t)
	stream, err := client.StartProcess(ctx, connect.NewRequest(&agentv1.StartProcessRequest{
		Spec: &agentv1.ProcessSpec{ShellCommand: "stty size; read x; stty size"},
		Pty:  &agentv1.PtySize{Rows: 5, Cols: 7},
	}))
	if err != nil {
		t.Fatal(err)
	}
	var id string
	var out strings.Builder
	for !strings.Contains(out.String(), "5 7") && stream.Receive() {
		ev := stream.Msg().GetEvent()
		if o := ev.GetOutput(); o != nil {
			if o.GetStream() != agentv1.OutputStream_OUTPUT_STREAM_PTY {
				t.Errorf("PTY output arrived as %v", o.GetStream())
			}
			out.Write(o.GetData())
		}
		if st := ev.GetStarted(); st != nil {
			id = st.GetProcessId()
		}
	}
	if _, err := client.ResizePty(ctx, connect.NewRequest(&agentv1.ResizePtyRequest{ProcessId: id, Size: &agentv1.PtySize{Rows: 50, Cols: 70}})); err != nil {
		t.Fatal(err)
	}
	if _, err := client.SendInput(ctx, connect.NewRequest(&agentv1.SendInputRequest{ProcessId: id, Data: []byte("\n")})); err != nil {
		t.Fatal(err)
	}
	_, rest, _, exit := summary(streamEvents(t, stream))
	if !strings.Contains(rest, "50 70") || exit.GetExitCode() != 0 {
		t.Errorf("after resize: %q, exit %v", rest, exit)
	}
}

// A plain HTTP/1.1 POST with a JSON body, as curl sends it, runs a command.
func TestHandlerPlainJSONPost(t *testing.T) {
	m := newManager(t, Options{})
	srv := newTestServer(t, m)
	body := `{"spec": {"argv": ["echo", "hello"], "timeout": "30s"}, "maxOutputBytes": "4"}`
	req, err := http.NewRequestWithContext(guardCtx(t), http.MethodPost,
		srv.URL+agentv1connect.ProcessServiceRunProcessProcedure, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, raw)
	}
	var got struct {
		Stdout          []byte `json:"stdout"`
		StdoutTruncated bool   `json:"stdoutTruncated"`
		StdoutBytes     string `json:"stdoutBytes"`
		Exit            struct {
			ExitCode int `json:"exitCode"`
		} `json:"exit"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	if !bytes.Equal(got.Stdout, []byte("hell")) || !got.StdoutTruncated || got.StdoutBytes != "6" || got.Exit.ExitCode != 0 {
		t.Errorf("response = %s", raw)
	}
}

// With flow_control a client gets every byte however fast the process writes; the replay buffer is
// a sixteenth of the output.
func TestHandlerFlowControl(t *testing.T) {
	const size = 4 << 20
	m := newManager(t, Options{ReplayBytes: 256 << 10})
	srv := newTestServer(t, m)
	for name, c := range clients(t, srv) {
		t.Run(name, func(t *testing.T) {
			stream, err := c.client.StartProcess(guardCtx(t), connect.NewRequest(&agentv1.StartProcessRequest{
				Spec:        &agentv1.ProcessSpec{Argv: []string{"head", "-c", fmt.Sprint(size), "/dev/zero"}},
				FlowControl: true,
			}))
			if err != nil {
				t.Fatal(err)
			}
			var got, next int64
			for stream.Receive() {
				ev := stream.Msg().GetEvent()
				if d := ev.GetDropped(); d != nil {
					t.Fatalf("dropped %v", d)
				}
				if o := ev.GetOutput(); o != nil {
					if o.GetOffset() != next {
						t.Fatalf("chunk at %d, want %d", o.GetOffset(), next)
					}
					next += int64(len(o.GetData()))
					got += int64(len(o.GetData()))
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if got != size {
				t.Errorf("received %d bytes, want %d", got, size)
			}
		})
	}
}
