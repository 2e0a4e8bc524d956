package audit

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"

	auditrec "github.com/kubox-dev/kubox/internal/audit"
	envdprocess "github.com/kubox-dev/kubox/proto/e2b/envd/process"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
)

func code(c int32) *int32 { return &c }

// TestRecordsTheReportedExit runs exec calls through a recorder to a sandbox that answers in
// each framing the agent and envd use: the record carries the exit the answer reports, marked
// as the sandbox's; the client gets the answer byte for byte; an answer the router cannot read
// says why instead.
func TestRecordsTheReportedExit(t *testing.T) {
	bigOut := bytes.Repeat([]byte("x"), 3<<20) // far more than the router keeps
	runAnswer := marshal(t, &agentv1.RunProcessResponse{ProcessId: "p1", Pid: 7, Stdout: bigOut,
		Exit: &agentv1.ProcessExit{ExitCode: 137, Signal: "SIGKILL"}})
	runJSON, err := protojson.Marshal(&agentv1.RunProcessResponse{Stdout: []byte("hi"), Exit: &agentv1.ProcessExit{ExitCode: 3}})
	if err != nil {
		t.Fatal(err)
	}
	event := func(e *agentv1.ProcessEvent) []byte { return marshal(t, &agentv1.StartProcessResponse{Event: e}) }
	stream := bytes.Join([][]byte{
		envelope(0, event(&agentv1.ProcessEvent{Event: &agentv1.ProcessEvent_Started{Started: &agentv1.ProcessStarted{ProcessId: "p"}}})),
		envelope(0, event(&agentv1.ProcessEvent{Event: &agentv1.ProcessEvent_Output{Output: &agentv1.ProcessOutput{Data: bigOut[:64<<10]}}})),
		envelope(0, event(&agentv1.ProcessEvent{Event: &agentv1.ProcessEvent_Exited{Exited: &agentv1.ProcessExit{ExitCode: 2}}})),
		envelope(flagEndStream, []byte("{}")),
	}, nil)
	envdEnd := marshal(t, &envdprocess.StartResponse{Event: &envdprocess.ProcessEvent{Event: &envdprocess.ProcessEvent_End{
		End: &envdprocess.ProcessEvent_EndEvent{ExitCode: 1, Exited: true}}}})
	envdStream := append(envelope(0, marshal(t, &envdprocess.StartResponse{})), envelope(flagCompressed, gzipped(t, envdEnd))...)
	for name, tc := range map[string]struct {
		route, path, contentType, encoding string
		answer                             []byte
		want                               *auditrec.Reported
	}{
		"RunProcess, proto, output larger than the router keeps": {route: auditrec.RouteAgent, path: "/kubox.agent.v1.ProcessService/RunProcess",
			contentType: "application/proto", answer: runAnswer, want: &auditrec.Reported{ExitCode: code(137), Signal: "SIGKILL"}},
		"RunProcess, JSON": {route: auditrec.RouteAgent, path: "/kubox.agent.v1.ProcessService/RunProcess",
			contentType: "application/json", answer: runJSON, want: &auditrec.Reported{ExitCode: code(3)}},
		"RunProcess, gzip": {route: auditrec.RouteAgent, path: "/kubox.agent.v1.ProcessService/RunProcess",
			contentType: "application/proto", encoding: "gzip", answer: gzipped(t, marshal(t, &agentv1.RunProcessResponse{Exit: &agentv1.ProcessExit{}})),
			want: &auditrec.Reported{ExitCode: code(0)}},
		"RunProcess, cut short": {route: auditrec.RouteAgent, path: "/kubox.agent.v1.ProcessService/RunProcess",
			contentType: "application/proto", answer: runAnswer[:1000], want: &auditrec.Reported{Unread: "the answer's message is cut short"}},
		"RunProcess, no exit": {route: auditrec.RouteAgent, path: "/kubox.agent.v1.ProcessService/RunProcess",
			contentType: "application/proto", answer: marshal(t, &agentv1.RunProcessResponse{Pid: 1}),
			want: &auditrec.Reported{Unread: "the answer holds no exit (the call failed, or the stream ended before the command did)"}},
		"StartProcess, Connect stream": {route: auditrec.RouteAgent, path: "/kubox.agent.v1.ProcessService/StartProcess",
			contentType: "application/connect+proto", answer: stream, want: &auditrec.Reported{ExitCode: code(2)}},
		"envd Start, a compressed end": {route: auditrec.RouteEnvd, path: "/process.Process/Start",
			contentType: "application/connect+proto", encoding: "gzip", answer: envdStream, want: &auditrec.Reported{ExitCode: code(1)}},
		"envd Start, compressed with what the router does not read": {route: auditrec.RouteEnvd, path: "/process.Process/Start",
			contentType: "application/connect+proto", encoding: "br", answer: envelope(flagCompressed, []byte("????")),
			want: &auditrec.Reported{Unread: `the answer's message is compressed with "br", which the router does not read`}},
	} {
		t.Run(name, func(t *testing.T) {
			sb := newSandbox(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				switch {
				case tc.encoding != "" && strings.HasPrefix(tc.contentType, "application/connect+"):
					w.Header().Set("Connect-Content-Encoding", tc.encoding)
				case tc.encoding != "":
					w.Header().Set("Content-Encoding", tc.encoding)
				}
				// In pieces, as a stream arrives: the reader must carry state across writes.
				for b := tc.answer; len(b) > 0; {
					n := min(len(b), 3+len(b)%7)
					_, _ = w.Write(b[:n])
					b = b[n:]
				}
			})
			q := &memoryQueue{}
			srv := routerFor(t, New(q, nil), tc.route, sb.srv.URL)
			req, err := http.NewRequest(http.MethodPost, srv.URL+tc.path, strings.NewReader(""))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", tc.contentType)
			req.Header.Set("Accept-Encoding", "gzip") // asked for: the client gets the bytes as sent
			res, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if !bytes.Equal(got, tc.answer) {
				t.Errorf("the client got %d bytes, not the sandbox's %d", len(got), len(tc.answer))
			}
			recs := q.all()
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1: %+v", len(recs), recs)
			}
			if diff := cmp.Diff(tc.want, recs[0].Reported); diff != "" {
				t.Errorf("reported (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFieldScannerKeepsOnlyItsField: the unary scanner keeps the exit field whatever else the
// message holds, in any order and split anywhere, and refuses a malformed message.
func TestFieldScannerKeepsOnlyItsField(t *testing.T) {
	exit := marshal(t, &agentv1.ProcessExit{ExitCode: 9})
	msg := marshal(t, &agentv1.RunProcessResponse{ProcessId: "p", Pid: 3, Stdout: []byte("out"), StdoutBytes: 3, Exit: &agentv1.ProcessExit{ExitCode: 9}})
	for split := range len(msg) {
		f := fieldScanner{field: 9}
		f.write(msg[:split])
		f.write(msg[split:])
		if f.unread() != "" || !bytes.Equal(f.value, exit) {
			t.Fatalf("split at %d: value %x unread %q, want %x", split, f.value, f.unread(), exit)
		}
	}
	f := fieldScanner{field: 9}
	f.write([]byte{0x0f}) // wire type 7 does not exist
	if got := f.unread(); got != "the answer's message is malformed" {
		t.Errorf("unread = %q for a malformed message", got)
	}
}
