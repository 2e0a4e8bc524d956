package mcpserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubox-dev/kubox/internal/router/claimtoken"
)

// forge returns a token shaped like tok, with tok's payload (its namespace, claim and UID) and a
// signature the attacker made up: what anyone who has seen a claim's name and UID can write.
func forge(t *testing.T, tok string) string {
	t.Helper()
	payload, _, ok := strings.Cut(strings.TrimPrefix(tok, claimtoken.Prefix), ".")
	if !ok {
		t.Fatalf("%q is not a claim token", tok)
	}
	return claimtoken.Prefix + payload + ".Zm9yZ2VkLXNpZ25hdHVyZQ"
}

// mcpPost sends one JSON-RPC message to the MCP endpoint with token (and session, when not "").
func mcpPost(t *testing.T, url, token, session, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

// TestForgedClaimTokenGetsNoSession: a string shaped like a claim token, carrying another
// caller's claim (namespace, name, UID) in its payload under a made-up signature, is not that
// caller: with the victim's session ID it reaches neither the session nor what it holds, and it
// is a different identity from the genuine token. (Issue #36, hole 14: the server took the
// unverified payload as the session's identity.)
func TestForgedClaimTokenGetsNoSession(t *testing.T) {
	s := New(Config{Namespace: "team-a", RouterURL: "http://127.0.0.1:1", API: &rest.Config{Host: "http://127.0.0.1:1"}})
	t.Cleanup(func() { s.Close(t.Context()) })
	h, err := s.Handler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	genuine, err := claimtoken.Mint([]byte(strings.Repeat("k", 48)), claimtoken.Claims{Namespace: "team-a", Claim: "victim",
		UID: "1f0e7c1a-0000-4000-8000-000000000001", Expiry: time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	forged := forge(t, genuine)

	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"victim","version":"1"}}}`
	res := mcpPost(t, srv.URL, genuine, "", initialize)
	session := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("the victim's initialize answered %d with session %q; want 200 and a session", res.StatusCode, session)
	}
	mcpPost(t, srv.URL, genuine, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	for name, body := range map[string]string{
		"tools/list": `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		"tools/call": `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"id"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			res := mcpPost(t, srv.URL, forged, session, body)
			if res.StatusCode < 400 {
				var msg json.RawMessage
				_ = json.NewDecoder(res.Body).Decode(&msg)
				t.Errorf("a forged token with the victim's claim in its payload used the victim's session: %s answered %d %s",
					name, res.StatusCode, msg)
			}
		})
	}

	tiGenuine, err := s.verify(t.Context(), genuine, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tiForged, err := s.verify(t.Context(), forged, nil); err == nil && tiForged.UserID == tiGenuine.UserID {
		t.Errorf("the forged token is the same identity as the genuine one (%q)", tiForged.UserID)
	}
}
