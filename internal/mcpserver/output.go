package mcpserver

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// capped keeps the first max bytes written to it and notes whether there were more.
type capped struct {
	max       int
	buf       bytes.Buffer
	truncated bool
}

func (c *capped) Write(b []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room < len(b) {
		c.truncated = true
		if room > 0 {
			c.buf.Write(b[:room])
		}
		return len(b), nil
	}
	c.buf.Write(b)
	return len(b), nil
}

func (c *capped) String() string { return c.buf.String() }

// maxProgressMessage bounds the output one progress notification carries.
const maxProgressMessage = 4 << 10

// progress sends a tool call's output to its client as progress notifications, when the call
// asked for them (a progress token); progress counts the bytes sent so far.
type progress struct {
	ctx   context.Context
	ss    *mcp.ServerSession
	token any
	mu    sync.Mutex
	sent  float64
}

func newProgress(ctx context.Context, req *mcp.CallToolRequest) *progress {
	p := &progress{ctx: ctx, ss: req.Session}
	if req.Params != nil {
		p.token = req.Params.GetProgressToken()
	}
	return p
}

// stream returns the writer of one stream ("stdout", "stderr"); without a progress token it
// discards.
func (p *progress) stream(name string) io.Writer {
	if p.token == nil || p.ss == nil {
		return io.Discard
	}
	return writerFunc(func(b []byte) (int, error) {
		for rest := b; len(rest) > 0; {
			n := min(len(rest), maxProgressMessage)
			p.notify(name, rest[:n])
			rest = rest[n:]
		}
		return len(b), nil
	})
}

// notify sends one chunk. A client gone or slow must not fail the command: errors are dropped.
func (p *progress) notify(stream string, chunk []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent += float64(len(chunk))
	_ = p.ss.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: p.sent, Message: stream + ": " + string(chunk)})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
