package audit

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kubox-dev/kubox/api/contract"
	auditrec "github.com/kubox-dev/kubox/internal/audit"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// ignoreMeasured leaves out of comparisons what a test cannot know in advance.
var ignoreMeasured = cmpopts.IgnoreFields(auditrec.Record{}, "Time", "DurationSeconds", "BytesIn", "BytesOut", "Port")

// TestExecFileAndTerminalAreRecorded runs a command, reads a file and opens a terminal through
// the router with a ServiceAccount's token: each has a record naming the ServiceAccount, the
// sandbox, what was done, and the status the client got; the terminal has an opening record too.
func TestExecFileAndTerminalAreRecorded(t *testing.T) {
	ns := env.NewNamespace(t)
	sink := &memorySink{}
	url := startAuditRouter(t, ns, sink)
	dir := startAgentSandbox(t, ns, "box")
	tok, principal := serviceAccount(t, ns, "alice", "box")
	base := url + "/sandboxes/" + ns + "/box"
	procs := agentv1connect.NewProcessServiceClient(contract.BearerClient(tok), base)

	res, err := procs.RunProcess(t.Context(), connect.NewRequest(&agentv1.RunProcessRequest{
		Spec: &agentv1.ProcessSpec{Argv: []string{"echo", "hello audit"}}}))
	if err != nil {
		t.Fatalf("RunProcess through the router: %v", err)
	}
	if got := string(res.Msg.GetStdout()); got != "hello audit\n" {
		t.Fatalf("RunProcess printed %q, want %q", got, "hello audit\n")
	}
	want := auditrec.Record{Source: "router", Phase: "close", Principal: principal, Namespace: ns, Sandbox: "box", Route: "agent",
		Method: http.MethodPost, Path: "/kubox.agent.v1.ProcessService/RunProcess", Status: http.StatusOK,
		Operation: &auditrec.Operation{Kind: "exec", Procedure: "/kubox.agent.v1.ProcessService/RunProcess", Command: []string{"echo", "hello audit"}},
		Reported:  &auditrec.Reported{ExitCode: new(int32)}}
	got := sink.waitFor(t, "RunProcess", func(r auditrec.Record) bool { return r.Path == want.Path })
	if diff := cmp.Diff(want, got, ignoreMeasured); diff != "" {
		t.Errorf("record of RunProcess (-want +got):\n%s", diff)
	}
	if got.BytesIn == 0 || got.BytesOut == 0 {
		t.Errorf("record of RunProcess counts %d bytes in and %d out; want both > 0", got.BytesIn, got.BytesOut)
	}

	// A failing command: the record carries the exit status the agent reported.
	if _, err := procs.RunProcess(t.Context(), connect.NewRequest(&agentv1.RunProcessRequest{
		Spec: &agentv1.ProcessSpec{Argv: []string{"sh", "-c", "exit 7"}}})); err != nil {
		t.Fatalf("RunProcess through the router: %v", err)
	}
	failed := sink.waitFor(t, "RunProcess of exit 7", func(r auditrec.Record) bool {
		return r.Operation != nil && len(r.Operation.Command) == 3 && r.Operation.Command[2] == "exit 7"
	})
	if r := failed.Reported; r == nil || r.ExitCode == nil || *r.ExitCode != 7 {
		t.Errorf("record of `sh -c 'exit 7'` reports %+v, want exit code 7", r)
	}

	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("secret plans"), 0o600); err != nil {
		t.Fatal(err)
	}
	body := getFile(t, tok, base+"/files"+filepath.Join(dir, "notes.txt"))
	if body != "secret plans" {
		t.Fatalf("GET /files/ through the router read %q", body)
	}
	filePath := filepath.Join(dir, "notes.txt")
	want = auditrec.Record{Source: "router", Phase: "close", Principal: principal, Namespace: ns, Sandbox: "box", Route: "agent",
		Method: http.MethodGet, Path: "/files" + filePath, Status: http.StatusOK,
		Operation: &auditrec.Operation{Kind: "file", Action: "read", Path: filePath}}
	got = sink.waitFor(t, "the file read", func(r auditrec.Record) bool { return r.Path == want.Path })
	if diff := cmp.Diff(want, got, ignoreMeasured); diff != "" {
		t.Errorf("record of the file read (-want +got):\n%s", diff)
	}
	if got.BytesOut != int64(len("secret plans")) {
		t.Errorf("record of the file read counts %d bytes out; want %d", got.BytesOut, len("secret plans"))
	}

	runTerminal(t, procs)
	for _, phase := range []string{"open", "close"} {
		got := sink.waitFor(t, "the terminal's "+phase, func(r auditrec.Record) bool {
			return r.Operation != nil && r.Operation.Kind == "pty" && r.Phase == phase
		})
		if diff := cmp.Diff([]string{"sh", "-c", "echo from a terminal"}, got.Operation.Command); diff != "" || got.Principal != principal {
			t.Errorf("record of the terminal's %s: principal %q, command (-want +got):\n%s", phase, got.Principal, diff)
		}
	}
}

// getFile reads url with tok.
func getFile(t *testing.T, tok, url string) string {
	t.Helper()
	res, err := contract.BearerClient(tok).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %q %v", url, res.StatusCode, b, err)
	}
	return string(b)
}

// runTerminal runs a command on a terminal (StartProcess with a pty) to its exit.
func runTerminal(t *testing.T, procs agentv1connect.ProcessServiceClient) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream, err := procs.StartProcess(ctx, connect.NewRequest(&agentv1.StartProcessRequest{
		Spec: &agentv1.ProcessSpec{ShellCommand: "echo from a terminal"}, Pty: &agentv1.PtySize{Rows: 24, Cols: 80}}))
	if err != nil {
		t.Fatalf("StartProcess with a pty: %v", err)
	}
	defer func() { _ = stream.Close() }()
	for stream.Receive() {
		if stream.Msg().GetEvent().GetExited() != nil {
			return
		}
	}
	t.Fatalf("the terminal's stream ended without an exit: %v", stream.Err())
}
