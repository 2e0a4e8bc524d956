package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"github.com/coder/websocket"

	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// The terminal's WebSocket protocol. The browser's first message is a text terminalHello (the
// token: a browser cannot set a WebSocket's headers, and a URL ends up in logs). Then binary
// messages are keystrokes for the PTY, and text messages terminalControl (resize). The router
// sends binary messages of PTY output and, last, a text terminalControl exit or error.
const (
	terminalSubprotocol = "kubox.terminal.v1"
	// helloTimeout bounds the wait for the first message.
	helloTimeout = 10 * time.Second
	// maxTerminalMessage bounds a message from the browser (a paste).
	maxTerminalMessage = 1 << 20
	// terminalShell starts the sandbox's bash, else its sh.
	terminalShell = "if command -v bash >/dev/null 2>&1; then exec bash; else exec sh; fi"
)

// terminalHello is the browser's first message.
type terminalHello struct {
	Token string `json:"token"`
	Rows  uint32 `json:"rows"`
	Cols  uint32 `json:"cols"`
}

// terminalControl is a text message either way: "resize" (rows, cols) from the browser; "exit"
// (code) or "error" (message) from the router.
type terminalControl struct {
	Type    string `json:"type"`
	Rows    uint32 `json:"rows,omitempty"`
	Cols    uint32 `json:"cols,omitempty"`
	Code    int32  `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// terminal bridges a WebSocket to a shell on a new PTY in the sandbox, through its agent's
// ProcessService. The shell is hung up when the WebSocket closes.
func (h *Handler) terminal(w http.ResponseWriter, r *http.Request) {
	// Accept checks that Origin is the router's own host: another site's page cannot open it.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{terminalSubprotocol}})
	if err != nil {
		return
	}
	defer func() { _ = c.CloseNow() }()
	c.SetReadLimit(maxTerminalMessage)
	ctx := r.Context()
	if herr := h.runTerminal(ctx, c, r); herr != nil {
		writeControl(ctx, c, terminalControl{Type: "error", Message: herr.Message, Code: int32(herr.Code)})
		_ = c.Close(websocket.StatusPolicyViolation, "")
		return
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
}

// runTerminal authenticates the hello, starts the shell and copies both ways until either side ends.
func (h *Handler) runTerminal(ctx context.Context, c *websocket.Conn, r *http.Request) *Error {
	hello, herr := readHello(ctx, c)
	if herr != nil {
		return herr
	}
	v, herr := h.authenticate(r, hello.Token)
	if herr != nil {
		return herr
	}
	a, herr := h.agentFor(ctx, r, v)
	if herr != nil {
		return herr
	}
	defer a.Done()
	procs := h.processes(a)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := procs.StartProcess(ctx, connect.NewRequest(&agentv1.StartProcessRequest{
		Spec: &agentv1.ProcessSpec{ShellCommand: terminalShell, Env: map[string]string{"TERM": "xterm-256color"}},
		Pty:  &agentv1.PtySize{Rows: max(hello.Rows, 1), Cols: max(hello.Cols, 1)}, Stdin: true}))
	if err != nil {
		return agentError(err, "starting a shell")
	}
	defer func() { _ = stream.Close() }()
	if !stream.Receive() {
		return agentError(stream.Err(), "starting a shell")
	}
	id := stream.Msg().GetEvent().GetStarted().GetProcessId()
	if id == "" {
		return errorf(http.StatusBadGateway, "the agent did not report the shell it started")
	}
	// The shell is the terminal's: hang it up when the browser goes, as a terminal would.
	defer func() {
		_, _ = procs.SendSignal(context.WithoutCancel(ctx), connect.NewRequest(&agentv1.SendSignalRequest{ProcessId: id, Signal: "SIGHUP"}))
	}()
	go func() {
		defer cancel()
		h.forwardKeys(ctx, c, procs, id)
	}()
	return forwardOutput(ctx, c, stream)
}

// readHello reads the browser's first message.
func readHello(ctx context.Context, c *websocket.Conn) (terminalHello, *Error) {
	hctx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	var hello terminalHello
	typ, data, err := c.Read(hctx)
	if err != nil || typ != websocket.MessageText || json.Unmarshal(data, &hello) != nil || hello.Token == "" {
		return hello, errorf(http.StatusUnauthorized, "the terminal's first message must be {\"token\": \"<Kubernetes token>\", \"rows\": n, \"cols\": n}")
	}
	return hello, nil
}

// forwardOutput sends the shell's PTY output to the browser, then its exit.
func forwardOutput(ctx context.Context, c *websocket.Conn, stream *connect.ServerStreamForClient[agentv1.StartProcessResponse]) *Error {
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		if out := ev.GetOutput(); out != nil {
			if err := c.Write(ctx, websocket.MessageBinary, out.GetData()); err != nil {
				return nil
			}
		}
		if d := ev.GetDropped(); d != nil {
			// The browser fell behind the shell: say so rather than show a silent gap.
			note := fmt.Sprintf("\r\n[kubox: %d bytes of output were dropped]\r\n", d.GetLength())
			if err := c.Write(ctx, websocket.MessageBinary, []byte(note)); err != nil {
				return nil
			}
		}
		if ex := ev.GetExited(); ex != nil {
			writeControl(ctx, c, terminalControl{Type: "exit", Code: ex.GetExitCode()})
			return nil
		}
	}
	if err := stream.Err(); err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
		return agentError(err, "reading the shell's output")
	}
	return nil
}

// forwardKeys sends the browser's keystrokes and resizes to the shell until the browser closes.
func (h *Handler) forwardKeys(ctx context.Context, c *websocket.Conn, procs agentv1connect.ProcessServiceClient, id string) {
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			if _, err := procs.SendInput(ctx, connect.NewRequest(&agentv1.SendInputRequest{ProcessId: id, Data: data})); err != nil {
				return
			}
			continue
		}
		var ctl terminalControl
		if json.Unmarshal(data, &ctl) == nil && ctl.Type == "resize" && ctl.Rows > 0 && ctl.Cols > 0 {
			_, _ = procs.ResizePty(ctx, connect.NewRequest(&agentv1.ResizePtyRequest{ProcessId: id,
				Size: &agentv1.PtySize{Rows: ctl.Rows, Cols: ctl.Cols}}))
		}
	}
}

func writeControl(ctx context.Context, c *websocket.Conn, ctl terminalControl) {
	b, _ := json.Marshal(ctl)
	_ = c.Write(ctx, websocket.MessageText, b)
}
