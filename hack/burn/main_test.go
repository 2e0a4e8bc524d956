package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for the burner: with BURN_AS_MAIN set it runs main, so
// the tests below can signal a real process.
func TestMain(m *testing.M) {
	if os.Getenv("BURN_AS_MAIN") == "1" {
		os.Args = append([]string{os.Args[0]}, strings.Fields(os.Getenv("BURN_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func startBurner(t *testing.T, args string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "BURN_AS_MAIN=1", "BURN_ARGS="+args)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// waitPIDFile waits for the burner to write its PID file, or to exit without writing it.
func waitPIDFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no pid file %s after 2m", path)
	return ""
}

// TestBurnerStopsOnSignal: the burner writes its own PID to the file, and SIGTERM or SIGINT to
// that PID stops it with exit 0 and removes the file (a trap that kills the PID leaves nothing).
func TestBurnerStopsOnSignal(t *testing.T) {
	for name, sig := range map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT} {
		t.Run(name, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "burn.pid")
			cmd := startBurner(t, "-workers 2 -pidfile "+pidfile)
			pid := waitPIDFile(t, pidfile)
			if pid != strconv.Itoa(cmd.Process.Pid) {
				t.Fatalf("pid file says %q, the burner is %d", pid, cmd.Process.Pid)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("burner after %s: %v, want exit 0", name, err)
			}
			if _, err := os.Stat(pidfile); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("pid file after %s: %v, want it removed", name, err)
			}
		})
	}
}

// TestBurnerRefuses: bad flags and a PID file that is already there (perhaps a burner still
// running) fail before any worker starts, and the existing file is left as it was.
func TestBurnerRefuses(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.pid")
	if err := os.WriteFile(existing, []byte("12345\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		workers int
		pidfile string
		wantErr string
	}{
		"no pid file":      {workers: 1, wantErr: "-pidfile is required"},
		"no workers":       {workers: 0, pidfile: filepath.Join(dir, "a.pid"), wantErr: "need at least 1 worker"},
		"pid file present": {workers: 1, pidfile: existing, wantErr: "exists: stop the burner"},
		"no such dir":      {workers: 1, pidfile: filepath.Join(dir, "nope", "b.pid"), wantErr: "writing pid file"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := run(ctx, tc.workers, tc.pidfile)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("run: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "12345\n" {
		t.Fatalf("existing pid file now %q, want it untouched", b)
	}
}
