package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	auditrec "github.com/kubox-dev/kubox/internal/audit"
)

// Queue is where records go (auditrec.Queue): Add must not block.
type Queue interface {
	Add(auditrec.Record) bool
}

// Recorder writes a record of each request the router lets through to a sandbox.
type Recorder struct {
	queue Queue
	now   func() time.Time
	// inflight counts the requests whose record is not written yet, for Wait.
	inflight sync.WaitGroup
}

// New returns a recorder adding records to queue; nil: a recorder that records nothing.
func New(queue Queue, now func() time.Time) *Recorder {
	if now == nil {
		now = time.Now
	}
	return &Recorder{queue: queue, now: now}
}

// Enabled reports whether the recorder records.
func (rc *Recorder) Enabled() bool { return rc.queue != nil }

// Request is what the router decided about a request it lets through.
type Request struct {
	// Start is when the request reached the router.
	Start time.Time
	// Principal, Namespace, Sandbox, Claim, Route and Port: see auditrec.Record.
	Principal, Namespace, Sandbox, Claim, Route string
	Port                                        int
	// Path is the path forwarded to the sandbox.
	Path string
}

// Entry is the record of one request in flight.
type Entry struct {
	rc  *Recorder
	rec auditrec.Record
	w   *countingWriter
	in  *countingBody
}

// Begin starts the record of r and returns what to forward instead of w and r: the same
// request, its body counted (and its first message read, for an operation whose details are in
// it: see peek), and w counted. Call End when the response is over. Begin writes the opening
// record of a terminal session at once.
func (rc *Recorder) Begin(w http.ResponseWriter, r *http.Request, req Request) (http.ResponseWriter, *http.Request, *Entry) {
	if rc.queue == nil {
		return w, r, nil
	}
	rc.inflight.Add(1)
	e := &Entry{rc: rc, rec: auditrec.Record{Time: req.Start, Source: auditrec.SourceRouter, Principal: req.Principal,
		Namespace: req.Namespace, Sandbox: req.Sandbox, Claim: req.Claim, Route: req.Route, Port: req.Port,
		Method: r.Method, Path: req.Path}}
	op, proc := classify(req.Route, r, req.Path)
	if proc != nil {
		readOperation(r, op, proc)
	}
	if op != nil {
		bound(op)
	}
	e.rec.Operation = op
	if r.Body != nil && r.Body != http.NoBody {
		e.in = &countingBody{ReadCloser: r.Body}
		r.Body = e.in
	}
	e.w = &countingWriter{ResponseWriter: w}
	if op != nil && op.Kind == auditrec.OpExec {
		if ea := exitAnswers[op.Procedure]; ea != nil {
			e.w.exit = &exitReader{proc: ea}
		}
	}
	if op != nil && op.Kind == auditrec.OpPTY {
		open := e.rec
		open.Phase = auditrec.PhaseOpen
		rc.queue.Add(open)
	}
	return e.w, r, e
}

// readOperation reads op's details from r's first message (peek), when r's framing is one the
// procedure speaks.
func readOperation(r *http.Request, op *auditrec.Operation, proc *procedure) {
	if proc.msg == nil {
		readPyCommand(r, op)
		return
	}
	w, ok := wireOf(r.Header)
	if !ok {
		op.Unread = "the request is not a Connect or gRPC call (Content-Type " + r.Header.Get("Content-Type") + ")"
		return
	}
	msg, compressed, unread := peek(r, w)
	if unread == "" {
		m := proc.msg()
		if unread = decode(w, msg, compressed, m, "request"); unread == "" {
			describe(op, m)
		}
	}
	op.Unread = unread
}

// readPyCommand reads the "command" of python-runtime's /execute from r's body (peek).
func readPyCommand(r *http.Request, op *auditrec.Operation) {
	msg, _, unread := peek(r, wire{json: true})
	if unread == "" {
		var body struct {
			Command *string `json:"command"`
		}
		switch err := json.Unmarshal(msg, &body); {
		case err != nil:
			unread = "the request's JSON is malformed: " + err.Error()
		case body.Command == nil:
			unread = `the request has no "command"`
		default:
			op.Command = []string{*body.Command}
		}
	}
	op.Unread = unread
}

// End writes the request's closing record: the status the client got, the bytes each way, the
// duration, and failure (why the sandbox gave no complete answer; "" when it did). A nil Entry
// (a recorder that records nothing) does nothing.
func (e *Entry) End(failure string) {
	if e == nil {
		return
	}
	defer e.rc.inflight.Done()
	rec := e.rec
	rec.Phase = auditrec.PhaseClose
	rec.Status = e.w.status()
	if e.in != nil {
		rec.BytesIn = e.in.n.Load()
	}
	rec.BytesIn += e.w.hijackedIn.Load()
	rec.BytesOut = e.w.out.Load()
	rec.DurationSeconds = e.rc.now().Sub(rec.Time).Seconds()
	rec.Error = failure
	if e.w.exit != nil && rec.Status < 300 {
		rec.Reported = e.w.exit.end()
	}
	e.rc.queue.Add(rec)
}

// Wait waits until every request begun has its closing record, or ctx ends: call it after the
// router's server has shut down, before closing the queue.
func (rc *Recorder) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { rc.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return errors.New("requests still in flight when the router stopped will have no audit record")
	}
}

// countingBody counts the request body bytes the proxy read.
type countingBody struct {
	io.ReadCloser
	n atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// countingWriter remembers the status sent to the client and counts the body bytes written to
// it, and those of an upgraded connection each way. ReverseProxy reaches Flush and Hijack
// through http.ResponseController.
type countingWriter struct {
	http.ResponseWriter
	code       atomic.Int32
	out        atomic.Int64
	hijackedIn atomic.Int64
	// exit, for an exec call, reads the exit the sandbox reports from the answer's bytes; the
	// proxy writes them from one goroutine, and End reads exit after the proxy returned.
	exit    *exitReader
	started bool
}

func (w *countingWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.code.CompareAndSwap(0, int32(code))
	}
	w.startExit()
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	w.code.CompareAndSwap(0, http.StatusOK)
	w.startExit()
	n, err := w.ResponseWriter.Write(b)
	w.out.Add(int64(n))
	if w.exit != nil {
		w.exit.write(b[:n])
	}
	return n, err
}

// startExit gives the exit reader the answer's headers, once, before its first byte.
func (w *countingWriter) startExit() {
	if w.exit != nil && !w.started {
		w.started = true
		w.exit.start(w.Header())
	}
}

// status is the response's status; 200 when nothing was written (net/http sends 200 then).
func (w *countingWriter) status() int {
	if c := int(w.code.Load()); c != 0 {
		return c
	}
	return http.StatusOK
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *countingWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *countingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return c, rw, err
	}
	w.code.Store(http.StatusSwitchingProtocols)
	return &countingConn{Conn: c, in: &w.hijackedIn, out: &w.out}, rw, nil
}

// countingConn counts an upgraded connection's bytes.
type countingConn struct {
	net.Conn
	in, out *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out.Add(int64(n))
	return n, err
}
