package kubox

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestRouterTransportCredentials(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cert := rest.TLSClientConfig{CertData: []byte("cert"), KeyData: []byte("key")}
	cases := map[string]struct {
		cfg        *rest.Config
		token      string
		want       string
		wantNoAuth bool
	}{
		"Options.Token wins over the kubeconfig":  {cfg: &rest.Config{BearerToken: "kube"}, token: "kbx1.claim", want: "Bearer kbx1.claim"},
		"Options.Token with a client certificate": {cfg: &rest.Config{TLSClientConfig: cert}, token: "shared", want: "Bearer shared"},
		"kubeconfig bearer token":                 {cfg: &rest.Config{BearerToken: "kube"}, want: "Bearer kube"},
		"kubeconfig token file":                   {cfg: &rest.Config{BearerTokenFile: tokenFile}, want: "Bearer from-file"},
		"client certificate only":                 {cfg: &rest.Config{TLSClientConfig: cert}, wantNoAuth: true},
		"basic auth only":                         {cfg: &rest.Config{Username: "u", Password: "p"}, wantNoAuth: true},
		"no credentials":                          {cfg: &rest.Config{}, wantNoAuth: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got http.Header
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Clone() }))
			defer srv.Close()
			tc.cfg.Host = "https://kube.example:6443"
			rt, err := routerTransport(tc.cfg, tc.token, http.DefaultTransport)
			if tc.wantNoAuth {
				if !errors.Is(err, errNoBearer) || !errors.Is(err, ErrUnauthorized) {
					t.Fatalf("routerTransport error = %v; want errNoBearer, an ErrUnauthorized", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			resp, err := (&http.Client{Transport: rt}).Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if a := got.Get("Authorization"); a != tc.want {
				t.Errorf("Authorization = %q; want %q", a, tc.want)
			}
			if got.Get("Impersonate-User") != "" {
				t.Errorf("the router got impersonation headers: %v", got)
			}
		})
	}
}

func TestRouterTransportDropsImpersonation(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Clone() }))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, BearerToken: "kube", Impersonate: rest.ImpersonationConfig{UserName: "someone"}}
	rt, err := routerTransport(cfg, "", http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: rt}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got.Get("Impersonate-User") != "" || got.Get("Authorization") != "Bearer kube" {
		t.Errorf("headers = %v; want the bearer token and no impersonation", got)
	}
}

func TestRouterTransportAcceptsExecPlugins(t *testing.T) {
	cfg := &rest.Config{Host: "https://kube.example", ExecProvider: &clientcmdapi.ExecConfig{
		Command: "/bin/false", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
	if _, err := routerTransport(cfg, "", http.DefaultTransport); err != nil {
		t.Errorf("routerTransport with an exec plugin: %v; want it accepted (the plugin runs on the first request)", err)
	}
}

func TestURLs(t *testing.T) {
	cases := map[string]struct{ got, want string }{
		"router":            {sandboxRouterURL("http://127.0.0.1:18080", "team", "kubox-x7k2p"), "http://127.0.0.1:18080/sandboxes/team/kubox-x7k2p"},
		"direct IPv4":       {directURL("10.1.2.3", 7070), "http://10.1.2.3:7070"},
		"direct IPv6":       {directURL("fd00::5", 7070), "http://[fd00::5]:7070"},
		"content":           {contentURL("http://r/sandboxes/ns/a", "/tmp/a b/c#d.txt"), "http://r/sandboxes/ns/a/files/tmp/a%20b/c%23d.txt"},
		"content, relative": {contentURL("http://a:1", "src/main.py"), "http://a:1/files/src/main.py"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q; want %q", tc.got, tc.want)
			}
		})
	}
}

// TestRetryNotReady: a 503 of the router for a sandbox the SDK saw Ready (its cache catching up
// after a Resume) is sent again, body included, until it succeeds; one for a sandbox not seen
// Ready is final.
func TestRetryNotReady(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ready     bool
		wantCalls int
		wantErr   bool
	}{
		{"seen ready: sent again", true, 3, false},
		{"not seen ready: final", false, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls++
				if body, _ := io.ReadAll(r.Body); string(body) != "payload" {
					t.Errorf("request %d has body %q; want payload", calls, body)
				}
				if calls < 3 {
					w.WriteHeader(http.StatusServiceUnavailable)
					_, _ = io.WriteString(w, `{"error":"sandbox ns/s is not ready","code":503}`)
					return
				}
				_, _ = io.WriteString(w, "ok")
			}))
			defer srv.Close()
			c := &http.Client{Transport: &retryNotReady{base: &routerErrors{base: http.DefaultTransport}, ready: func() bool { return tc.ready }}}
			resp, err := c.Post(srv.URL, "text/plain", strings.NewReader("payload"))
			if err == nil {
				_ = resp.Body.Close()
			}
			if calls != tc.wantCalls || (err != nil) != tc.wantErr {
				t.Fatalf("%d requests, error %v; want %d requests, error %v", calls, err, tc.wantCalls, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, ErrNotReady) {
				t.Errorf("error %v is not ErrNotReady", err)
			}
		})
	}
}
