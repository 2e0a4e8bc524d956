package audit

import (
	"net"
	"net/http"
	"strconv"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/kubox-dev/kubox/api/contract"
	auditrec "github.com/kubox-dev/kubox/internal/audit"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestSandboxCannotRewriteItsRecord is the attack: the sandbox's agent is a process the tenant
// controls (it killed or replaced kubox-agent), answering whatever it likes. Whatever it does
// (never reading the command, claiming in its headers to be someone else, answering success for
// a refused call, cutting the connection), the router's record still names the caller the router
// authenticated, the command the caller sent, and the status the caller got.
//
// What the sandbox's answer says about the command (its exit) is in the record too, but only
// as Reported, apart from what the router saw.
func TestSandboxCannotRewriteItsRecord(t *testing.T) {
	noExit := &auditrec.Reported{Unread: "the answer holds no exit (the call failed, or the stream ended before the command did)"}
	for name, tc := range map[string]struct {
		// fake answers the router's request in place of kubox-agent.
		fake http.HandlerFunc
		// expectContinue sends the call with "Expect: 100-continue": the router forwards its
		// body only once the sandbox asks for it.
		expectContinue bool
		wantStatus     int
		wantError      bool
		// wantReported is what the record says the sandbox reported: only ever in Reported.
		wantReported *auditrec.Reported
	}{
		"answers before the command is sent to it": {
			fake: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/proto")
				w.WriteHeader(http.StatusOK)
			},
			expectContinue: true, wantStatus: http.StatusOK, wantReported: noExit,
		},
		"answers success without reading the command": {
			fake: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/proto")
				w.WriteHeader(http.StatusOK)
			},
			wantStatus: http.StatusOK, wantReported: noExit,
		},
		"reports the exit code it likes": {
			fake: func(w http.ResponseWriter, _ *http.Request) {
				b, _ := proto.Marshal(&agentv1.RunProcessResponse{Exit: &agentv1.ProcessExit{ExitCode: 0}})
				w.Header().Set("Content-Type", "application/proto")
				_, _ = w.Write(b)
			},
			wantStatus: http.StatusOK, wantReported: &auditrec.Reported{ExitCode: new(int32)},
		},
		"claims another principal, sandbox and command in its answer": {
			fake: func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range map[string]string{"X-Kubox-Principal": "system:anonymous", "X-Sandbox-Id": "other",
					"X-Audit-Command": "true", "Content-Type": "application/json"} {
					w.Header().Set(k, v)
				}
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write([]byte(`{"principal":"system:anonymous","operation":{"command":["true"]},"status":200}` + "\n"))
			},
			wantStatus: http.StatusOK, wantReported: noExit,
		},
		"reads the command, then cuts the connection without answering": {
			fake: func(w http.ResponseWriter, r *http.Request) {
				buf := make([]byte, 1<<10)
				_, _ = r.Body.Read(buf)
				c, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					_ = c.Close()
				}
			},
			wantStatus: http.StatusBadGateway, wantError: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			ns := env.NewNamespace(t)
			sink := &memorySink{}
			url := startAuditRouter(t, ns, sink)
			startFakeAgent(t, ns, "box", tc.fake)
			tok, principal := serviceAccount(t, ns, "mallory", "box")
			procs := agentv1connect.NewProcessServiceClient(contract.BearerClient(tok), url+"/sandboxes/"+ns+"/box")
			req := connect.NewRequest(&agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: []string{"rm", "-rf", "/data"}}})
			if tc.expectContinue {
				req.Header().Set("Expect", "100-continue")
			}
			_, err := procs.RunProcess(t.Context(), req)
			t.Logf("RunProcess through the router: %v", err)

			got := sink.waitFor(t, "RunProcess", func(r auditrec.Record) bool { return r.Phase == "close" })
			want := auditrec.Record{Source: "router", Phase: "close", Principal: principal, Namespace: ns, Sandbox: "box", Route: "agent",
				Method: http.MethodPost, Path: "/kubox.agent.v1.ProcessService/RunProcess", Status: tc.wantStatus, Error: got.Error, Reported: tc.wantReported,
				Operation: &auditrec.Operation{Kind: "exec", Procedure: "/kubox.agent.v1.ProcessService/RunProcess", Command: []string{"rm", "-rf", "/data"}}}
			if diff := cmp.Diff(want, got, ignoreMeasured); diff != "" {
				t.Errorf("the router's record (-want +got):\n%s", diff)
			}
			if tc.wantError && got.Error == "" {
				t.Errorf("the record of a request the sandbox never answered has no error")
			}
		})
	}
}

// startFakeAgent creates Sandbox name in ns whose agent port is served by fake on 127.0.0.1.
func startFakeAgent(t *testing.T, ns, name string, fake http.HandlerFunc) {
	t.Helper()
	port := framework.FreePort(t)
	l, err := net.Listen("tcp", net.JoinHostPort(framework.LoopbackIP, strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: fake}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	markReady(t, createSandbox(t, ns, name, port))
}
