package activity

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultProcRoot is where the kernel's process information is mounted.
const DefaultProcRoot = "/proc"

// MaxCommandBytes is how much of a process's command line a Process keeps.
const MaxCommandBytes = 256

// clockTicks is the unit of the start time in /proc/<pid>/stat: USER_HZ, which the kernel fixes
// at 100 for user space on every architecture kubox runs on.
const clockTicks = 100

// kthreadd is the parent of every kernel thread; they are visible only in a host PID namespace.
const kthreadd = 2

// Process is a process that keeps a sandbox awake.
type Process struct {
	PID int
	// Command is the command line, its arguments joined by spaces, cut to MaxCommandBytes.
	Command string
	// Start is when it started (zero when the boot time is unknown).
	Start time.Time
}

// Processes scans a /proc tree for the processes that keep a sandbox awake.
type Processes struct {
	// Root is the /proc mount to read (DefaultProcRoot when empty); tests give a fake tree.
	Root string
	// Self is the agent's pid: it, and its ancestors (a wrapper shell, a pause process), are not
	// activity.
	Self int
	// Main returns the main command's pid (0: none): its process group and every descendant of
	// it are the sandbox's own work, not activity.
	Main func() int
}

// stat is what Running needs of /proc/<pid>/stat.
type stat struct {
	pid, ppid, pgrp int
	state           byte
	startTicks      uint64
}

// Running returns the processes other than the agent, its ancestors, the main command's process
// group and tree, kernel threads and zombies, ordered by pid. A process that exits during the
// scan is skipped.
func (p Processes) Running() ([]Process, error) {
	root := p.Root
	if root == "" {
		root = DefaultProcRoot
	}
	stats, err := readStats(root)
	if err != nil {
		return nil, err
	}
	main := 0
	if p.Main != nil {
		main = p.Main()
	}
	own := p.excluded(stats, main)
	boot := bootTime(root)
	var out []Process
	for _, s := range stats {
		if own(s.pid) || s.state == 'Z' || s.state == 'X' || s.pid == kthreadd || s.ppid == kthreadd {
			continue
		}
		cmd, err := command(root, s.pid)
		if err != nil {
			continue // exited since it was listed
		}
		proc := Process{PID: s.pid, Command: cmd}
		if !boot.IsZero() {
			proc.Start = boot.Add(time.Duration(s.startTicks) * time.Second / clockTicks)
		}
		out = append(out, proc)
	}
	slices.SortFunc(out, func(a, b Process) int { return a.PID - b.PID })
	return out, nil
}

// excluded returns whether a pid is the agent's own or the main command's: the agent, its
// ancestors, and, when main is set, its process group and its descendants (a daemon it started
// that left the group and was re-parented to the agent is no longer its descendant: it counts).
func (p Processes) excluded(stats map[int]stat, main int) func(int) bool {
	own := map[int]bool{}
	for pid := p.Self; pid > 0 && !own[pid]; pid = stats[pid].ppid {
		own[pid] = true
	}
	underMain := map[int]bool{}
	var isUnderMain func(pid int, depth int) bool
	isUnderMain = func(pid, depth int) bool {
		if main <= 0 || pid <= 0 || depth > len(stats) {
			return false
		}
		if v, ok := underMain[pid]; ok {
			return v
		}
		s, ok := stats[pid]
		v := pid == main || ok && (s.pgrp == main || isUnderMain(s.ppid, depth+1))
		underMain[pid] = v
		return v
	}
	return func(pid int) bool { return own[pid] || isUnderMain(pid, 0) }
}

// readStats reads /proc/<pid>/stat of every process listed under root.
func readStats(root string) (map[int]stat, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("listing processes in %s: %w", root, err)
	}
	stats := make(map[int]stat, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, e.Name(), "stat"))
		if err != nil {
			continue // exited since it was listed
		}
		if s, err := parseStat(data); err == nil && s.pid == pid {
			stats[pid] = s
		}
	}
	return stats, nil
}

// parseStat reads "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
// cmajflt utime stime cutime cstime priority nice num_threads itrealvalue starttime ...". comm
// may hold spaces and parentheses, so the fields after it are found from its last ')'.
func parseStat(data []byte) (stat, error) {
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return stat{}, errors.New("no command name")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(data[:open])))
	if err != nil {
		return stat{}, err
	}
	f := strings.Fields(string(data[end+1:]))
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return stat{}, errors.New("too few fields")
	}
	s := stat{pid: pid, state: f[0][0]}
	if s.ppid, err = strconv.Atoi(f[1]); err != nil {
		return stat{}, err
	}
	if s.pgrp, err = strconv.Atoi(f[2]); err != nil {
		return stat{}, err
	}
	if s.startTicks, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return stat{}, err
	}
	return s, nil
}

// command reads a process's command line: its arguments joined by spaces, or its name in
// brackets when it has none, as ps shows it; valid UTF-8, cut to MaxCommandBytes.
func command(root string, pid int) (string, error) {
	dir := filepath.Join(root, strconv.Itoa(pid))
	data, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return "", err
	}
	cmd := strings.TrimSpace(string(bytes.ReplaceAll(bytes.TrimRight(data, "\x00"), []byte{0}, []byte{' '})))
	if cmd == "" {
		comm, err := os.ReadFile(filepath.Join(dir, "comm"))
		if err != nil {
			return "", err
		}
		cmd = "[" + strings.TrimSpace(string(comm)) + "]"
	}
	return truncate(strings.ToValidUTF8(cmd, "\uFFFD"), MaxCommandBytes), nil
}

// truncate cuts s to at most n bytes without splitting a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// bootTime reads the boot time (btime) from <root>/stat; zero when it cannot.
func bootTime(root string) time.Time {
	data, err := os.ReadFile(filepath.Join(root, "stat"))
	if err != nil {
		return time.Time{}
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			if sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(sec, 0)
			}
		}
	}
	return time.Time{}
}
