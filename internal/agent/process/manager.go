package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/sys/unix"
)

// DefaultStopGrace is how long a process group the agent ends itself gets after SIGTERM before
// SIGKILL, unless configured (Options.StopGrace). agent-sandbox's sandboxd (v1.0.13) ends an
// Execute this way but its grace period is in no source reachable here; 5 seconds lets a command
// flush its output, remove its lock and temporary files and stop its children, while a caller of
// a timed-out call waits at most that much longer, and it stays well inside the shutdown grace
// (10 seconds) and Kubernetes' termination grace (30 seconds).
const DefaultStopGrace = 5 * time.Second

// Options configures a Manager. Zero fields take the defaults below.
type Options struct {
	// MaxProcesses is how many processes started through Start and Run may run at once; one more
	// fails with ResourceExhausted. The main process does not count. Default 64.
	MaxProcesses int
	// ReplayBytes is how much of a process's most recent output (all streams together) is kept for
	// followers and AttachProcess. Default 1 MiB.
	ReplayBytes int
	// DefaultOutputBytes is Run's cap per stream when the caller gives none. Default 1 MiB.
	DefaultOutputBytes int64
	// MaxOutputBytes is the largest cap per stream a Run caller may ask for. Default 64 MiB.
	MaxOutputBytes int64
	// Shell runs Spec.ShellCommand as Shell -c command. Default /bin/sh.
	Shell string
	// Env is the environment processes start from (Spec.Env is set on top). Default: the agent's.
	Env []string
	// Environ, when set, replaces Env for the processes Start and Run start, read at each start:
	// a claim's settings (internal/agent/settings) change it after the agent started. The main
	// process keeps Env.
	Environ func() []string
	// ExitedRetention is how long an exited process stays listable and attachable. Default 5 minutes.
	ExitedRetention time.Duration
	// MaxExited is how many exited processes are kept at most (the oldest go first). Default 64.
	MaxExited int
	// ShutdownGrace is how long Shutdown waits after SIGTERM before SIGKILL. Default 10 seconds.
	ShutdownGrace time.Duration
	// StopGrace is how long a process group the agent ends itself (Spec.Timeout passed, the call
	// that ran it ended, Process.Stop) gets after SIGTERM before SIGKILL. Default DefaultStopGrace.
	StopGrace time.Duration
	// OutputDrain is how long output is still read after a process exited, for the case where a
	// background child it started still holds its stdout or stderr open (`sleep 100 &`): the exit is
	// reported after EOF or after OutputDrain, whichever comes first. Default 200 milliseconds.
	OutputDrain time.Duration
}

func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.MaxProcesses, 64)
	def(&o.ReplayBytes, 1<<20)
	def(&o.MaxExited, 64)
	if o.DefaultOutputBytes == 0 {
		o.DefaultOutputBytes = 1 << 20
	}
	if o.MaxOutputBytes == 0 {
		o.MaxOutputBytes = max(64<<20, o.DefaultOutputBytes)
	}
	if o.Shell == "" {
		o.Shell = "/bin/sh"
	}
	if o.Env == nil {
		o.Env = os.Environ()
	}
	if o.ExitedRetention == 0 {
		o.ExitedRetention = 5 * time.Minute
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = 10 * time.Second
	}
	if o.OutputDrain == 0 {
		o.OutputDrain = 200 * time.Millisecond
	}
	if o.StopGrace == 0 {
		o.StopGrace = DefaultStopGrace
	}
	return o
}

// Manager starts and tracks the processes of a sandbox. Every process runs in its own process
// group (a PTY process leads its own session), which signals and timeouts address as a whole.
type Manager struct {
	opts   Options
	reaper *reaper

	mu      sync.Mutex
	procs   map[string]*Process
	order   []*Process // start order
	running int        // processes from Start and Run that have not exited
	closing bool

	// down is closed when Shutdown has ended: a process group still in its stop grace period
	// (Process.Stop) gets SIGKILL then.
	down     chan struct{}
	downOnce sync.Once
}

// New returns a Manager and starts the agent's reaper (once per OS process; see reaper_linux.go).
// It fails when the options are invalid or the agent, not being PID 1, cannot become a child
// subreaper, because then orphaned grandchildren would escape it.
func New(opts Options) (*Manager, error) {
	opts = opts.withDefaults()
	if opts.MaxProcesses < 0 || opts.ReplayBytes < 0 || opts.MaxExited < 0 || opts.DefaultOutputBytes < 0 ||
		opts.MaxOutputBytes < opts.DefaultOutputBytes || opts.ExitedRetention < 0 || opts.ShutdownGrace < 0 || opts.OutputDrain < 0 || opts.StopGrace < 0 {
		return nil, errors.New("process manager options: sizes and durations must not be negative, and MaxOutputBytes must be at least DefaultOutputBytes")
	}
	r := startReaper()
	if subreaperErr != nil {
		return nil, fmt.Errorf("make the agent a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so it reaps orphaned grandchildren: %w", subreaperErr)
	}
	return &Manager{opts: opts, reaper: r, procs: map[string]*Process{}, down: make(chan struct{})}, nil
}

// Start starts a process. Errors carry connect codes: InvalidArgument for a bad spec (the message
// names the field), ResourceExhausted at MaxProcesses, Unavailable while shutting down.
func (m *Manager) Start(spec Spec) (*Process, error) {
	return m.start(spec, nil)
}

// RunResult is the outcome of Run.
type RunResult struct {
	ID  string
	PID int
	// Stdout and Stderr are the first bytes of each stream, up to the cap; StdoutBytes and
	// StderrBytes are how many the process wrote in total.
	Stdout, Stderr           []byte
	StdoutBytes, StderrBytes int64
	StdoutTruncated          bool
	StderrTruncated          bool
	Exit                     ExitStatus
}

// Run runs a process to completion, writing stdin to it and then closing its stdin, and returns the
// first maxOutput bytes of each stream (0 means Options.DefaultOutputBytes). When ctx ends first,
// the process group is killed and Run returns ctx's error.
func (m *Manager) Run(ctx context.Context, spec Spec, stdin []byte, maxOutput int64) (RunResult, error) {
	if spec.PTY != nil {
		return RunResult{}, invalid("pty: a process run to completion has no terminal; use StartProcess for a PTY")
	}
	if maxOutput == 0 {
		maxOutput = m.opts.DefaultOutputBytes
	}
	if maxOutput < 0 || maxOutput > m.opts.MaxOutputBytes {
		return RunResult{}, invalid("max_output_bytes %d is outside 1 to %d (the agent's maximum); 0 means %d",
			maxOutput, m.opts.MaxOutputBytes, m.opts.DefaultOutputBytes)
	}
	spec.Stdin = len(stdin) > 0
	capt := &capture{max: maxOutput}
	p, err := m.start(spec, capt)
	if err != nil {
		return RunResult{}, err
	}
	if spec.Stdin {
		// Ends with the write, or when the exit closes stdin under a blocked write.
		go func() { _ = p.Input(context.Background(), stdin, true) }()
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.Stop()
		<-p.done
		return RunResult{}, connect.NewError(ctxCode(ctx.Err()), fmt.Errorf(
			"process %s was stopped (SIGTERM, then SIGKILL after %s) because the call ended: %w", p.id, m.opts.StopGrace, ctx.Err()))
	}
	t := p.out.totals()
	capt.mu.Lock()
	defer capt.mu.Unlock()
	return RunResult{
		ID: p.id, PID: p.pid,
		Stdout: capt.buf[Stdout], Stderr: capt.buf[Stderr],
		StdoutBytes: t[Stdout], StderrBytes: t[Stderr],
		StdoutTruncated: t[Stdout] > maxOutput, StderrTruncated: t[Stderr] > maxOutput,
		Exit: p.exit,
	}, nil
}

// MainSpec describes the sandbox container's original command, which the agent supervises.
type MainSpec struct {
	// Argv is the command; a program without a slash is looked up in Env's PATH.
	Argv []string
	// Env is its whole environment. Nil means Options.Env.
	Env []string
	// Dir is its working directory. Empty means the agent's.
	Dir string
	// Stdin, Stdout and Stderr are its standard files. Nil means the agent's own, so the command
	// reads the container's stdin and writes the container log.
	Stdin, Stdout, Stderr *os.File
}

// StartMain starts the container's original command as a child of the agent in its own process
// group, with the agent's standard files by default. It is listed (tag "main") and can be signalled,
// does not count against MaxProcesses, has no timeout, and its output is not kept for followers.
//
// Exiting is the caller's choice: wait on Done (or Wait) and either keep serving (the default for a
// sandbox: the agent still answers exec and file calls, so a crashed command can be inspected) or
// shut down and exit with Exit().Code.
func (m *Manager) StartMain(spec MainSpec) (*Process, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, invalid("the main command is empty; pass it after -- (kubox-agent [flags] -- command args...)")
	}
	env := spec.Env
	if env == nil {
		env = m.opts.Env
	}
	path, err := lookPath(spec.Argv[0], envPath(env), spec.Dir)
	if err != nil {
		return nil, invalid("the main command: %v", err)
	}
	c := command{path: path, argv: slices.Clone(spec.Argv), env: env, dir: spec.Dir}
	files := [3]*os.File{spec.Stdin, spec.Stdout, spec.Stderr}
	for i, std := range [3]*os.File{os.Stdin, os.Stdout, os.Stderr} {
		if files[i] == nil {
			files[i] = std
		}
	}
	p := m.newProcess(c, "main", false, nil)
	p.main = true
	if err := m.launch(p, c, files[:], &syscall.SysProcAttr{Setpgid: true}); err != nil {
		return nil, err
	}
	m.register(p)
	go p.wait()
	return p, nil
}

// Get returns the process with the given id, running or recently exited.
func (m *Manager) Get(id string) (*Process, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prune(time.Now())
	p, ok := m.procs[id]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf(
			"no process %q: ListProcesses shows the processes the agent knows (exited ones for %s)", id, m.opts.ExitedRetention))
	}
	return p, nil
}

// List describes the running processes and, with includeExited, the recently exited ones, oldest
// first.
func (m *Manager) List(includeExited bool) []Info {
	m.mu.Lock()
	m.prune(time.Now())
	procs := slices.Clone(m.order)
	m.mu.Unlock()
	infos := make([]Info, 0, len(procs))
	for _, p := range procs {
		if info := p.Info(); includeExited || info.Exit == nil {
			infos = append(infos, info)
		}
	}
	return infos
}

// Shutdown stops every process: SIGTERM to each process group, SIGKILL to those still running after
// Options.ShutdownGrace, and waits until all were reaped or ctx ends. New starts fail from the
// first call on. When it returns, the groups of processes being stopped (Process.Stop) that still
// have a running member get SIGKILL without waiting for the rest of their grace period.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	m.closing = true
	var live []*Process
	for _, p := range m.order {
		if !p.exited() {
			live = append(live, p)
		}
	}
	m.mu.Unlock()
	defer m.downOnce.Do(func() { close(m.down) })
	for _, p := range live {
		_, _ = m.reaper.kill(p.pid, syscall.SIGTERM, nil)
	}
	grace := time.NewTimer(m.opts.ShutdownGrace)
	defer grace.Stop()
	for i, p := range live {
		select {
		case <-p.done:
			continue
		case <-grace.C:
		case <-ctx.Done():
		}
		for _, q := range live[i:] {
			q.kill()
		}
		break
	}
	for _, p := range live {
		select {
		case <-p.done:
		case <-ctx.Done():
			return fmt.Errorf("stop processes: process %s (pid %d) had not exited when the shutdown ended: %w", p.id, p.pid, ctx.Err())
		}
	}
	return nil
}

// start validates spec, reserves a slot and launches the process.
func (m *Manager) start(spec Spec, capt *capture) (*Process, error) {
	c, err := m.resolve(spec)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.prune(time.Now())
	switch {
	case m.closing:
		m.mu.Unlock()
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("the agent is shutting down and starts no more processes"))
	case m.running >= m.opts.MaxProcesses:
		m.mu.Unlock()
		return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf(
			"the agent already runs %d processes, its maximum; wait for one to exit or stop one with SendSignal", m.opts.MaxProcesses))
	}
	m.running++
	m.mu.Unlock()

	p := m.newProcess(c, spec.Tag, spec.PTY != nil, capt)
	files, sys, err := p.open(spec)
	if err == nil {
		err = m.launch(p, c, files, sys)
	}
	if err != nil {
		m.mu.Lock()
		m.running--
		m.mu.Unlock()
		return nil, err
	}
	m.register(p)
	if spec.FlowControl {
		p.hold.Store(p.out.pace([numStreams]int64{}))
	}
	if spec.Timeout > 0 {
		p.timer = time.AfterFunc(spec.Timeout, func() { p.stop(true) })
	}
	p.reading.Add(len(p.readers))
	for i, f := range p.readers {
		s := Stream(i)
		if p.pty {
			s = PTY
		}
		go p.read(f, s)
	}
	go p.wait()
	return p, nil
}

func (m *Manager) newProcess(c command, tag string, pty bool, capt *capture) *Process {
	var id [8]byte
	_, _ = rand.Read(id[:])
	return &Process{
		m: m, id: hex.EncodeToString(id[:]), argv: c.argv, tag: tag, pty: pty, capture: capt,
		out: newReplay(m.opts.ReplayBytes), status: make(chan unix.WaitStatus, 1), done: make(chan struct{}),
	}
}

// open creates the process's standard files: it returns the child's ends (0, 1, 2) and keeps the
// agent's ends in p.
func (p *Process) open(spec Spec) ([]*os.File, *syscall.SysProcAttr, error) {
	if spec.PTY != nil {
		master, tty, err := openPTY(*spec.PTY)
		if err != nil {
			return nil, nil, connect.NewError(connect.CodeInternal, err)
		}
		p.master, p.stdin, p.readers = master, master, []*os.File{master}
		// The process leads a new session whose controlling terminal is its stdin.
		return []*os.File{tty, tty, tty}, &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}, nil
	}
	var child, parent []*os.File
	fail := func(err error) ([]*os.File, *syscall.SysProcAttr, error) {
		for _, f := range append(child, parent...) {
			_ = f.Close()
		}
		return nil, nil, connect.NewError(connect.CodeInternal, fmt.Errorf("create the process's standard files: %w", err))
	}
	if spec.Stdin {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		child, parent = append(child, r), append(parent, w)
		p.stdin = w
	} else {
		null, err := os.Open(os.DevNull)
		if err != nil {
			return fail(err)
		}
		child = append(child, null)
	}
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		child, parent = append(child, w), append(parent, r)
		p.readers = append(p.readers, r)
	}
	return child, &syscall.SysProcAttr{Setpgid: true}, nil
}

// launch forks and execs the process with files as 0, 1, 2 and registers it with the reaper. The
// child's ends of files are closed here unless they are the agent's own standard files; on failure
// the agent's ends in p are closed too.
func (m *Manager) launch(p *Process, c command, files []*os.File, sys *syscall.SysProcAttr) error {
	fds := make([]uintptr, len(files))
	for i, f := range files {
		fds[i] = f.Fd() // blocking mode, which is what the child expects of its files
	}
	attr := &syscall.ProcAttr{Dir: c.dir, Env: c.env, Files: fds, Sys: sys}
	pid, err := m.reaper.spawn(func() (int, error) {
		return syscall.ForkExec(c.path, c.argv, attr)
	}, func(ws unix.WaitStatus) { p.status <- ws })
	p.started = time.Now()
	for _, f := range files {
		if f != os.Stdin && f != os.Stdout && f != os.Stderr {
			_ = f.Close()
		}
	}
	if err != nil {
		for _, f := range append(p.readers, p.stdin) {
			if f != nil {
				_ = f.Close()
			}
		}
		var errno syscall.Errno
		if errors.As(err, &errno) && (errno == syscall.ENOENT || errno == syscall.EACCES || errno == syscall.ENOEXEC ||
			errno == syscall.ENOTDIR || errno == syscall.EISDIR || errno == syscall.E2BIG) {
			return invalid("start %q: %v", c.argv[0], err)
		}
		return connect.NewError(connect.CodeInternal, fmt.Errorf("start %q: %w", c.argv[0], err))
	}
	p.pid = pid
	return nil
}

func (m *Manager) register(p *Process) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.procs[p.id] = p
	m.order = append(m.order, p)
}

// finished is called once per process when it has exited.
func (m *Manager) finished(p *Process) {
	if p.main {
		return
	}
	m.mu.Lock()
	m.running--
	m.mu.Unlock()
}

// prune forgets exited processes past ExitedRetention, and the oldest beyond MaxExited.
func (m *Manager) prune(now time.Time) {
	exited := 0
	for _, p := range m.order {
		if p.exited() {
			exited++
		}
	}
	keep := m.order[:0]
	for _, p := range m.order {
		if p.exited() && (exited > m.opts.MaxExited || now.Sub(p.exit.At) > m.opts.ExitedRetention) {
			exited--
			delete(m.procs, p.id)
			continue
		}
		keep = append(keep, p)
	}
	clear(m.order[len(keep):])
	m.order = keep
}
