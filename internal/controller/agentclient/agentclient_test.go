package agentclient

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

func TestEndpoint(t *testing.T) {
	key := []byte(strings.Repeat("k", contract.MinAgentTokenKeyBytes))
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r.Header.Get("Authorization") }))
	defer srv.Close()
	host, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")

	sb := &sandboxv1beta1.Sandbox{}
	sb.Name, sb.UID = "sb", "uid-1"
	if _, _, err := New(key).Endpoint(sb); err == nil || !strings.Contains(err.Error(), "no agent port or Pod IP") {
		t.Errorf("a sandbox without status.agent: %v; want an error saying so", err)
	}
	sb.Status.PodIPs = []string{host}
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	sb.Status.Agent = &sandboxv1beta1.AgentStatus{Port: int32(n)}
	if _, _, err := New(nil).Endpoint(sb); err == nil || !strings.Contains(err.Error(), "agent.tokenKeyFile") {
		t.Errorf("no key: %v; want an error naming agent.tokenKeyFile", err)
	}
	hc, base, err := New(key).Endpoint(sb)
	if err != nil || base != srv.URL {
		t.Fatalf("Endpoint = %q, %v; want %q", base, err, srv.URL)
	}
	res, err := hc.Get(base + "/x")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if want := "Bearer " + contract.DeriveAgentToken(key, sb.UID); got != want {
		t.Errorf("Authorization %q; want the sandbox's agent token %q", got, want)
	}
}
