package devenv

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestStartAndStop(t *testing.T) {
	l := NewLayout(t.TempDir())
	for _, d := range []string{l.Logs, l.Pids} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	proc, err := Start(l, Component{Name: "sleeper", Argv: []string{"/bin/sh", "-c", "echo started; exec sleep 60"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	recorded, ok, err := ReadPidFile(l.PidFile("sleeper"))
	if err != nil || !ok || recorded != proc {
		t.Fatalf("pidfile holds %+v (ok %v, err %v), want %+v", recorded, ok, err, proc)
	}
	if !proc.Alive() {
		t.Fatal("the started process is not alive")
	}
	if reused := (Proc{PID: proc.PID, StartTime: proc.StartTime + 1}); reused.Alive() {
		t.Error("a process with the same PID but another start time counts as alive")
	}
	if err := proc.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if proc.Alive() {
		t.Error("the process is alive after Stop")
	}
	waitLog(t, l, "started")
}

func waitLog(t *testing.T, l Layout, want string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(LogTail(l, "sleeper", 5), want) {
			return
		}
	}
	t.Errorf("log of sleeper lacks %q:\n%s", want, LogTail(l, "sleeper", 5))
}
