package apiconn

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// connServer is an HTTP/2 TLS server that records, per kind of request, the client connections
// (remote addresses) requests came on.
type connServer struct {
	*httptest.Server
	mu              sync.Mutex
	writes, watches map[string]int
}

func startConnServer(t *testing.T) *connServer {
	s := &connServer{writes: map[string]int{}, watches: map[string]int{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http.Error(w, "want HTTP/2", http.StatusHTTPVersionNotSupported)
			return
		}
		s.mu.Lock()
		if isWatch(r) {
			s.watches[r.RemoteAddr]++
		} else {
			s.writes[r.RemoteAddr]++
		}
		s.mu.Unlock()
		_, _ = io.WriteString(w, "{}")
	}))
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *connServer) config() *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	return &rest.Config{Host: s.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}, BearerToken: "tok", QPS: -1}
}

// send makes requests GETs (watches when watch) to the server through cfg's HTTP client.
func send(t *testing.T, cfg *rest.Config, requests int, watch bool) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := cfg.Host + "/api/v1/pods"
	if watch {
		url += "?watch=true"
	}
	for range requests {
		res, err := hc.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", url, res.Status)
		}
	}
}

func TestShardSpreadsRequestsOverConnections(t *testing.T) {
	for _, tc := range []struct {
		name          string
		n             int
		separateWatch bool
		// wantConns is the connections requests use; watchShared says whether watches share one
		// of them.
		wantConns   int
		watchShared bool
	}{
		{"three connections, watches on the first", 3, false, 3, true},
		{"three connections and one for watches", 3, true, 3, false},
		{"one connection and one for watches", 1, true, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startConnServer(t)
			cfg, err := Shard(s.config(), tc.n, tc.separateWatch)
			if err != nil {
				t.Fatal(err)
			}
			send(t, cfg, 4*tc.n, false)
			send(t, cfg, 3, true)
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.writes) != tc.wantConns {
				t.Errorf("requests came on %d connections, want %d: %v", len(s.writes), tc.wantConns, s.writes)
			}
			for addr, n := range s.writes {
				if n != 4 {
					t.Errorf("connection %s carried %d requests, want 4 (round-robin)", addr, n)
				}
			}
			if len(s.watches) != 1 {
				t.Fatalf("watches came on %d connections, want 1: %v", len(s.watches), s.watches)
			}
			for addr := range s.watches {
				if _, shared := s.writes[addr]; shared != tc.watchShared {
					t.Errorf("the watch connection is shared with other requests: %v, want %v", shared, tc.watchShared)
				}
			}
		})
	}
}

func TestShardKeepsOneConnectionByDefault(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443"}
	for _, n := range []int{0, 1} {
		if got, err := Shard(cfg, n, false); err != nil || got != cfg {
			t.Errorf("Shard(cfg, %d, false) = %p, %v; want cfg itself", n, got, err)
		}
	}
}

func TestShardSendsCredentials(t *testing.T) {
	var auth []string
	var mu sync.Mutex
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	s.EnableHTTP2 = true
	s.StartTLS()
	defer s.Close()
	base := (&connServer{Server: s}).config()
	cfg, err := Shard(base, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	send(t, cfg, 2, false)
	send(t, cfg, 1, true)
	mu.Lock()
	defer mu.Unlock()
	for i, a := range auth {
		if a != "Bearer tok" {
			t.Errorf("request %d: Authorization %q, want the config's bearer token once", i, a)
		}
	}
}
