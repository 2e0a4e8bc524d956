package framework

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// ManagerOption changes the options StartManager builds a manager with.
type ManagerOption func(*ctrl.Options)

// ManagerOptions returns the options StartManager uses for a manager that watches namespace:
// no metrics or health endpoints, no leader election, and controller names that may repeat, so
// every test can register the same controllers. An empty namespace watches all of them.
func (e *Env) ManagerOptions(namespace string) ctrl.Options {
	opts := ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if namespace != "" {
		opts.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}}
	}
	return opts
}

// StartManager starts a controller-runtime manager whose cache sees only namespace (so managers of
// tests running in parallel leave each other's objects alone), after setup has registered
// controllers with it. The manager stops, and StartManager's cleanup waits for it, when the test
// ends; a manager that fails while the test runs fails the test.
//
// Set up controllers with controller.Options{SkipNameValidation: ptr.To(true)} when they take
// their own options; the manager-wide setting covers those that do not.
func (e *Env) StartManager(t testing.TB, namespace string, setup func(ctrl.Manager) error, opts ...ManagerOption) ctrl.Manager {
	t.Helper()
	mgr, _ := e.startManager(t, namespace, setup, opts...)
	return mgr
}

// startManager is StartManager; it also returns a function that stops the manager before the
// test ends, after which the manager's error is not reported: the test stopped it on purpose.
func (e *Env) startManager(t testing.TB, namespace string, setup func(ctrl.Manager) error, opts ...ManagerOption) (ctrl.Manager, func()) {
	t.Helper()
	o := e.ManagerOptions(namespace)
	for _, opt := range opts {
		opt(&o)
	}
	mgr, err := ctrl.NewManager(e.Config, o)
	if err != nil {
		t.Fatalf("Creating a manager: %v", err)
	}
	if err := setup(mgr); err != nil {
		t.Fatalf("Setting up the manager: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func(report bool) {
		once.Do(func() {
			cancel()
			if err := <-done; report && err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Manager stopped with an error: %v", err)
			}
		})
	}
	t.Cleanup(func() { stop(true) })

	syncCtx, syncCancel := context.WithTimeout(ctx, DefaultTimeout)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatalf("The manager's cache did not sync within %v", DefaultTimeout)
	}
	return mgr, func() { stop(false) }
}

// logEnabled reports whether KUBOX_TEST_LOG asks for controller-runtime's logs.
func logEnabled() bool {
	v := os.Getenv("KUBOX_TEST_LOG")
	return v != "" && v != "0" && v != "false"
}
