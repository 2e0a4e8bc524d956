package router

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router"
)

// onlyReader hides a body's length, so the client sends it chunked.
type onlyReader struct{ io.Reader }

func TestBodyLimit(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, func(c *router.Config) { withSharedToken(c); c.MaxRequestBodyBytes = 1024 })
	app := startRecordingServer(t)
	sb := createSandbox(t, ns, "box", &sandboxv1beta1.AgentSpec{Port: ptrInt32(app.port())})
	markReady(t, sb, "127.0.0.1")
	url := rt.url + "/sandboxes/" + ns + "/box/upload"
	eventuallyStatus(t, http.StatusOK, http.MethodPost, url, strings.Repeat("a", 1024), bearer(sharedToken))

	res := do(t, http.MethodPost, url, strings.Repeat("a", 1025), bearer(sharedToken))
	if res.code != http.StatusRequestEntityTooLarge || !strings.Contains(res.errorMessage(), "--max-request-body-bytes") {
		t.Errorf("declared body over the limit: %s; want 413 naming the flag", res)
	}
	// A chunked body is cut off where it passes the limit.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, onlyReader{strings.NewReader(strings.Repeat("b", 64<<10))})
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+sharedToken)
	got, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(got.Body)
	_ = got.Body.Close()
	if got.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked body over the limit: %d %s; want 413", got.StatusCode, body)
	}
}

// startBlockingServer answers only once release is closed; entered receives each request.
func startBlockingServer(t *testing.T) (port int, entered chan struct{}, release func()) {
	t.Helper()
	entered = make(chan struct{}, 16)
	gate := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-gate:
		case <-r.Context().Done():
		}
		_, _ = io.WriteString(w, "done")
	}))
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(s.Close)
	t.Cleanup(release) // before the server closes: cleanups run last first
	return serverPort(s), entered, release
}

func TestPerClientLimit(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, func(c *router.Config) { withSharedToken(c); c.MaxConnectionsPerClient = 2 })
	port, entered, release := startBlockingServer(t)
	sb := createSandbox(t, ns, "slow", &sandboxv1beta1.AgentSpec{Port: ptrInt32(port)})
	markReady(t, sb, "127.0.0.1")
	url := rt.url + "/sandboxes/" + ns + "/slow/"
	// Wait for the router to know the sandbox: a 404 would not hold a slot.
	eventuallyStatus(t, http.StatusUnauthorized, http.MethodGet, url, "")
	eventually(t, func() (bool, string) {
		res := do(t, http.MethodGet, rt.url+"/sandboxes/"+ns+"/slow/x", "", bearer(sharedToken), "X-Sandbox-Timeout: 0.05")
		return res.code == http.StatusGatewayTimeout, res.String()
	})
	drain(entered)

	var wg sync.WaitGroup
	codes := make(chan int, 2)
	for range 2 {
		wg.Go(func() {
			res, err := httpClient(false, sharedToken).Get(url)
			if err != nil {
				t.Error(err)
				return
			}
			_ = res.Body.Close()
			codes <- res.StatusCode
		})
	}
	for range 2 {
		<-entered
	}
	res := do(t, http.MethodGet, url, "", bearer(sharedToken))
	if res.code != http.StatusTooManyRequests || !strings.Contains(res.errorMessage(), "--max-connections-per-client") {
		t.Errorf("third request in flight: %s; want 429 naming the flag", res)
	}
	release()
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Errorf("a request within the limit got %d", c)
		}
	}
	// Slots are given back.
	waitNothingInFlight(t, rt)
	if res := do(t, http.MethodGet, url, "", bearer(sharedToken)); res.code != http.StatusOK {
		t.Errorf("after the first two finished: %s; want 200", res)
	}
}

func drain(c chan struct{}) {
	for {
		select {
		case <-c:
		case <-time.After(100 * time.Millisecond):
			return
		}
	}
}

func TestSandboxTimeoutHeader(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, withSharedToken)
	port, _, _ := startBlockingServer(t)
	sb := createSandbox(t, ns, "slow", &sandboxv1beta1.AgentSpec{Port: ptrInt32(port)})
	markReady(t, sb, "127.0.0.1")
	res := eventuallyStatus(t, http.StatusGatewayTimeout, http.MethodGet, rt.url+"/sandboxes/"+ns+"/slow/", "",
		bearer(sharedToken), "X-Sandbox-Timeout: 0.2")
	if !strings.Contains(res.errorMessage(), "did not answer in time") {
		t.Errorf("%s; want a message saying the sandbox did not answer in time", res)
	}
	if n := counter(t, rt, "sandbox_router_upstream_errors_total", `reason="timeout"`, fmt.Sprintf("sandbox_namespace=%q", ns)); n < 1 {
		t.Errorf("sandbox_router_upstream_errors_total{reason=timeout} = %v, want at least 1", n)
	}
}
