package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/types/known/emptypb"

	processv1 "github.com/kubox-dev/kubox/proto/process/v1"
	"github.com/kubox-dev/kubox/proto/process/v1/processv1connect"
	watcherv1 "github.com/kubox-dev/kubox/proto/watcher/v1"
)

// Run checks tg against what agent-sandbox's SDKs do with sandboxd, one subtest per use.
func Run(t *testing.T, tg *Target) {
	for name, check := range map[string]func(*testing.T, *Target){
		"Execute":                     executeRunsACommand,
		"Start, stdin and a signal":   startStreamsStdinAndASignalEndsIt,
		"Start and stdin EOF":         stdinEOF,
		"PTY resize":                  ptyResize,
		"files":                       filesWriteReadListDelete,
		"health and metadata":         healthAndMetadata,
		"WatchDir sees an upload":     watchDirSeesAnUpload,
		"Execute of a missing binary": executeMissingProgram,
		"gRPC-Web over HTTP/1.1":      grpcWebExecute,
	} {
		t.Run(name, func(t *testing.T) { check(t, tg) })
	}
}

func executeRunsACommand(t *testing.T, tg *Target) {
	res := &processv1.ExecuteResponse{}
	tg.invoke(t, methodExecute, &processv1.ExecuteRequest{Config: &processv1.ProcessConfig{
		Command: []string{"sh", "-c", `echo "$WHO"; pwd; echo oops >&2; exit 7`}, EnvVars: map[string]string{"WHO": "agent-sandbox"},
	}}, res)
	if got, want := string(res.GetStdout()), "agent-sandbox\n"+tg.Root+"\n"; got != want {
		t.Errorf("stdout %q, want %q (the variable, then the sandbox root as the working directory)", got, want)
	}
	if string(res.GetStderr()) != "oops\n" || res.GetExitCode() != 7 {
		t.Errorf("stderr %q, exit code %d; want %q and 7", res.GetStderr(), res.GetExitCode(), "oops\n")
	}
}

// headerTransport adds headers to every request and speaks HTTP/1.1 only, as a browser's
// gRPC-Web client does through most proxies.
type headerTransport http.Header

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header[k] = v
	}
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetHTTP1(true)
	defer tr.CloseIdleConnections()
	return tr.RoundTrip(r)
}

func grpcWebExecute(t *testing.T, tg *Target) {
	c := processv1connect.NewProcessServiceClient(&http.Client{Transport: headerTransport(tg.GRPCHeader)}, tg.GRPCURL, connect.WithGRPCWeb())
	res, err := c.Execute(guardCtx(t), connect.NewRequest(&processv1.ExecuteRequest{Config: &processv1.ProcessConfig{
		Command: []string{"echo", "from a browser"}}}))
	if err != nil {
		t.Fatalf("Execute over gRPC-Web: %v", err)
	}
	if string(res.Msg.GetStdout()) != "from a browser\n" || res.Msg.GetExitCode() != 0 {
		t.Errorf("Execute over gRPC-Web: stdout %q, exit %d", res.Msg.GetStdout(), res.Msg.GetExitCode())
	}
}

func executeMissingProgram(t *testing.T, tg *Target) {
	err := tg.Conn.Invoke(guardCtx(t), methodExecute, &processv1.ExecuteRequest{Config: &processv1.ProcessConfig{
		Command: []string{"no-such-program-kubox"}}}, &processv1.ExecuteResponse{})
	if err == nil || !strings.Contains(err.Error(), "no-such-program-kubox") {
		t.Errorf("Execute of a missing program: %v, want an error naming it", err)
	}
}

func startStreamsStdinAndASignalEndsIt(t *testing.T, tg *Target) {
	// The shell echoes its input, then waits for a signal; SIGTERM ends it with 128+15.
	p := tg.start(t, guardCtx(t), &processv1.StartRequest{Config: &processv1.ProcessConfig{
		Command: []string{"sh", "-c", `echo ready >&2; read line; echo "got $line"; exec sleep 30`},
	}})
	tg.invoke(t, methodWriteStdin, &processv1.WriteStdinRequest{ProcessId: p.id,
		Payload: &processv1.WriteStdinRequest_Input{Input: []byte("hello\n")}}, &processv1.WriteStdinResponse{})
	p.readUntil(t, "got hello")
	tg.invoke(t, methodSendSignal, &processv1.SendSignalRequest{ProcessId: p.id, Signal: processv1.Signal_SIGNAL_SIGTERM},
		&processv1.SendSignalResponse{})
	_, stderr, code := p.finish(t)
	if code != 128+15 {
		t.Errorf("exit code %d after SIGTERM, want 143 (128+15)", code)
	}
	if stderr != "ready\n" {
		t.Errorf("stderr %q, want %q", stderr, "ready\n")
	}
}

func stdinEOF(t *testing.T, tg *Target) {
	p := tg.start(t, guardCtx(t), &processv1.StartRequest{Config: &processv1.ProcessConfig{Command: []string{"wc", "-c"}}})
	tg.invoke(t, methodWriteStdin, &processv1.WriteStdinRequest{ProcessId: p.id,
		Payload: &processv1.WriteStdinRequest_Input{Input: []byte("12345")}}, &processv1.WriteStdinResponse{})
	tg.invoke(t, methodWriteStdin, &processv1.WriteStdinRequest{ProcessId: p.id,
		Payload: &processv1.WriteStdinRequest_Eof{Eof: &emptypb.Empty{}}}, &processv1.WriteStdinResponse{})
	stdout, _, code := p.finish(t)
	if strings.TrimSpace(stdout) != "5" || code != 0 {
		t.Errorf("wc -c printed %q and exited %d; want 5 and 0", stdout, code)
	}
}

func ptyResize(t *testing.T, tg *Target) {
	p := tg.start(t, guardCtx(t), &processv1.StartRequest{
		Config: &processv1.ProcessConfig{Command: []string{"sh", "-c", "stty size; read line; stty size"}},
		Pty:    &processv1.PTY{Cols: 90, Rows: 20},
	})
	p.readUntil(t, "20 90")
	tg.invoke(t, methodResizeTTY, &processv1.ResizeTTYRequest{ProcessId: p.id, Cols: 132, Rows: 43}, &processv1.ResizeTTYResponse{})
	tg.invoke(t, methodWriteStdin, &processv1.WriteStdinRequest{ProcessId: p.id,
		Payload: &processv1.WriteStdinRequest_Input{Input: []byte("\n")}}, &processv1.WriteStdinResponse{})
	stdout, _, code := p.finish(t)
	if !strings.Contains(stdout, "43 132") || code != 0 {
		t.Errorf("after ResizeTTY the terminal printed %q and exited %d; want the size 43 132 and 0", stdout, code)
	}
}

// listing is sandboxd's DirectoryListing.
type listing struct {
	Path    string `json:"path"`
	Entries []struct {
		Name string `json:"name"`
		Size int64  `json:"size"`
		Type string `json:"type"`
		Mode string `json:"mode"`
	} `json:"entries"`
}

func filesWriteReadListDelete(t *testing.T, tg *Target) {
	tg.put(t, "src/main.py", "print('hi')\n")
	if code, _, body := tg.do(t, http.MethodPut, "/v1/files/src/run.sh?mode=0755", strings.NewReader("#!/bin/sh\n")); code != http.StatusNoContent {
		t.Fatalf("PUT with mode: %d %s", code, body)
	}
	// A multipart upload (the "file" part), as browsers and some SDKs send it.
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, err := mw.CreateFormFile("file", "data.bin")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write([]byte{0, 1, 2, 3})
	_ = mw.Close()
	if code, _, body := tg.do(t, http.MethodPut, "/v1/files/src/data.bin", &form, "Content-Type", mw.FormDataContentType()); code != http.StatusNoContent {
		t.Fatalf("multipart PUT: %d %s", code, body)
	}

	if code, _, body := tg.do(t, http.MethodGet, "/v1/files/src%2Fmain.py", nil); code != http.StatusOK || string(body) != "print('hi')\n" {
		t.Errorf("GET src%%2Fmain.py (the SDKs encode the slashes): %d %q", code, body)
	}
	if mode, err := tg.fileMode(t, "src/run.sh"); err != nil || mode != 0o755 {
		t.Errorf("src/run.sh: %v, mode %v; want 0755", err, mode)
	}
	code, _, body := tg.do(t, http.MethodGet, "/v1/files/src", nil)
	if code != http.StatusOK {
		t.Fatalf("GET src: %d %s", code, body)
	}
	var l listing
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatalf("GET src: %v in %s", err, body)
	}
	type entry struct {
		Name, Type string
		Size       int64
	}
	var got []entry
	for _, e := range l.Entries {
		got = append(got, entry{e.Name, e.Type, e.Size})
	}
	want := []entry{{"data.bin", "file", 4}, {"main.py", "file", 12}, {"run.sh", "file", 10}}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b entry) bool { return a.Name < b.Name })); diff != "" {
		t.Errorf("listing of src (-want +got):\n%s", diff)
	}

	if code, _, _ := tg.do(t, http.MethodHead, "/v1/files/src/main.py", nil); code != http.StatusOK {
		t.Errorf("HEAD src/main.py: %d, want 200", code)
	}
	if code, _, body := tg.do(t, http.MethodDelete, "/v1/files/src", nil); code != http.StatusConflict {
		t.Errorf("DELETE of a non-empty directory without recursive: %d %s, want 409", code, body)
	}
	if code, _, body := tg.do(t, http.MethodDelete, "/v1/files/src?recursive=true", nil); code != http.StatusNoContent {
		t.Errorf("DELETE recursive: %d %s, want 204", code, body)
	}
	if code, _, _ := tg.do(t, http.MethodHead, "/v1/files/src/main.py", nil); code != http.StatusNotFound {
		t.Errorf("HEAD after DELETE: %d, want 404", code)
	}
	if code, _, body := tg.do(t, http.MethodGet, "/v1/files/..%2F..%2Fetc%2Fpasswd", nil); code != http.StatusForbidden {
		t.Errorf("GET outside the root: %d %s, want 403", code, body)
	}
}

func healthAndMetadata(t *testing.T, tg *Target) {
	code, _, body := tg.do(t, http.MethodGet, "/v1/health", nil)
	var h struct {
		Status string `json:"status"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &h) != nil || h.Status != "ok" {
		t.Errorf("GET /v1/health: %d %s, want 200 {\"status\":\"ok\"}", code, body)
	}
	if code, _, body := tg.do(t, http.MethodGet, "/v1/metadata", nil); code != http.StatusOK || !json.Valid(body) {
		t.Errorf("GET /v1/metadata: %d %s, want 200 and JSON", code, body)
	}
}

func watchDirSeesAnUpload(t *testing.T, tg *Target) {
	tg.put(t, "logs/.keep", "")
	ctx, cancel := context.WithCancel(guardCtx(t))
	defer cancel()
	stream, err := tg.Conn.NewStream(ctx, serverStream, methodWatchDir)
	if err != nil {
		t.Fatalf("WatchDir: %v", err)
	}
	if err := stream.SendMsg(&watcherv1.WatchDirRequest{Path: "logs", Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	events := make(chan *watcherv1.FileEvent)
	go func() {
		defer close(events)
		for {
			ev := &watcherv1.FileEvent{}
			if err := stream.RecvMsg(ev); err != nil {
				if !errors.Is(err, io.EOF) && ctx.Err() == nil {
					t.Errorf("WatchDir stream: %v", err)
				}
				return
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() {
		cancel()
		for range events {
		}
	}()
	// A watch reports what happens after it is in place, and has no "started" event: upload until
	// the upload is seen.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		tg.put(t, "logs/app.log", "line\n")
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the watch ended before it reported the upload")
			}
			if ev.GetPath() == "logs/app.log" && (ev.GetType() == watcherv1.FileEventType_FILE_EVENT_TYPE_CREATE ||
				ev.GetType() == watcherv1.FileEventType_FILE_EVENT_TYPE_WRITE) {
				return
			}
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal("no event for logs/app.log")
		}
	}
}
