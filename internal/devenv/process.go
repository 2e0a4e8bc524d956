package devenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc identifies a process we started: its PID plus its start time (field 22 of
// /proc/<pid>/stat), so a reused PID is never mistaken for ours.
type Proc struct {
	PID       int
	StartTime uint64
}

// Start runs comp detached (own session, stdin from /dev/null, output appended to its log) and
// records it in its pidfile. The process keeps running after kubox exits.
func Start(l Layout, comp Component, env []string) (Proc, error) {
	logf, err := os.OpenFile(l.LogFile(comp.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return Proc{}, err
	}
	defer func() { _ = logf.Close() }()
	_, _ = fmt.Fprintf(logf, "\n=== kubox dev: starting %s at %s\n=== %s\n", comp.Name,
		time.Now().UTC().Format(time.RFC3339), strings.Join(comp.Argv, " "))
	cmd := exec.Command(comp.Argv[0], comp.Argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = l.Root
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return Proc{}, fmt.Errorf("start %s: %w", comp.Name, err)
	}
	p := Proc{PID: cmd.Process.Pid}
	p.StartTime, _ = startTime(p.PID)
	_ = cmd.Process.Release()
	return p, writePidFile(l.PidFile(comp.Name), p)
}

func writePidFile(path string, p Proc) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, fmt.Appendf(nil, "%d %d\n", p.PID, p.StartTime), 0o644)
}

// ReadPidFile returns the recorded process, or ok=false when there is no pidfile.
func ReadPidFile(path string) (p Proc, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Proc{}, false, nil
	}
	if err != nil {
		return Proc{}, false, err
	}
	if _, err := fmt.Sscanf(string(data), "%d %d", &p.PID, &p.StartTime); err != nil {
		return Proc{}, false, fmt.Errorf("pidfile %s is malformed (%q): remove it", path, data)
	}
	return p, true, nil
}

// Alive reports whether p still runs: same PID, same start time, and not a zombie.
func (p Proc) Alive() bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
	if err != nil {
		return false
	}
	state, start, err := parseStat(string(stat))
	return err == nil && state != "Z" && state != "X" && (p.StartTime == 0 || start == p.StartTime)
}

func startTime(pid int) (uint64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	_, start, err := parseStat(string(stat))
	return start, err
}

// parseStat returns the state and start time from a /proc/<pid>/stat line. The command name
// (field 2) may hold spaces and parentheses, so fields are counted after its last ')'.
func parseStat(stat string) (state string, start uint64, err error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return "", 0, fmt.Errorf("malformed stat %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 20 {
		return "", 0, fmt.Errorf("short stat %q", stat)
	}
	start, err = strconv.ParseUint(f[19], 10, 64) // field 22 overall
	return f[0], start, err
}

// Stop sends SIGTERM to p, waits up to grace for it to exit, then sends SIGKILL.
func (p Proc) Stop(grace time.Duration) error {
	if !p.Alive() {
		return nil
	}
	if err := syscall.Kill(p.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal pid %d: %w", p.PID, err)
	}
	if waitGone(p, grace) {
		return nil
	}
	_ = syscall.Kill(p.PID, syscall.SIGKILL)
	if waitGone(p, 5*time.Second) {
		return nil
	}
	return fmt.Errorf("pid %d did not exit after SIGKILL", p.PID)
}

func waitGone(p Proc, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if !p.Alive() {
			return true
		}
	}
	return !p.Alive()
}

// LogTail returns the last n lines of a component's log, for error messages.
func LogTail(l Layout, name string, n int) string {
	data, err := os.ReadFile(l.LogFile(name))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
