package usage

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// statusWrites is what one sandbox's status writes were over a run.
type statusWrites struct {
	total     int // status writes of the Sandbox controller (the write log)
	usageOnly int // versions whose only change was status.usage: writes usage added
	withUsage int // versions that changed status.usage
	last      *sandboxv1beta1.Sandbox
}

// TestStatusUsageWrittenRarely runs a sandbox through four suspends and three resumes, with usage
// metering on (default summaryInterval, 5m) and off, and counts its status writes: status.usage
// ends up with the three wakes, and usage adds at most one write per suspend (it rides on the
// write that says Suspended when it can), none while the sandbox merely runs.
func TestStatusUsageWrittenRarely(t *testing.T) {
	const suspends = 4
	on := suspendCycles(t, suspends, func(c *configv1alpha1.ControllerConfiguration) {
		c.Usage.Enabled = ptr.To(true)
		c.Usage.PrincipalLabel = principalLabel
	})
	off := suspendCycles(t, suspends, nil)
	t.Logf("status writes over %d suspends: %d with usage (%d of them usage only, %d carrying a new summary), %d without",
		suspends, on.total, on.usageOnly, on.withUsage, off.total)
	u := on.last.Status.Usage
	if u == nil || u.Wakes != suspends-1 {
		t.Fatalf("status.usage %+v after %d suspends and %d resumes, want %d wakes", u, suspends, suspends-1, suspends-1)
	}
	if on.usageOnly > suspends {
		t.Errorf("%d status writes changed only status.usage over %d suspends, want at most one per suspend", on.usageOnly, suspends)
	}
	if off.last.Status.Usage != nil {
		t.Errorf("status.usage %+v with usage metering off, want none", off.last.Status.Usage)
	}
}

// TestStatusUsageAtMostOncePerInterval keeps a sandbox running with summaryInterval 1s: its
// status.usage is written, and no more often than once a second.
func TestStatusUsageAtMostOncePerInterval(t *testing.T) {
	ns := env.NewNamespace(t)
	env.StartKubox(t, ns, func(c *configv1alpha1.ControllerConfiguration) {
		c.Usage.Enabled = ptr.To(true)
		c.Usage.SummaryInterval = &metav1.Duration{Duration: time.Second}
	})
	env.StartKubelet(t, ns)
	sb := testutil.MakeSandbox("runner", ns).Obj()
	changes := watchSandbox(t, ns, "runner")
	env.Create(t, sb)
	waitFor(t, ns, "runner", "Ready", sandboxv1beta1.SandboxConditionReady)
	start := time.Now()
	framework.Eventually(t, func() (bool, string) {
		got := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "runner"}}
		_, _ = env.Get(t, got)
		return got.Status.Usage != nil && got.Status.Usage.RunningSeconds >= 3, "status.usage has not reached 3 running seconds"
	})
	elapsed := time.Since(start)
	w := changes()
	t.Logf("status.usage written %d times (%d of them usage only) in %v of running with a 1s interval", w.withUsage, w.usageOnly, elapsed)
	// One at most per interval since it was Ready, and one for the first, which is due an
	// interval after the sandbox's creation.
	if limit := int(elapsed/time.Second) + 2; w.withUsage > limit {
		t.Errorf("status.usage written %d times in %v with a 1s interval, want at most %d", w.withUsage, elapsed, limit)
	}
	if w.usageOnly == 0 {
		t.Errorf("no status write carried only status.usage while the sandbox ran; want the periodic summary")
	}
}

// suspendCycles runs a fresh sandbox, in a namespace of its own with kubox configured by
// configure, through n suspends and n-1 resumes, and returns its status writes.
func suspendCycles(t *testing.T, n int, configure func(*configv1alpha1.ControllerConfiguration)) statusWrites {
	t.Helper()
	ns := env.NewNamespace(t)
	log := env.NewWriteLog()
	env.StartKubox(t, ns, configure, log.Counting())
	env.StartKubelet(t, ns)
	changes := watchSandbox(t, ns, "cycled")
	env.Create(t, testutil.MakeSandbox("cycled", ns).Obj())
	waitFor(t, ns, "cycled", "Ready", sandboxv1beta1.SandboxConditionReady)
	for i := range n {
		if i > 0 {
			setMode(t, ns, "cycled", sandboxv1beta1.SandboxOperatingModeRunning)
			waitFor(t, ns, "cycled", "Ready", sandboxv1beta1.SandboxConditionReady)
		}
		setMode(t, ns, "cycled", sandboxv1beta1.SandboxOperatingModeSuspended)
		waitFor(t, ns, "cycled", "Suspended", sandboxv1beta1.SandboxConditionSuspended)
	}
	// Let the passes that follow the last suspend settle: the summary is written at it.
	framework.Consistently(t, time.Second, func() (bool, string) { return true, "" })
	w := changes()
	for _, l := range log.Take() {
		if strings.HasPrefix(l, "UPDATE Sandbox/cycled/status ") {
			w.total++
		}
	}
	return w
}

// watchSandbox watches the Sandbox ns/name from now on; the function it returns stops the watch
// and classifies the versions seen.
func watchSandbox(t *testing.T, ns, name string) func() statusWrites {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(ctx, &sandboxv1beta1.SandboxList{}, client.InNamespace(ns),
		client.MatchingFields{"metadata.name": name})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan []*sandboxv1beta1.Sandbox, 1)
	go func() {
		var versions []*sandboxv1beta1.Sandbox
		defer func() { seen <- versions }()
		for ev := range w.ResultChan() {
			if sb, ok := ev.Object.(*sandboxv1beta1.Sandbox); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				versions = append(versions, sb)
			}
		}
	}()
	return func() statusWrites {
		w.Stop()
		cancel()
		versions := <-seen
		var out statusWrites
		for i := 1; i < len(versions); i++ {
			prev, cur := versions[i-1], versions[i]
			if equality.Semantic.DeepEqual(prev.Status.Usage, cur.Status.Usage) {
				continue
			}
			out.withUsage++
			a, b := prev.Status.DeepCopy(), cur.Status.DeepCopy()
			a.Usage, b.Usage = nil, nil
			if equality.Semantic.DeepEqual(a, b) && equality.Semantic.DeepEqual(prev.Spec, cur.Spec) {
				out.usageOnly++
			}
		}
		if len(versions) > 0 {
			out.last = versions[len(versions)-1]
		}
		return out
	}
}
