package nodeapi

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kubox-dev/kubox/internal/node/nodetls"
	"github.com/kubox-dev/kubox/proto/kubox/node/v1/nodev1connect"
)

const nodeToken = "node-token-0123456789abcdef0123456789"

// spy is a server on the node's port that records every Authorization header it receives: a
// listener in the network's path, or a server impersonating kubox-node.
type spy struct {
	mu   sync.Mutex
	auth []string
}

func (s *spy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (s *spy) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth
}

func tokenFile(t *testing.T, tok string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func hostPort(t *testing.T, srv *httptest.Server) (string, int32) {
	t.Helper()
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return host, int32(n)
}

// TestTheNodeTokenNeverCrossesInClear: the controller's client of kubox-node, pointed at a server
// that is not kubox-node with the node token (plain HTTP, a certificate of another key, a
// kubox-node with another token), fails the call and never sends the token there.
func TestTheNodeTokenNeverCrossesInClear(t *testing.T) {
	otherNode := httptest.NewUnstartedServer(nil)
	otherNode.TLS = nodetls.ServerConfig(func() ([]byte, error) { return []byte(nodeToken + "-other"), nil })
	for name, tc := range map[string]struct {
		srv *httptest.Server
		url bool // configured with nodeAPIURL, as kubox dev does, rather than the node's address
	}{
		"plain HTTP at the node's address":      {srv: httptest.NewUnstartedServer(nil)},
		"plain HTTP at nodeAPIURL":              {srv: httptest.NewUnstartedServer(nil), url: true},
		"TLS with a certificate of another key": {srv: httptest.NewUnstartedServer(nil), url: true},
		"kubox-node with another node token":    {srv: otherNode, url: true},
	} {
		t.Run(name, func(t *testing.T) {
			s := &spy{}
			tc.srv.Config.Handler = s
			if strings.HasPrefix(name, "plain") {
				tc.srv.Start()
			} else {
				tc.srv.StartTLS()
			}
			defer tc.srv.Close()
			host, port := hostPort(t, tc.srv)
			o := Options{TokenFile: tokenFile(t, nodeToken), Port: port}
			if tc.url {
				o.URL = tc.srv.URL
			}
			err := New(o).DeleteSnapshot(t.Context(), host, "ns", "snap")
			if err == nil {
				t.Errorf("DeleteSnapshot at %s succeeded; want it refused", tc.srv.URL)
			}
			if got := s.seen(); len(got) > 0 {
				t.Errorf("the server got Authorization %q: the node token crossed to a server that is not kubox-node", got)
			}
		})
	}
}

// TestCallsGoToThePodsNodeWithTheToken: kubox-node at the Pod's node address, serving the key of
// the node token, gets the call over TLS, with the token; without a node address there is no call.
func TestCallsGoToThePodsNodeWithTheToken(t *testing.T) {
	node := &fakeNode{}
	mux := http.NewServeMux()
	mux.Handle(nodev1connect.NewSnapshotServiceHandler(node))
	srv := httptest.NewUnstartedServer(mux)
	srv.TLS = nodetls.ServerConfig(func() ([]byte, error) { return []byte(nodeToken), nil })
	srv.StartTLS()
	defer srv.Close()
	host, port := hostPort(t, srv)
	if err := New(Options{TokenFile: tokenFile(t, nodeToken), Port: port}).DeleteSnapshot(t.Context(), host, "ns", "snap"); err != nil {
		t.Fatalf("DeleteSnapshot at %s: %v", host, err)
	}
	if node.auth != "Bearer "+nodeToken {
		t.Errorf("kubox-node got Authorization %q, want the token file's token", node.auth)
	}
	if err := New(Options{TokenFile: tokenFile(t, nodeToken), Port: port}).DeleteSnapshot(t.Context(), "", "ns", "snap"); err == nil {
		t.Error("DeleteSnapshot with no host IP succeeded, want an error naming the missing status.hostIP")
	}
}
