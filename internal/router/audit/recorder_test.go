package audit

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	auditrec "github.com/kubox-dev/kubox/internal/audit"
	envdprocess "github.com/kubox-dev/kubox/proto/e2b/envd/process"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memoryQueue keeps the records added to it.
type memoryQueue struct {
	mu      sync.Mutex
	records []auditrec.Record
}

func (q *memoryQueue) Add(r auditrec.Record) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.records = append(q.records, r)
	return true
}

func (q *memoryQueue) all() []auditrec.Record {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]auditrec.Record(nil), q.records...)
}

// sandbox is a stand-in for a sandbox's server: it keeps the body it got and answers with
// answer.
type sandbox struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newSandbox(t *testing.T, answer http.HandlerFunc) *sandbox {
	s := &sandbox{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, b)
		s.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// routerFor is what kubox-router does around its proxy: Begin, forward, End.
func routerFor(t testing.TB, rc *Recorder, route string, backend string) *httptest.Server {
	u, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w, r, e := rc.Begin(w, r, Request{Start: time.Now(), Principal: "system:serviceaccount:team-a:alice", Namespace: "team-a",
			Sandbox: "box", Route: route, Port: 8080, Path: r.URL.Path})
		defer e.End("")
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func marshal(t testing.TB, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func envelope(flags byte, msg []byte) []byte {
	b := make([]byte, envelopePrefix, envelopePrefix+len(msg))
	b[0] = flags
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

func gzipped(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRecordsOperations sends each kind of request through a recorder and checks that the
// sandbox gets the body byte for byte and that the record says what the request asked.
func TestRecordsOperations(t *testing.T) {
	run := &agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: []string{"ls", "-la", "/"}}}
	runJSON, err := protojson.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	pty := &agentv1.StartProcessRequest{Spec: &agentv1.ProcessSpec{ShellCommand: "bash -l"}, Pty: &agentv1.PtySize{Rows: 24, Cols: 80}}
	envdStart := &envdprocess.StartRequest{Process: &envdprocess.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-l", "-c", "id"}}}
	move := `{"source":"/a","destination":"/b"}`
	huge := &agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: []string{"echo"}}, Stdin: bytes.Repeat([]byte("x"), MaxPeekBytes+1)}
	long := &agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: []string{"echo", strings.Repeat("a", 40<<10), "b"}}}
	const (
		runPath   = "/kubox.agent.v1.ProcessService/RunProcess"
		startPath = "/kubox.agent.v1.ProcessService/StartProcess"
	)
	for name, tc := range map[string]struct {
		route, method, path string
		headers             map[string]string
		body                []byte
		want                *auditrec.Operation
		wantPhases          []string
	}{
		"Connect unary, proto": {
			route: auditrec.RouteAgent, method: http.MethodPost, path: runPath, headers: map[string]string{"Content-Type": "application/proto"},
			body: marshal(t, run), want: &auditrec.Operation{Kind: "exec", Procedure: runPath, Command: []string{"ls", "-la", "/"}},
		},
		"Connect unary, JSON": {
			route: auditrec.RouteAgent, method: http.MethodPost, path: runPath, headers: map[string]string{"Content-Type": "application/json"},
			body: runJSON, want: &auditrec.Operation{Kind: "exec", Procedure: runPath, Command: []string{"ls", "-la", "/"}},
		},
		"Connect unary, gzip": {
			route: auditrec.RouteAgent, method: http.MethodPost, path: runPath,
			headers: map[string]string{"Content-Type": "application/proto", "Content-Encoding": "gzip"},
			body:    gzipped(t, marshal(t, run)), want: &auditrec.Operation{Kind: "exec", Procedure: runPath, Command: []string{"ls", "-la", "/"}},
		},
		"Connect streaming terminal: open and close": {
			route: auditrec.RouteAgent, method: http.MethodPost, path: startPath, headers: map[string]string{"Content-Type": "application/connect+proto"},
			body: envelope(0, marshal(t, pty)), want: &auditrec.Operation{Kind: "pty", Procedure: startPath, Command: []string{"sh", "-c", "bash -l"}},
			wantPhases: []string{"open", "close"},
		},
		"gRPC envd process, compressed": {
			route: auditrec.RouteEnvd, method: http.MethodPost, path: "/process.Process/Start",
			headers: map[string]string{"Content-Type": "application/grpc", "Grpc-Encoding": "gzip"},
			body:    envelope(flagCompressed, gzipped(t, marshal(t, envdStart))),
			want:    &auditrec.Operation{Kind: "exec", Procedure: "/process.Process/Start", Command: []string{"/bin/bash", "-l", "-c", "id"}},
		},
		"agent move": {
			route: auditrec.RouteAgent, method: http.MethodPost, path: "/kubox.agent.v1.FilesystemService/Move",
			headers: map[string]string{"Content-Type": "application/json"}, body: []byte(move),
			want: &auditrec.Operation{Kind: "file", Action: "move", Procedure: "/kubox.agent.v1.FilesystemService/Move", Path: "/a", Destination: "/b"},
		},
		"agent file write": {
			route: auditrec.RouteAgent, method: http.MethodPut, path: "/files/etc/motd", body: []byte("hello"),
			want: &auditrec.Operation{Kind: "file", Action: "write", Path: "/etc/motd"},
		},
		"envd file read": {
			route: auditrec.RouteEnvd, method: http.MethodGet, path: "/files?path=%2Fhome%2Fuser%2F.ssh%2Fid_rsa",
			want: &auditrec.Operation{Kind: "file", Action: "read", Path: "/home/user/.ssh/id_rsa"},
		},
		"a message larger than the router reads": {
			route: auditrec.RouteAgent, method: http.MethodPost, path: runPath, headers: map[string]string{"Content-Type": "application/connect+proto"},
			body: envelope(0, marshal(t, huge)),
			want: &auditrec.Operation{Kind: "exec", Procedure: runPath, Unread: "the request's first message has 65549 bytes, more than the 65536 the router reads"},
		},
		"a compression the router does not read": {
			route: auditrec.RouteAgent, method: http.MethodPost, path: runPath,
			headers: map[string]string{"Content-Type": "application/proto", "Content-Encoding": "br"}, body: []byte("\x0b\x01\x02"),
			want: &auditrec.Operation{Kind: "exec", Procedure: runPath, Unread: `the request's message is compressed with "br", which the router does not read`},
		},
		"a command line longer than a record holds": {
			route: auditrec.RouteAgent, method: http.MethodPost, path: runPath, headers: map[string]string{"Content-Type": "application/proto"},
			body: marshal(t, long),
			want: &auditrec.Operation{Kind: "exec", Procedure: runPath, Truncated: true,
				Command: []string{"echo", strings.Repeat("a", auditrec.MaxOperationBytes-4)}},
		},
		"python-runtime execute": {
			route: auditrec.RouteAgent, method: http.MethodPost, path: "/execute", headers: map[string]string{"Content-Type": "application/json"},
			body: []byte(`{"command": "python3 -c 'print(1)'"}`),
			want: &auditrec.Operation{Kind: "exec", Command: []string{"python3 -c 'print(1)'"}},
		},
		"python-runtime download": {
			route: auditrec.RouteAgent, method: http.MethodGet, path: "/download/data/out.csv",
			want: &auditrec.Operation{Kind: "file", Action: "read", Path: "/data/out.csv"},
		},
		"an app's port": {
			route: auditrec.RoutePort, method: http.MethodPost, path: runPath, headers: map[string]string{"Content-Type": "application/proto"},
			body: marshal(t, run),
		},
	} {
		t.Run(name, func(t *testing.T) {
			q := &memoryQueue{}
			sb := newSandbox(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "answer") })
			rt := routerFor(t, New(q, nil), tc.route, sb.srv.URL)
			req, err := http.NewRequest(tc.method, rt.URL+tc.path, bytes.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			if diff := cmp.Diff([][]byte{bytesOrEmpty(tc.body)}, sb.bodies); diff != "" {
				t.Errorf("the sandbox got another body than the client sent (-want +got):\n%s", diff)
			}
			waitRecords(t, q, max(1, len(tc.wantPhases)))
			got := q.all()
			var phases []string
			for _, r := range got {
				phases = append(phases, r.Phase)
				if diff := cmp.Diff(tc.want, r.Operation, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("operation of the %s record (-want +got):\n%s", r.Phase, diff)
				}
			}
			wantPhases := tc.wantPhases
			if wantPhases == nil {
				wantPhases = []string{"close"}
			}
			if diff := cmp.Diff(wantPhases, phases); diff != "" {
				t.Errorf("phases of the records (-want +got):\n%s", diff)
			}
			last := got[len(got)-1]
			if last.Status != http.StatusOK || last.BytesIn != int64(len(tc.body)) || last.BytesOut != int64(len("answer")) {
				t.Errorf("closing record: status %d, %d bytes in, %d out; want 200, %d, %d", last.Status, last.BytesIn, last.BytesOut,
					len(tc.body), len("answer"))
			}
		})
	}
}

func bytesOrEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// waitRecords waits until q has n records: the closing record is added when the router's
// handler returns, which may be just after the client has read the answer.
func waitRecords(t *testing.T, q *memoryQueue, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(q.all()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d records, want %d: %+v", len(q.all()), n, q.all())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestOffRecordsNothing: a recorder without queue hands back w and r untouched.
func TestOffRecordsNothing(t *testing.T) {
	rc := New(nil, nil)
	r := httptest.NewRequest(http.MethodPost, "/kubox.agent.v1.ProcessService/RunProcess", strings.NewReader("x"))
	body := r.Body
	w := httptest.NewRecorder()
	gw, gr, e := rc.Begin(w, r, Request{Route: auditrec.RouteAgent})
	e.End("")
	if gw != w || gr != r || gr.Body != body || rc.Enabled() {
		t.Errorf("a recorder without queue changed the request or response writer, or is enabled")
	}
}

// TestCountsUpgradedConnections: a connection the sandbox upgrades (a WebSocket terminal) is
// recorded with status 101 and the bytes that went each way after the upgrade.
func TestCountsUpgradedConnections(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer func() { _ = c.Close() }()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		_ = rw.Flush()
		buf := make([]byte, 5)
		if _, err := io.ReadFull(rw, buf); err == nil {
			_, _ = c.Write(buf)
		}
	}))
	defer echo.Close()
	q := &memoryQueue{}
	rt := routerFor(t, New(q, nil), auditrec.RoutePort, echo.URL)
	c, err := net.Dial("tcp", strings.TrimPrefix(rt.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_, _ = io.WriteString(c, "GET /term HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", res, err)
	}
	_, _ = io.WriteString(c, "hello")
	got := make([]byte, 5)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "hello" {
		t.Fatalf("echo: %q %v", got, err)
	}
	_ = c.Close()
	waitRecords(t, q, 1)
	r := q.all()[0]
	if r.Status != http.StatusSwitchingProtocols || r.BytesIn != 5 || r.BytesOut != 5 {
		t.Errorf("record of the upgraded connection: status %d, %d bytes in, %d out; want 101, 5, 5", r.Status, r.BytesIn, r.BytesOut)
	}
}
