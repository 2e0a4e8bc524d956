package process

import (
	"errors"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The reaper is the only code in the agent that waits for children. There is one per OS process (a
// package singleton, however many Managers exist), because wait(-1) takes the status of any child:
// two waiters would steal each other's statuses, and so would exec.Cmd.Wait or os.Process.Wait
// anywhere in the agent, so nothing else may call them.
//
// It runs on SIGCHLD. For each waitable child it first peeks at the pid with waitid(WNOWAIT), which
// leaves the zombie in place so the pid cannot be reused yet, looks the pid up under the same lock
// that covers fork plus registration (so a child that exits before its starter registered it is
// still found), and only then reaps it with wait4(pid). A status for a pid nobody registered is an
// orphan: a grandchild re-parented to the agent because the agent is PID 1 or a subreaper; it is
// reaped and dropped so no zombie stays behind.
type reaper struct {
	// mu covers fork plus registration in spawn, the lookup of a reaped pid, and signals: a pid is in
	// waiters exactly while its process (or zombie) exists, so kill(-pid) never reaches a reused pid.
	mu      sync.Mutex
	waiters map[int]func(unix.WaitStatus)
	// orphans counts statuses reaped for pids nobody registered.
	orphans int
	// ownOnly: wait for the registered pids only, never for every child (ReapOwnChildrenOnly).
	ownOnly bool
}

var (
	theReaper     *reaper
	theReaperOnce sync.Once
	// subreaperErr is the result of prctl(PR_SET_CHILD_SUBREAPER) (nil when the agent is PID 1).
	subreaperErr error
)

// startReaper starts the process-wide reaper once. When the agent is not PID 1 it also makes the
// agent a child subreaper (PR_SET_CHILD_SUBREAPER): then a process whose parent exits (the `sleep &`
// of an exited shell) is re-parented to the agent rather than to PID 1, and the agent reaps it. As
// PID 1 the kernel re-parents orphans to the agent anyway.
func startReaper() *reaper {
	theReaperOnce.Do(func() { theReaper = runReaper(false) })
	return theReaper
}

// ReapOwnChildrenOnly makes the process-wide reaper, which the first New starts, wait only for
// the processes the agent starts: it reaps no orphan and does not make the process a subreaper.
// It is for a process that runs agents beside children of its own that it waits for with
// exec.Cmd or os.Process (the integration tests run etcd, kube-apiserver, pytest, node and
// Chromium beside in-process agents): a reaper of every child takes their exit statuses, and
// their Wait fails with ECHILD ("waitid: no child processes"). kubox-agent itself never calls it.
// It fails when the reaper already runs and waits for every child.
func ReapOwnChildrenOnly() error {
	theReaperOnce.Do(func() { theReaper = runReaper(true) })
	if !theReaper.ownOnly {
		return errors.New("the agent's process reaper already runs and waits for every child: call ReapOwnChildrenOnly before the process's first process.New")
	}
	return nil
}

// runReaper starts the reaper's goroutine; unless ownOnly, and unless the agent is PID 1, it
// first makes the agent a child subreaper.
func runReaper(ownOnly bool) *reaper {
	if !ownOnly && os.Getpid() != 1 {
		subreaperErr = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}
	r := newReaperState(ownOnly)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	go r.loop(sigs)
	return r
}

// newReaperState is a reaper that nothing runs yet.
func newReaperState(ownOnly bool) *reaper {
	return &reaper{waiters: map[int]func(unix.WaitStatus){}, ownOnly: ownOnly}
}

func (r *reaper) loop(sigs <-chan os.Signal) {
	for {
		// A child that exited before Notify took effect sent its SIGCHLD to nobody: reap first.
		r.reapAll()
		<-sigs
	}
}

// spawn runs fork under the lock and registers onExit for the new pid. onExit runs on the reaper's
// goroutine and must not block.
func (r *reaper) spawn(fork func() (int, error), onExit func(unix.WaitStatus)) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := fork()
	if err != nil {
		return 0, err
	}
	r.waiters[pid] = onExit
	return pid, nil
}

// kill sends sig to the process group pid while the process is still registered (not yet reaped).
// It reports false when the process was already reaped. before, if not nil, runs first under the
// lock, so what it records is visible to the process's exit callback.
func (r *reaper) kill(pid int, sig syscall.Signal, before func()) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.waiters[pid]; !ok {
		return false, nil
	}
	if before != nil {
		before()
	}
	err := unix.Kill(-pid, sig)
	if errors.Is(err, unix.ESRCH) {
		err = nil // the group is empty but the leader's zombie is not reaped yet
	}
	return true, err
}

// killGroup sends SIGKILL to the process group pgid, whose leader the agent started: while the
// leader is registered, as kill does; once it was reaped, only while /proc shows a running member
// of the group. A group's number stays allocated while any process is in it, so the kernel cannot
// give it to a new process while that member lives, and the agent's own forks (under mu) cannot
// take it between the check and the signal either.
func (r *reaper) killGroup(pgid int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.waiters[pgid]; !ok && !groupAlive(pgid) {
		return nil
	}
	err := unix.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, unix.ESRCH) {
		err = nil // its last member exited since
	}
	return err
}

// groupAlive reports whether the process group pgid has a member that is not a zombie.
func (r *reaper) groupAlive(pgid int) bool { return groupAlive(pgid) }

func groupAlive(pgid int) bool {
	if pgid <= 1 {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: signalling a group that is gone is harmless, missing one is not
	}
	want := strconv.Itoa(pgid)
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited since the listing
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) >= 3 && f[2] == want && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// reapAll reaps every child that is waitable now (with ownOnly, every registered one).
func (r *reaper) reapAll() {
	for {
		pid := r.nextExited()
		if pid == 0 {
			return
		}
		r.mu.Lock()
		onExit, ok := r.waiters[pid]
		delete(r.waiters, pid)
		if !ok {
			r.orphans++
		}
		r.mu.Unlock()
		var ws unix.WaitStatus
		for {
			_, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		if ok {
			onExit(ws) // err is impossible for our own zombie; a zero status beats a hung process
		}
	}
}

// nextExited is a child that has exited, its zombie left in place (any child; with ownOnly, a
// registered one), or 0 when none has.
func (r *reaper) nextExited() int {
	if !r.ownOnly {
		return peekExited(unix.P_ALL, 0)
	}
	r.mu.Lock()
	pids := slices.Collect(maps.Keys(r.waiters))
	r.mu.Unlock()
	for _, pid := range pids {
		if peekExited(unix.P_PID, pid) == pid {
			return pid
		}
	}
	return 0
}

// peekExited is the pid of an exited child that idType and id select (waitid), left unreaped;
// 0 when none has exited or there is none (ECHILD).
func peekExited(idType, id int) int {
	for {
		var info unix.Siginfo
		err := unix.Waitid(idType, id, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0
		}
		return siginfoPid(&info)
	}
}

// orphanCount is how many orphans the reaper has reaped (for tests).
func (r *reaper) orphanCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.orphans
}

// siginfoPid reads si_pid from a siginfo_t filled by waitid: the first field of the union that
// follows si_signo, si_errno and si_code, aligned to a pointer (offset 16 on 64-bit Linux, 12 on
// 32-bit). x/sys/unix does not name the union's fields.
func siginfoPid(info *unix.Siginfo) int {
	const ptr = unsafe.Sizeof(uintptr(0))
	const off = (3*unsafe.Sizeof(int32(0)) + ptr - 1) &^ (ptr - 1)
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), off)))
}
