package framework_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/agent/auth"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

func TestStartAgent(t *testing.T) {
	port := framework.FreePort(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := framework.AgentToken([]byte("0123456789abcdef0123456789abcdef"), "uid-1")
	a := framework.StartAgent(t, agent.Config{Port: port, Token: auth.Fixed(tok), Root: root})
	if a.Root != root || a.WorkDir == "" {
		t.Errorf("Root %q, WorkDir %q; want Root %q and a temporary WorkDir", a.Root, a.WorkDir, root)
	}
	url := "http://" + net.JoinHostPort(framework.LoopbackIP, strconv.Itoa(port)) + "/files/hello.txt"

	get := func(token string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(""); code != http.StatusUnauthorized {
		t.Errorf("GET without a token: %d; want 401", code)
	}
	if code := get(string(tok)); code != http.StatusOK {
		t.Errorf("GET with the derived token: %d; want 200", code)
	}

	a.Stop()
	if c, err := net.Dial("tcp", net.JoinHostPort(framework.LoopbackIP, strconv.Itoa(port))); err == nil {
		_ = c.Close()
		t.Errorf("the agent still listens on port %d after Stop", port)
	}
	a.Stop() // stopped already: nothing more
}

// TestServeSandboxAgents proves that ServeSandboxAgents follows a Sandbox's status without any
// kubox controller: once the status has a Pod IP, a real agent answers on that IP and the given
// port and takes only the token AgentToken derives for the Sandbox's UID; when the Pod IP changes,
// the agent moves to the new IP and nothing listens on the old one; when the Sandbox is deleted,
// nothing listens on its IP any more.
func TestServeSandboxAgents(t *testing.T) {
	const firstIP, secondIP = "127.0.201.7", "127.0.201.8"
	ns := env.NewNamespace(t)
	key := []byte("0123456789abcdef0123456789abcdef")
	port := framework.FreePort(t)
	env.ServeSandboxAgents(t, ns, key, port)

	sb := testutil.MakeSandbox("a", ns).Obj()
	env.Create(t, sb)
	tok := framework.AgentToken(key, sb.UID)
	call := func(ip string, token []byte) (int, string, error) {
		t.Helper()
		return runEcho(t, ip, port, token)
	}

	t.Log("An agent answers on the Pod IP the status gives, with the token derived for the Sandbox's UID")
	setSandboxPodIPs(t, sb, firstIP)
	framework.Eventually(t, func() (bool, string) { return echoed(call(firstIP, tok)) })
	wrong := framework.AgentToken(key, "another-uid")
	if code, out, err := call(firstIP, wrong); err != nil || code != http.StatusUnauthorized {
		t.Errorf("RunProcess on %s with a token for another UID: %d %s %v; want 401", firstIP, code, out, err)
	}

	t.Log("When the Pod IP changes, the agent answers on the new IP and nothing listens on the old one")
	setSandboxPodIPs(t, sb, secondIP)
	framework.Eventually(t, func() (bool, string) {
		if ok, status := echoed(call(secondIP, tok)); !ok {
			return false, status
		}
		return refused(t, firstIP, port)
	})

	t.Log("When the Sandbox is deleted, nothing listens on its Pod IP")
	if err := env.Client.Delete(t.Context(), sb); err != nil {
		t.Fatalf("Deleting Sandbox %s: %v", sb.Name, err)
	}
	env.WaitGone(t, sb)
	framework.Eventually(t, func() (bool, string) { return refused(t, secondIP, port) })
}

// setSandboxPodIPs writes ips as the status.podIPs of sb, as kubox-controller would from its Pod.
func setSandboxPodIPs(t *testing.T, sb *sandboxv1beta1.Sandbox, ips ...string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(sb), sb); err != nil {
			return err
		}
		sb.Status.PodIPs = ips
		return env.Client.Status().Update(t.Context(), sb)
	})
	if err != nil {
		t.Fatalf("Writing the Pod IPs %v of Sandbox %s: %v", ips, sb.Name, err)
	}
}

// runEcho runs `echo hi` with RunProcess, in Connect's JSON, through the agent on ip and port with
// token, and returns the response's status code and body, or the error of a request that got none.
// Each request dials anew (no keep-alive), so it reaches whatever listens now and leaves no
// connection behind.
func runEcho(t *testing.T, ip string, port int, token []byte) (int, string, error) {
	t.Helper()
	url := "http://" + net.JoinHostPort(ip, strconv.Itoa(port)) + "/kubox.agent.v1.ProcessService/RunProcess"
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(`{"spec":{"argv":["echo","hi"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+string(token))
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out), err
}

// echoed reports whether runEcho's result is `echo hi` run: 200 with stdout "hi\n" (base64 in
// JSON), and describes it.
func echoed(code int, out string, err error) (bool, string) {
	ok := err == nil && code == http.StatusOK && strings.Contains(out, `"stdout":"aGkK"`)
	return ok, fmt.Sprintf("RunProcess: %d %s %v; want 200 with stdout aGkK", code, out, err)
}

// refused reports whether a connection to ip and port is refused: nothing listens there.
func refused(t *testing.T, ip string, port int) (bool, string) {
	t.Helper()
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", addr)
	if err == nil {
		_ = c.Close()
	}
	return errors.Is(err, syscall.ECONNREFUSED), fmt.Sprintf("dialing %s: %v; want connection refused", addr, err)
}
