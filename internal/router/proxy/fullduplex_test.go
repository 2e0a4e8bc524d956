package proxy

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/kubox-dev/kubox/internal/router/metrics"
)

// TestRequestBodyAfterTheResponseStarts: a sandbox that answers before it has read the whole
// request (kubox-agent's code interpreter streams output once it has the code; a Connect
// stream over HTTP/1.1) still gets the rest of the body, and the client gets the whole answer.
// Without full duplex, Go's HTTP/1 server, once the router wrote the response headers, first
// read away the rest of the body (here: a client waiting for the answer before it sends more
// never gets it), then made the body unreadable; the transport, still forwarding it, closed the
// sandbox's connection and the response ended mid-stream (@e2b/code-interpreter under load:
// "terminated", UND_ERR_SOCKET).
func TestRequestBodyAfterTheResponseStarts(t *testing.T) {
	sandbox := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			t.Errorf("the test sandbox cannot read and write at once: %v", err)
		}
		head := make([]byte, len("first"))
		if _, err := io.ReadFull(r.Body, head); err != nil {
			t.Errorf("the sandbox read the first part of the body: %v", err)
			return
		}
		_, _ = io.WriteString(w, "started "+string(head)+"\n")
		_ = http.NewResponseController(w).Flush()
		rest, err := io.ReadAll(r.Body)
		if err != nil {
			_, _ = io.WriteString(w, "the rest of the body could not be read: "+err.Error()+"\n")
			return
		}
		_, _ = io.WriteString(w, "then "+string(rest)+"\n")
	}))
	defer sandbox.Close()

	p := New(Config{ProxyTimeout: 30 * time.Second, MaxResponseHeaderBytes: 1 << 20}, metrics.New(), slog.New(slog.NewTextHandler(io.Discard, nil)), Hooks{})
	router := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.ServeHTTP(w, r, &Target{Namespace: "ns", Name: "box", Addr: sandbox.Listener.Addr().String(), Path: "/"})
	}))
	defer router.Close()

	// The client sends the body in two parts, the second once the response has started.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", router.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline) // a guard against a hang, not a measure
	}
	body := "first second"
	if _, err := io.WriteString(conn, "POST /execute HTTP/1.1\r\nHost: box\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body[:len("first")]); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response from the router: %v", err)
	}
	defer func() { _ = res.Body.Close() }()
	lines := bufio.NewReader(res.Body)
	first, err := lines.ReadString('\n')
	if err != nil || first != "started first\n" {
		t.Fatalf("the response's first line = %q, %v; want %q", first, err, "started first\n")
	}
	if _, err := io.WriteString(conn, body[len("first"):]); err != nil {
		t.Fatalf("the router no longer takes the request body once its response started: %v", err)
	}
	rest, err := io.ReadAll(lines)
	if err != nil || string(rest) != "then  second\n" {
		t.Errorf("the rest of the response = %q, %v; want %q: the router cut the response off when the client's body came after the sandbox's answer began", rest, err, "then  second\n")
	}
}
