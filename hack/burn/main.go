// Command burn keeps the machine's CPUs busy so a test tier can be run the way a loaded machine
// runs it (`make test-integration-loaded`; CI runs the integration tier under it once). It starts
// N workers that spin until the process gets SIGTERM or SIGINT, writes its PID to the file -pidfile
// names once they run, and on the signal stops them, removes the file and exits 0. Stop it by that
// PID (kill "$(cat FILE)"), never by name: other people's burners and tests share the machine.
//
// Usage: go run ./hack/burn -pidfile FILE [-workers N]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
)

func main() {
	pidfile := flag.String("pidfile", "", "the file to write this process's PID to (required; must not exist)")
	workers := flag.Int("workers", runtime.NumCPU(), "how many busy workers to run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, *workers, *pidfile); err != nil {
		fmt.Fprintf(os.Stderr, "burn: %v\n", err)
		os.Exit(2)
	}
}

// run starts workers busy goroutines, writes the PID file, and blocks until ctx is done; then it
// stops the workers and removes the file.
func run(ctx context.Context, workers int, pidfile string) error {
	if pidfile == "" {
		return errors.New("-pidfile is required: name the file the burner's PID goes to, so it can be stopped by PID")
	}
	if workers < 1 {
		return fmt.Errorf("-workers %d: need at least 1 worker", workers)
	}
	if runtime.GOMAXPROCS(0) < workers {
		runtime.GOMAXPROCS(workers)
	}
	var stopped atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() { defer wg.Done(); spin(&stopped) }()
	}
	err := writePID(pidfile)
	if err == nil {
		<-ctx.Done()
		err = os.Remove(pidfile)
	}
	stopped.Store(true)
	wg.Wait()
	return err
}

// spin burns one CPU until stopped is set.
func spin(stopped *atomic.Bool) {
	x := uint64(1)
	for !stopped.Load() {
		x = x*6364136223846793005 + 1442695040888963407
	}
	runtime.KeepAlive(x)
}

// writePID writes the PID to a temporary file beside path and renames it into place, so a reader
// never sees a partial PID. It refuses to replace a file that is there: that may be the PID of a
// burner still running, which would then never be stopped.
func writePID(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("pid file %s exists: stop the burner it names (kill \"$(cat %s)\") or remove it, then start again", path, path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".burn-pid-*")
	if err != nil {
		return fmt.Errorf("writing pid file %s: %w", path, err)
	}
	_, err = tmp.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing pid file %s: %w", path, err)
	}
	return nil
}
