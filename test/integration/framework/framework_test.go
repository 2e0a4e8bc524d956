package framework_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env, framework.WithAgents()) }

// marker is a controller that annotates every ConfigMap it sees with seenBy(id), so a test can tell
// which managers reconciled which objects.
type marker struct {
	client client.Client
	id     string
}

func seenBy(id string) string { return "test.kubox.dev/seen-by-" + id }

func (r *marker) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cm := &corev1.ConfigMap{}
	if err := r.client.Get(ctx, req.NamespacedName, cm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cm.Annotations[seenBy(r.id)] != "" {
		return ctrl.Result{}, nil
	}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[seenBy(r.id)] = "true"
	return ctrl.Result{}, r.client.Update(ctx, cm)
}

// setupMarker registers a marker controller; every manager uses the same controller name.
func setupMarker(id string) func(ctrl.Manager) error {
	return func(mgr ctrl.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).Named("marker").For(&corev1.ConfigMap{}).
			Complete(&marker{client: mgr.GetClient(), id: id})
	}
}

func annotations(t *testing.T, ns, name string) (map[string]string, error) {
	cm := &corev1.ConfigMap{}
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cm)
	return cm.Annotations, err
}

func TestStartManager(t *testing.T) {
	nsA, nsB := env.NewNamespace(t), env.NewNamespace(t)
	mgrA := env.StartManager(t, nsA, setupMarker("a"))
	env.StartManager(t, nsB, setupMarker("b"))

	for _, ns := range []string{nsA, nsB} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "marked", Namespace: ns}}
		if err := env.Client.Create(t.Context(), cm); err != nil {
			t.Fatalf("Creating ConfigMap in %s: %v", ns, err)
		}
	}
	cases := map[string]struct {
		ns   string
		want string
	}{
		"namespace a is reconciled by manager a": {ns: nsA, want: seenBy("a")},
		"namespace b is reconciled by manager b": {ns: nsB, want: seenBy("b")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			framework.Eventually(t, func() (bool, string) {
				got, err := annotations(t, tc.ns, "marked")
				if err != nil {
					return false, err.Error()
				}
				return got[tc.want] == "true", fmt.Sprintf("annotations %v", got)
			})
		})
	}

	// A manager's cache holds only its namespace, so it cannot act on another test's objects.
	err := mgrA.GetClient().List(t.Context(), &corev1.ConfigMapList{}, client.InNamespace(nsB))
	if err == nil {
		t.Errorf("Manager for %s listed ConfigMaps in %s; want an error from its namespace-scoped cache", nsA, nsB)
	}
	got, err := annotations(t, nsA, "marked")
	if err != nil {
		t.Fatalf("Reading ConfigMap: %v", err)
	}
	if v, ok := got[seenBy("b")]; ok {
		t.Errorf("Manager b, watching %s, annotated a ConfigMap in %s (%s=%s)", nsB, nsA, seenBy("b"), v)
	}
}

func TestStartManagerFailsTheTestWhenSetupFails(t *testing.T) {
	ns := env.NewNamespace(t)
	ft := runFake(func(tb testing.TB) {
		env.StartManager(tb, ns, func(ctrl.Manager) error { return fmt.Errorf("no such controller") })
	})
	if !ft.failed || !strings.Contains(ft.msg, "no such controller") {
		t.Errorf("StartManager with a failing setup: failed=%t message %q; want a failure naming the setup error", ft.failed, ft.msg)
	}
}

func TestNewNamespace(t *testing.T) {
	var names []string
	for range 2 {
		t.Run("Sub_Test.With Odd/Characters", func(t *testing.T) {
			names = append(names, env.NewNamespace(t))
		})
	}
	if len(names) != 2 || names[0] == names[1] {
		t.Fatalf("Two tests got namespaces %q; want two different ones", names)
	}
	for _, ns := range names {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			t.Errorf("Namespace %q is not a DNS-1123 label: %v", ns, errs)
		}
		if !strings.HasPrefix(ns, "testnewnamespace-sub-test-with-odd-chara-") {
			t.Errorf("Namespace %q does not start with the sanitized test name", ns)
		}
		// The test that created it has ended, so it is being deleted (there is no namespace
		// controller to finish the deletion).
		got := &corev1.Namespace{}
		err := env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, got)
		if err == nil && got.DeletionTimestamp == nil {
			t.Errorf("Namespace %s outlived its test", ns)
		} else if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("Reading namespace %s: %v", ns, err)
		}
	}
}

// fakeT records a failure instead of failing the real test, and stops the goroutine on Fatal as
// testing.T does.
type fakeT struct {
	testing.TB
	mu      sync.Mutex
	failed  bool
	msg     string
	cleanup []func()
}

func (f *fakeT) Helper() {}
func (f *fakeT) Name() string {
	return "fake"
}
func (f *fakeT) Cleanup(fn func())        { f.cleanup = append(f.cleanup, fn) }
func (f *fakeT) Context() context.Context { return context.Background() }
func (f *fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

// runFake runs fn with a fakeT on its own goroutine, then runs its cleanups, and returns it.
func runFake(fn func(testing.TB)) *fakeT {
	ft := &fakeT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ft)
	}()
	<-done
	for i := len(ft.cleanup) - 1; i >= 0; i-- {
		ft.cleanup[i]()
	}
	return ft
}

func TestWaitFor(t *testing.T) {
	cases := map[string]struct {
		timeout    time.Duration
		cond       func(calls int) (bool, string)
		wantFailed bool
		wantMsg    string
	}{
		"true at once": {
			timeout: framework.DefaultTimeout,
			cond:    func(int) (bool, string) { return true, "" },
		},
		"true on the third call": {
			timeout: framework.DefaultTimeout,
			cond:    func(calls int) (bool, string) { return calls == 3, "" },
		},
		"never true": {
			timeout:    3 * framework.PollInterval,
			cond:       func(calls int) (bool, string) { return false, fmt.Sprintf("still waiting (call %d)", calls) },
			wantFailed: true,
			wantMsg:    "still waiting (call",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			calls := 0
			ft := runFake(func(tb testing.TB) {
				framework.WaitFor(tb, tc.timeout, func() (bool, string) {
					calls++
					return tc.cond(calls)
				})
			})
			if ft.failed != tc.wantFailed || !strings.Contains(ft.msg, tc.wantMsg) {
				t.Errorf("WaitFor failed=%t with %q; want failed=%t with a message containing %q", ft.failed, ft.msg, tc.wantFailed, tc.wantMsg)
			}
		})
	}
}

func TestConsistently(t *testing.T) {
	cases := map[string]struct {
		cond       func(calls int) (bool, string)
		wantFailed bool
		wantMsg    string
	}{
		"always true": {
			cond: func(int) (bool, string) { return true, "" },
		},
		"false on the second call": {
			cond:       func(calls int) (bool, string) { return calls < 2, fmt.Sprintf("call %d", calls) },
			wantFailed: true,
			wantMsg:    "call 2",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			calls := 0
			ft := runFake(func(tb testing.TB) {
				// Long enough for a second call however slow the machine is.
				framework.Consistently(tb, 20*framework.PollInterval, func() (bool, string) {
					calls++
					return tc.cond(calls)
				})
			})
			if ft.failed != tc.wantFailed || !strings.Contains(ft.msg, tc.wantMsg) {
				t.Errorf("Consistently failed=%t with %q; want failed=%t with a message containing %q", ft.failed, ft.msg, tc.wantFailed, tc.wantMsg)
			}
		})
	}
}
