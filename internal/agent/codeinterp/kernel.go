package codeinterp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kubox-dev/kubox/internal/agent/process"
)

// kernel is one context: its language and working directory, and the interpreter that holds
// its state (started on first use, and again after it exited or was restarted).
type kernel struct {
	info    Context
	lang    language
	procs   *process.Manager
	environ func() []string
	grace   time.Duration
	log     *slog.Logger
	// turn admits one execution at a time, as E2B's server does per context; a second waits.
	turn    chan struct{}
	mu      sync.Mutex
	inst    *instance
	removed bool
}

func newKernel(info Context, opts Options) *kernel {
	return &kernel{info: info, lang: languages[info.Language], procs: opts.Processes, environ: opts.Environ,
		grace: opts.InterruptGrace, log: opts.Log, turn: make(chan struct{}, 1)}
}

// instance is one interpreter process of a kernel. Its follower routes the process's output to
// the execution running (cur), or drops it between executions (a background thread's output).
type instance struct {
	p     *process.Process
	base  map[string]string // the environment it started with: what env_vars restore in bash
	mu    sync.Mutex
	cur   *execution
	ended chan struct{} // closed once the process exited and every event was delivered
}

// execution receives an instance's events until it is done.
type execution struct {
	events chan event
	done   chan struct{}
}

// interpreter returns the running interpreter, starting one when there is none.
func (k *kernel) interpreter() (*instance, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.removed {
		return nil, fmt.Errorf("context %s was removed", k.info.ID)
	}
	if k.inst != nil {
		select {
		case <-k.inst.ended:
		default:
			return k.inst, nil
		}
	}
	inst, err := k.start()
	if err != nil {
		return nil, err
	}
	k.inst = inst
	return inst, nil
}

func (k *kernel) start() (*instance, error) {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	env := k.environ()
	if err := findInterpreter(k.info.Language, env, k.info.Cwd); err != nil {
		return nil, err
	}
	p, err := k.procs.Start(process.Spec{Argv: k.lang.argv, Dir: k.info.Cwd, Stdin: true, FlowControl: true,
		Tag: "code-interpreter " + k.info.Language + " " + k.info.ID})
	if err != nil {
		return nil, fmt.Errorf("start the %s interpreter of context %s in %s: %w", k.info.Language, k.info.ID, k.info.Cwd, err)
	}
	inst := &instance{p: p, base: envMap(env), ended: make(chan struct{})}
	hexNonce := hex.EncodeToString(nonce)
	go inst.follow(hexNonce)
	ctx, cancel := context.WithTimeout(context.Background(), k.grace)
	defer cancel()
	if err := p.Input(ctx, []byte(hexNonce+"\n"), false); err != nil {
		p.Stop()
		return nil, fmt.Errorf("start the %s interpreter of context %s: %w", k.info.Language, k.info.ID, err)
	}
	return inst, nil
}

// stop ends the interpreter (SIGTERM to its process group, SIGKILL after the agent's grace) and
// waits until it exited; the next execution starts a new one.
func (k *kernel) stop() {
	k.mu.Lock()
	inst := k.inst
	k.inst = nil
	k.mu.Unlock()
	if inst != nil {
		inst.p.Stop()
		<-inst.ended
	}
}

// remove stops the interpreter for good: the context was removed.
func (k *kernel) remove() {
	k.mu.Lock()
	k.removed = true
	k.mu.Unlock()
	k.stop()
}

// newID is a context's ID: a random UUID, as Jupyter's kernel IDs E2B's server answers.
func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// follow feeds the process's output, with flow control, through one scanner per stream.
func (inst *instance) follow(nonce string) {
	defer close(inst.ended)
	scan := [2]*scanner{newScanner(nonce, true), newScanner(nonce, false)}
	deliver := func(stderr bool) func(event) error {
		return func(e event) error { e.stderr = stderr; inst.deliver(e); return nil }
	}
	_ = inst.p.Follow(context.Background(), 0, 0, true, func(ev process.Event) error {
		if ev.Output != nil && (ev.Output.Stream == process.Stdout || ev.Output.Stream == process.Stderr) {
			s := ev.Output.Stream == process.Stderr
			return scan[ev.Output.Stream].feed(ev.Output.Data, deliver(s))
		}
		return nil
	})
	_ = scan[0].flush(deliver(false))
	_ = scan[1].flush(deliver(true))
}

func (inst *instance) deliver(e event) {
	inst.mu.Lock()
	x := inst.cur
	inst.mu.Unlock()
	if x == nil {
		return
	}
	select {
	case x.events <- e:
	case <-x.done:
	}
}

func (inst *instance) attach(x *execution) {
	inst.mu.Lock()
	inst.cur = x
	inst.mu.Unlock()
}

// interruptRepeat is how often an interrupted execution gets SIGINT again until it ends.
const interruptRepeat = 250 * time.Millisecond

// errClientGone ends sending to a client that went away.
var errClientGone = errors.New("the client went away")

// execute runs code with env in the context and sends each message as it comes. When ctx ends
// (the client closed the stream: its timeout, or a cancel) the execution is interrupted with
// SIGINT to the interpreter's process group, as Jupyter interrupts a kernel, repeated until it
// ends: the interpreter and its state stay. One that is still running after the grace period is stopped, and the next
// execution starts a new one.
func (k *kernel) execute(ctx context.Context, code string, env map[string]string, send func(Message) error) error {
	select {
	case k.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-k.turn }()
	inst, err := k.interpreter()
	var missing *missingInterpreter
	if errors.As(err, &missing) {
		// The execution's error, as E2B's client shows one (Execution.error); HTTP's would be
		// only its status there.
		_ = send(errorMessage("InterpreterNotFound", err.Error(), ""))
		return nil
	}
	if err != nil {
		return err
	}
	req, err := k.lang.request(code, env, inst.base)
	if err != nil {
		return &requestError{err}
	}
	x := &execution{events: make(chan event), done: make(chan struct{})}
	inst.attach(x)
	defer func() { inst.attach(nil); close(x.done) }()
	if err := inst.p.Input(ctx, req, false); err != nil {
		return fmt.Errorf("send the code to the %s interpreter of context %s: %w", k.info.Language, k.info.ID, err)
	}
	return k.stream(ctx, inst, x, send)
}

// stream passes the execution's events on until the driver's end frame and stderr mark.
func (k *kernel) stream(ctx context.Context, inst *instance, x *execution, send func(Message) error) error {
	var end, mark bool
	gone := ctx.Done()
	var kill, again <-chan time.Time
	interrupt := func() {
		_ = inst.p.Signal(syscall.SIGINT) // fails only once the interpreter exited
		gone, send = nil, func(Message) error { return nil }
		kill, again = time.After(k.grace), time.After(interruptRepeat)
	}
	for !end || !mark {
		select {
		case e := <-x.events:
			m, ok := k.message(e, &end, &mark)
			if ok && send(m) != nil {
				interrupt()
			}
		case <-inst.ended:
			exit := inst.p.Exit()
			_ = send(errorMessage("InterpreterExited", fmt.Sprintf(
				"the %s interpreter of context %s exited (code %d%s) before the execution ended; its state is lost, and the next execution starts a new one",
				k.info.Language, k.info.ID, exit.Code, signalSuffix(exit.Signal)), ""))
			return nil
		case <-gone:
			interrupt()
		case <-again:
			// Node drops a SIGINT that comes as its script starts; the drivers ignore one that
			// comes between executions.
			_ = inst.p.Signal(syscall.SIGINT)
			again = time.After(interruptRepeat)
		case <-kill:
			k.log.Warn("An interrupted execution did not end; its interpreter is stopped, and its state lost",
				"context", k.info.ID, "language", k.info.Language, "grace", k.grace)
			inst.p.Stop()
			kill, again = nil, nil
		}
	}
	if gone == nil {
		return errClientGone
	}
	return nil
}

// message turns an event into the client's message; ok is false for the driver's own marks.
func (k *kernel) message(e event, end, mark *bool) (Message, bool) {
	switch {
	case e.mark:
		*mark = true
		return Message{}, false
	case e.text != nil:
		return outputMessage(e.stderr, e.text), true
	case e.oversize:
		return errorMessage("ResultTooLarge", fmt.Sprintf("a result of the execution in context %s is over %d MiB and was dropped: write large data to a file instead",
			k.info.ID, MaxFrameBytes>>20), ""), true
	}
	m, err := parseFrame(e.frame)
	if err != nil {
		return errorMessage("InterpreterError", err.Error(), ""), true
	}
	if m.Type == typeEnd {
		*end = true
		return m, false
	}
	return m, true
}

func signalSuffix(sig syscall.Signal) string {
	if sig == 0 {
		return ""
	}
	return ", signal " + process.SignalName(sig)
}

// requestError is a request the interpreter cannot take (400).
type requestError struct{ err error }

func (e *requestError) Error() string { return e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
