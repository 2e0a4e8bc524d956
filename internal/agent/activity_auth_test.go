package agent

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kubox-dev/kubox/api/contract"
)

// TestRefusedRequestsAreNoActivity: anything that reaches one of the agent's ports without the
// sandbox's agent token is refused (401) and does not keep the sandbox awake: the last request
// time ActivityService reports stays where it was. The same request with the token moves it.
// (Issue #36, hole 10: a stranger's requests kept an idle sandbox from ever suspending.)
func TestRefusedRequestsAreNoActivity(t *testing.T) {
	a, _, _ := startAgent(t, func(c *Config) {
		c.E2BPort, c.SandboxdGRPCPort, c.SandboxdRESTPort, c.CodeInterpreterPort = 1, 1, 1, 1 // non-zero: build every port's server
	})
	if len(a.servers) != 6 {
		t.Fatalf("the agent built %d servers; want the main, compatibility, sandboxd gRPC, sandboxd REST, E2B and code-interpreter ones", len(a.servers))
	}
	for name, c := range map[string]struct {
		server       int
		method, path string
		// header is how the port takes the token.
		header, scheme string
	}{
		"main port: ProcessService": {server: 0, method: http.MethodPost, path: "/agent.v1.ProcessService/RunProcess",
			header: contract.AuthorizationHeader, scheme: "Bearer "},
		"main port: file contents": {server: 0, method: http.MethodGet, path: "/files/x", header: contract.AuthorizationHeader, scheme: "Bearer "},
		"compatibility port":       {server: 1, method: http.MethodPost, path: "/execute", header: contract.AuthorizationHeader, scheme: "Bearer "},
		"sandboxd gRPC port":       {server: 2, method: http.MethodPost, path: "/sandboxd.v1.Process/Execute", header: contract.AuthorizationHeader, scheme: "Bearer "},
		"sandboxd REST port":       {server: 3, method: http.MethodGet, path: "/v1/files/x", header: contract.AuthorizationHeader, scheme: "Bearer "},
		"E2B port":                 {server: 4, method: http.MethodGet, path: "/envs", header: contract.E2BAccessTokenHeader},
		"code-interpreter port":    {server: 5, method: http.MethodGet, path: "/contexts", header: contract.E2BAccessTokenHeader},
	} {
		t.Run(name, func(t *testing.T) {
			h := a.servers[c.server].Handler
			before, _ := a.activity.Snapshot()
			for _, tok := range []string{"", "not-the-agent-token-but-long-enough-to-be-one"} {
				req := httptest.NewRequest(c.method, c.path, nil)
				if tok != "" {
					req.Header.Set(c.header, c.scheme+tok)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusUnauthorized {
					t.Fatalf("%s %s with token %q answered %d; want 401", c.method, c.path, tok, rec.Code)
				}
				if last, open := a.activity.Snapshot(); !last.Equal(before) || open != 0 {
					t.Fatalf("a refused %s %s moved the last request time from %v to %v (%d open): an unauthenticated "+
						"client keeps the sandbox awake", c.method, c.path, before, last, open)
				}
			}
			req := httptest.NewRequest(c.method, c.path, nil)
			req.Header.Set(c.header, c.scheme+testToken)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code == http.StatusUnauthorized {
				t.Fatalf("%s %s with the agent token answered 401", c.method, c.path)
			}
			if last, _ := a.activity.Snapshot(); !last.After(before) {
				t.Errorf("an authenticated %s %s did not move the last request time (%v)", c.method, c.path, last)
			}
		})
	}
}
