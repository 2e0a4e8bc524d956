package router

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// httpClient returns a client that speaks only HTTP/1.1, or only HTTP/2 without TLS (h2c), and
// sends tok.
func httpClient(h2c bool, tok string) *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	if h2c {
		tr.Protocols.SetUnencryptedHTTP2(true)
	} else {
		tr.Protocols.SetHTTP1(true)
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: &contract.BearerTransport{Token: tok, Base: tr}}
}

// streamUntilRelease starts a process that prints "one", waits for the file "go" in its working
// directory, then prints "two"; it receives "one" through the router, creates the file, and
// receives "two" and the exit. Were the router buffering the stream, "one" would never arrive
// before the file exists and the call would time out.
func streamUntilRelease(t *testing.T, c agentv1connect.ProcessServiceClient, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	stream, err := c.StartProcess(ctx, connect.NewRequest(&agentv1.StartProcessRequest{Spec: &agentv1.ProcessSpec{
		ShellCommand: "echo one; while [ ! -f go ]; do sleep 0.02; done; echo two", Cwd: dir}}))
	if err != nil {
		t.Fatalf("StartProcess: %v", err)
	}
	defer func() { _ = stream.Close() }()
	var out strings.Builder
	released := false
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		if o := ev.GetOutput(); o != nil {
			out.Write(o.GetData())
		}
		if !released && strings.Contains(out.String(), "one\n") {
			released = true
			if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if x := ev.GetExited(); x != nil {
			if x.GetExitCode() != 0 || out.String() != "one\ntwo\n" {
				t.Errorf("exit %d, output %q; want 0 and \"one\\ntwo\\n\"", x.GetExitCode(), out.String())
			}
			return
		}
	}
	t.Fatalf("the stream ended without an exit event (output %q): %v", out.String(), stream.Err())
}

func TestConnectUnaryAndStreamingOverHTTP1(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, withSharedToken)
	a := startAgentSandbox(t, ns, "box")
	c := agentv1connect.NewProcessServiceClient(httpClient(false, sharedToken), rt.url+"/sandboxes/"+ns+"/box")
	eventually(t, func() (bool, string) {
		res, err := c.RunProcess(t.Context(), connect.NewRequest(&agentv1.RunProcessRequest{
			Spec: &agentv1.ProcessSpec{Argv: []string{"echo", "unary"}}}))
		return err == nil && string(res.Msg.GetStdout()) == "unary\n", fmt.Sprint(err)
	})
	streamUntilRelease(t, c, a.dir)
}

func TestGRPCOverH2C(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, withSharedToken)
	a := startAgentSandbox(t, ns, "box")
	c := agentv1connect.NewProcessServiceClient(httpClient(true, sharedToken), rt.url+"/claims/"+ns+"/grpc", connect.WithGRPC())
	createClaim(t, ns, "grpc", "box")
	eventually(t, func() (bool, string) {
		res, err := c.RunProcess(t.Context(), connect.NewRequest(&agentv1.RunProcessRequest{
			Spec: &agentv1.ProcessSpec{Argv: []string{"echo", "grpc"}}}))
		return err == nil && string(res.Msg.GetStdout()) == "grpc\n", fmt.Sprint(err)
	})
	streamUntilRelease(t, c, a.dir)

	// The hop to the sandbox is HTTP/2 too when the client spoke HTTP/2, and HTTP/1.1 otherwise.
	h2 := startRecordingServerH2C(t, true)
	sb := createSandbox(t, ns, "h2", &sandboxv1beta1.AgentSpec{Port: ptrInt32(h2.port())})
	markReady(t, sb, "127.0.0.1")
	for _, useH2C := range []bool{true, false} {
		eventually(t, func() (bool, string) {
			res, err := httpClient(useH2C, sharedToken).Get(rt.url + "/sandboxes/" + ns + "/h2/")
			if err != nil {
				return false, err.Error()
			}
			_ = res.Body.Close()
			return res.StatusCode == http.StatusOK, res.Status
		})
		if got := h2.lastRequest(t).ProtoMajor; (got == 2) != useH2C {
			t.Errorf("client h2c=%v: the sandbox got HTTP/%d", useH2C, got)
		}
	}
}

// startWebSocketEcho is a sandbox's WebSocket server reduced to the handshake: it answers an
// Upgrade with 101 and echoes the bytes of the upgraded connection. It records the Authorization
// it was sent. It returns its port.
func startWebSocketEcho(t *testing.T) (int, chan string) {
	t.Helper()
	auths := make(chan string, 1)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "not an upgrade", http.StatusBadRequest)
			return
		}
		auths <- r.Header.Get("Authorization")
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer func() { _ = conn.Close() }()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		_ = rw.Flush()
		_, _ = io.Copy(conn, rw)
	}))
	t.Cleanup(s.Close)
	return serverPort(s), auths
}

func TestWebSocketUpgradePassesThrough(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, withSharedToken)
	wsPort, auths := startWebSocketEcho(t)
	sb := createSandbox(t, ns, "ws", &sandboxv1beta1.AgentSpec{Port: ptrInt32(wsPort)})
	markReady(t, sb, "127.0.0.1")
	eventuallyStatus(t, http.StatusBadRequest, http.MethodGet, rt.url+"/sandboxes/"+ns+"/ws/socket", "", bearer(sharedToken))

	conn, err := net.Dial("tcp", strings.TrimPrefix(rt.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "GET /sandboxes/%s/ws/socket HTTP/1.1\r\nHost: router\r\nAuthorization: Bearer %s\r\n"+
		"Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
		ns, sharedToken)
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the handshake's answer: %v", err)
	}
	if res.StatusCode != http.StatusSwitchingProtocols || !strings.EqualFold(res.Header.Get("Upgrade"), "websocket") {
		t.Fatalf("handshake answer %s %v; want 101 with Upgrade: websocket", res.Status, res.Header)
	}
	for _, msg := range []string{"ping", "a longer frame of bytes"} {
		if _, err := conn.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(br, got); err != nil || string(got) != msg {
			t.Fatalf("echo %q, %v; want %q", got, err, msg)
		}
	}
	if got, want := <-auths, "Bearer "+contract.DeriveAgentToken(key, sb.UID); got != want {
		t.Errorf("the WebSocket server got Authorization %q, want the sandbox's agent token", got)
	}
	// The request ends, and is counted, when the upgraded connection closes.
	_ = conn.Close()
	eventually(t, func() (bool, string) {
		n := counter(t, rt, "sandbox_router_requests_total", `code="101"`)
		return n == 1, fmt.Sprintf("sandbox_router_requests_total{code=101} = %v, want 1", n)
	})
}
