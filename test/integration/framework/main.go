package framework

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"go.uber.org/goleak"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kubox-dev/kubox/internal/agent/process"
)

// Main is a package's TestMain: it starts one Env, stores it in *env, runs the tests, stops the
// Env, and then fails the run if goroutines started by the tests are still running (goleak, with
// the goroutines that existed before Main ignored). It exits the process.
//
//	var env *framework.Env
//
//	func TestMain(m *testing.M) { framework.Main(m, &env) }
func Main(m *testing.M, env **Env, opts ...MainOption) {
	os.Exit(run(m, env, opts))
}

// MainOption prepares the process before Main notes the goroutines that may outlive the tests.
type MainOption func() error

// WithAgents is the MainOption of packages whose tests run real kubox-agents (StartAgent): it
// starts the agents' reaper of child processes, one goroutine per OS process that runs until the
// process exits, so that goleak does not count it as leaked by the tests. Main has made that
// reaper wait for the agents' own children only (process.ReapOwnChildrenOnly).
func WithAgents() MainOption {
	return func() error {
		procs, err := process.New(process.Options{})
		if err != nil {
			return fmt.Errorf("starting the agent's process reaper: %w", err)
		}
		return procs.Shutdown(context.Background())
	}
}

func run(m *testing.M, env **Env, opts []MainOption) int {
	// The test process waits for children of its own (etcd, kube-apiserver, pytest, node,
	// Chromium) with exec.Cmd; an agent's reaper of every child would take their exit statuses
	// and fail their Wait with ECHILD. Started here, before any agent, and before goleak notes
	// the goroutines that may outlive the tests.
	if err := process.ReapOwnChildrenOnly(); err != nil {
		fmt.Fprintf(os.Stderr, "framework: %v\n", err)
		return 1
	}
	for _, o := range opts {
		if err := o(); err != nil {
			fmt.Fprintf(os.Stderr, "framework: %v\n", err)
			return 1
		}
	}
	if logEnabled() {
		ctrl.SetLogger(funcr.New(func(prefix, args string) {
			fmt.Fprintln(os.Stderr, prefix, args)
		}, funcr.Options{Verbosity: 5, LogTimestamp: true}))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	before := goleak.IgnoreCurrent()

	e, err := Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "framework: %v\n", err)
		return 1
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "framework: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	*env = nil
	if code == 0 {
		if err := goleak.Find(append(leakOptions(), before)...); err != nil {
			fmt.Fprintf(os.Stderr, "framework: goroutines leaked by the tests: %v\n", err)
			code = 1
		}
	}
	return code
}

// leakOptions ignores goroutines that client-go and controller-runtime start once per process and
// never stop; none of them belongs to a test.
func leakOptions() []goleak.Option {
	return []goleak.Option{
		// klog's flush daemon, started on first use.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	}
}
