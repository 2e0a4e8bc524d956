package activity

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeProc is a process of a fake /proc tree.
type fakeProc struct {
	pid, ppid, pgrp int
	state           string
	cmdline         string // NUL-separated, as the kernel writes it
	comm            string
	startTicks      uint64
}

// fakeProcRoot writes a /proc tree with the given processes and a boot time (0: none).
func fakeProcRoot(t *testing.T, boot int64, procs ...fakeProc) string {
	t.Helper()
	root := t.TempDir()
	write := func(name, content string) {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stat := "cpu  1 2 3 4\nprocesses 99\n"
	if boot != 0 {
		stat += fmt.Sprintf("btime %d\n", boot)
	}
	write(filepath.Join(root, "stat"), stat)
	write(filepath.Join(root, "self", "stat"), "not a pid directory")
	for _, p := range procs {
		dir := filepath.Join(root, fmt.Sprint(p.pid))
		comm := p.comm
		if comm == "" {
			comm = "cmd"
		}
		state := p.state
		if state == "" {
			state = "S"
		}
		// Fields 3 to 22: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
		// utime stime cutime cstime priority nice threads itrealvalue starttime; then more.
		write(filepath.Join(dir, "stat"), fmt.Sprintf("%d (%s) %s %d %d %d 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 %d 1000 10 18446744073709551615\n",
			p.pid, comm, state, p.ppid, p.pgrp, p.pgrp, p.startTicks))
		write(filepath.Join(dir, "cmdline"), p.cmdline)
		write(filepath.Join(dir, "comm"), comm+"\n")
	}
	return root
}

func pids(procs []Process) []int {
	out := make([]int, len(procs))
	for i, p := range procs {
		out[i] = p.PID
	}
	return out
}

// The tree of a sandbox: a pause-like PID 1 runs the agent (10), which runs the main command (20,
// with a child 21 and a grandchild 22 in its group, and 23 that left the group but is still its
// child) and processes started through its APIs (30 and its child 31); 40 is a daemon re-parented
// to the agent; 50 a zombie; 2 and 3 kernel threads of a host PID namespace.
func sandboxTree(t *testing.T) string {
	return fakeProcRoot(t, 1_700_000_000,
		fakeProc{pid: 1, ppid: 0, pgrp: 1, cmdline: "/pause\x00"},
		fakeProc{pid: 2, ppid: 0, pgrp: 0, cmdline: "", comm: "kthreadd"},
		fakeProc{pid: 3, ppid: 2, pgrp: 0, cmdline: "", comm: "kworker/0:1"},
		fakeProc{pid: 10, ppid: 1, pgrp: 10, cmdline: "/.kubox/bin/kubox-agent\x00--\x00server\x00"},
		fakeProc{pid: 20, ppid: 10, pgrp: 20, cmdline: "server\x00"},
		fakeProc{pid: 21, ppid: 20, pgrp: 20, cmdline: "worker\x00"},
		fakeProc{pid: 22, ppid: 10, pgrp: 20, cmdline: "orphaned worker\x00"},
		fakeProc{pid: 23, ppid: 21, pgrp: 23, cmdline: "setsid child\x00"},
		fakeProc{pid: 30, ppid: 10, pgrp: 30, cmdline: "make\x00-j4\x00", startTicks: 12_345},
		fakeProc{pid: 31, ppid: 30, pgrp: 30, cmdline: "cc\x00-c\x00x.c\x00"},
		fakeProc{pid: 40, ppid: 10, pgrp: 40, cmdline: "", comm: "daemon (x)"},
		fakeProc{pid: 50, ppid: 10, pgrp: 50, state: "Z", cmdline: "", comm: "zombie"},
	)
}

func TestRunningLeavesOutTheAgentTheMainTreeZombiesAndKernelThreads(t *testing.T) {
	root := sandboxTree(t)
	procs, err := Processes{Root: root, Self: 10, Main: func() int { return 20 }}.Running()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(pids(procs)), "[30 31 40]"; got != want {
		t.Fatalf("running pids %s, want %s (everything: %+v)", got, want, procs)
	}
	if procs[0].Command != "make -j4" {
		t.Errorf("command %q, want %q", procs[0].Command, "make -j4")
	}
	if want := time.Unix(1_700_000_000+123, 450_000_000); !procs[0].Start.Equal(want) {
		t.Errorf("start %s, want %s", procs[0].Start, want)
	}
	if procs[2].Command != "[daemon (x)]" {
		t.Errorf("a process without a command line is shown by name: %q", procs[2].Command)
	}
}

func TestRunningWithoutAMainCommandCountsItsFormerTree(t *testing.T) {
	root := sandboxTree(t)
	procs, err := Processes{Root: root, Self: 10}.Running()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(pids(procs)), "[20 21 22 23 30 31 40]"; got != want {
		t.Fatalf("running pids %s, want %s", got, want)
	}
}

func TestRunningCutsLongCommandLinesToValidUTF8(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes
	root := fakeProcRoot(t, 0,
		fakeProc{pid: 1, ppid: 0, pgrp: 1, cmdline: "agent\x00"},
		fakeProc{pid: 5, ppid: 1, pgrp: 5, cmdline: "x" + long + "\x00\xff\x00"})
	procs, err := Processes{Root: root, Self: 1}.Running()
	if err != nil || len(procs) != 1 {
		t.Fatalf("Running: %v, %+v", err, procs)
	}
	c := procs[0].Command
	if len(c) > MaxCommandBytes || len(c) < MaxCommandBytes-1 || !strings.HasPrefix(c, "xéé") || !utf8Valid(c) {
		t.Errorf("command of %d bytes %q: want at most %d bytes of valid UTF-8", len(c), c, MaxCommandBytes)
	}
	if !procs[0].Start.IsZero() {
		t.Errorf("start %s without a boot time, want zero", procs[0].Start)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "?") == s }

func TestRunningFailsWhenProcCannotBeRead(t *testing.T) {
	if _, err := (Processes{Root: filepath.Join(t.TempDir(), "missing")}).Running(); err == nil {
		t.Fatal("Running on a missing /proc succeeded; the controller would take it for an idle sandbox")
	}
}

func TestRunningReadsTheRealProc(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	procs, err := Processes{Self: os.Getpid()}.Running()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.PID == os.Getpid() || p.PID == os.Getppid() {
			t.Errorf("the agent itself or its parent is listed: %+v", p)
		}
	}
}

func TestParseStatWithParenthesesInTheName(t *testing.T) {
	s, err := parseStat([]byte("77 (a) b (c)) R 5 6 6 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 999 0 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.pid != 77 || s.state != 'R' || s.ppid != 5 || s.pgrp != 6 || s.startTicks != 999 {
		t.Errorf("parsed %+v", s)
	}
}
