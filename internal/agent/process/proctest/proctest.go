// Package proctest is what the tests of kubox-agent's process APIs share to show how the agent
// ends a command it stops itself (a timeout, a call that ended): a script whose process group
// records the SIGTERM and keeps a member alive through it, and checks of /proc for what is left.
package proctest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// guard bounds every wait here; it only turns a hang into a failure.
const guard = 30 * time.Second

// Stubborn is a script in its own directory. Run with sh, it starts a child (sleep, in the
// script's process group) that ignores SIGTERM, writes the child's pid to ChildFile once its
// SIGTERM trap is set, and waits. On SIGTERM the shell writes "alive" to TermFile when the child
// is still running, and then exits with 3 or, with LeaderStays, goes on waiting, so only SIGKILL
// ends it. Either way only a SIGKILL to the group ends the child.
type Stubborn struct {
	Dir, Path string
}

// NewStubborn writes the script into a new temporary directory.
func NewStubborn(t testing.TB, leaderStays bool) Stubborn {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	onTerm := `exit 3`
	if leaderStays {
		onTerm = `:`
	}
	script := `dir=$(dirname "$0")
trap "" TERM
sleep 1000 </dev/null >/dev/null 2>&1 &
child=$!
trap 'if kill -0 "$child" 2>/dev/null; then echo alive >"$dir/term"; else echo gone >"$dir/term"; fi; ` + onTerm + `' TERM
echo "$child" >"$dir/child.tmp" && mv "$dir/child.tmp" "$dir/child"
while :; do wait; done
`
	s := Stubborn{Dir: dir, Path: filepath.Join(dir, "stubborn.sh")}
	if err := os.WriteFile(s.Path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// Argv runs the script.
func (s Stubborn) Argv() []string { return []string{"sh", s.Path} }

// Command is Argv as one command line (no quoting needed: a temporary path has no spaces).
func (s Stubborn) Command() string { return "sh " + s.Path }

// Ready waits until the script is ready (its trap set, its child running sleep) and returns the
// child's pid.
func (s Stubborn) Ready(t testing.TB) int {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		b, err := os.ReadFile(filepath.Join(s.Dir, "child"))
		if err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("the script's child file holds %q, not a pid", b)
			}
			// The child is forked before the file is written but may exec sleep after.
			if State(pid, "sleep") != "" {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the script never became ready (its child running sleep, pid in %s): %v", filepath.Join(s.Dir, "child"), err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Term is what the script's SIGTERM trap wrote: "alive" (its child was still running), or ""
// when it never ran, which means the group got no SIGTERM while the shell lived.
func (s Stubborn) Term() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "term"))
	return strings.TrimSpace(string(b))
}

// AssertEndedGracefully checks that the script's process group was ended the graceful way: its
// shell got SIGTERM while its child ran (the trap's record), then the child, which ignores
// SIGTERM, went (only a SIGKILL to the group ends it) and was reaped (a zombie stays in /proc),
// and no child of this process is left a zombie.
func (s Stubborn) AssertEndedGracefully(t testing.TB) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Dir, "child"))
	if err != nil {
		t.Fatalf("the script never started its child: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("the script's child file holds %q, not a pid", b)
	}
	// Gone whether or not it had exec'd sleep yet.
	WaitGone(t, child, "sleep")
	WaitGone(t, child, "sh")
	if got := s.Term(); got != "alive" {
		t.Errorf("the script's SIGTERM trap wrote %q, want %q: the process group was not sent SIGTERM before SIGKILL", got, "alive")
	}
	WaitNoZombies(t)
}

// State is the state letter of pid in /proc ("Z" for a zombie), or "" when there is no such
// process; comm must match, so a reused pid does not count.
func State(pid int, comm string) string {
	st, ok := stat(strconv.Itoa(pid))
	if !ok || st.comm != comm {
		return ""
	}
	return st.state
}

// WaitGone waits until pid (running comm) is neither running nor a zombie.
func WaitGone(t testing.TB, pid int, comm string) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for State(pid, comm) != "" {
		if time.Now().After(deadline) {
			t.Fatalf("process %d (%s) still exists in state %s: it was never killed, or never reaped", pid, comm, State(pid, comm))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Zombies lists the children of this process that are zombies.
func Zombies() []int {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var z []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := stat(e.Name()); ok && st.ppid == self && st.state == "Z" {
			z = append(z, pid)
		}
	}
	return z
}

// WaitNoZombies waits until no child of this process is a zombie (one may be about to be reaped).
func WaitNoZombies(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for z := Zombies(); len(z) > 0; z = Zombies() {
		if time.Now().After(deadline) {
			t.Fatalf("zombie children left unreaped: %v", z)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type procStat struct {
	comm, state string
	ppid        int
}

func stat(pid string) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	open, closeParen := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closeParen < open {
		return procStat{}, false
	}
	f := strings.Fields(s[closeParen+1:])
	if len(f) < 2 {
		return procStat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	return procStat{comm: s[open+1 : closeParen], state: f[0], ppid: ppid}, true
}
