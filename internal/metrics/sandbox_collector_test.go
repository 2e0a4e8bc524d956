package metrics

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := sandboxv1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// sandboxBuilder adds the metric-relevant fields to testutil's Sandbox builder.
type sandboxBuilder struct{ w *testutil.SandboxWrapper }

func makeSandbox(name, namespace string) sandboxBuilder {
	return sandboxBuilder{testutil.MakeSandbox(name, namespace)}
}

func (b sandboxBuilder) label(k, v string) sandboxBuilder {
	b.w.Label(k, v)
	return b
}

func (b sandboxBuilder) template(name string) sandboxBuilder {
	b.w.Annotation(sandboxv1beta1.SandboxTemplateRefAnnotation, name)
	return b
}

func (b sandboxBuilder) ready(status metav1.ConditionStatus, reason string) sandboxBuilder {
	b.w.Condition(metav1.Condition{
		Type: sandboxv1beta1.SandboxConditionReady, Status: status, Reason: reason,
		LastTransitionTime: metav1.Now(),
	})
	return b
}

func (b sandboxBuilder) owner(apiVersion, kind string, controller bool) sandboxBuilder {
	b.w.OwnerReferences = append(b.w.OwnerReferences, metav1.OwnerReference{
		APIVersion: apiVersion, Kind: kind, Name: "owner", UID: "owner-uid", Controller: ptr.To(controller),
	})
	return b
}

func (b sandboxBuilder) mode(m sandboxv1beta1.SandboxOperatingMode) sandboxBuilder {
	b.w.Spec.OperatingMode = m
	return b
}

func (b sandboxBuilder) obj() *sandboxv1beta1.Sandbox { return b.w.Obj() }

const sandboxesHeader = `# HELP agent_sandboxes Monitor the point-in-time number of sandboxes in the cluster.
# TYPE agent_sandboxes gauge
`

func TestSandboxCollector(t *testing.T) {
	const (
		claimV1beta1  = "extensions.agents.x-k8s.io/v1beta1"
		poolV1alpha1  = "extensions.agents.x-k8s.io/v1alpha1"
		defaultLabels = `created_by="unknown",expired="false",launch_type="cold",namespace="ns",operating_mode="Running",owned_by="None",ready_condition="false",sandbox_template="unknown"`
	)
	cases := map[string]struct {
		sandboxes []*sandboxv1beta1.Sandbox
		want      string // series lines; "" means the family is absent
	}{
		"no sandboxes, no series": {},
		"bare sandbox without status gets the defaults": {
			sandboxes: []*sandboxv1beta1.Sandbox{makeSandbox("a", "ns").obj()},
			want:      `agent_sandboxes{` + defaultLabels + `} 1`,
		},
		"ready warm sandbox adopted by a claim": {
			sandboxes: []*sandboxv1beta1.Sandbox{
				makeSandbox("a", "ns").
					label(sandboxv1beta1.LaunchTypeLabel, "warm").
					label(sandboxv1beta1.CreatedByLabel, "python-client").
					template("python").
					owner(claimV1beta1, "SandboxClaim", true).
					ready(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady).obj(),
			},
			want: `agent_sandboxes{created_by="python-client",expired="false",launch_type="warm",namespace="ns",operating_mode="Running",owned_by="SandboxClaim",ready_condition="true",sandbox_template="python"} 1`,
		},
		"pool member owned through an old v1alpha1 owner reference": {
			sandboxes: []*sandboxv1beta1.Sandbox{
				makeSandbox("pool-x1", "ns").
					label(sandboxv1beta1.LaunchTypeLabel, "warm").
					label(sandboxv1beta1.CreatedByLabel, "controller").
					template("python").
					owner(poolV1alpha1, "SandboxWarmPool", true).
					ready(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonDependenciesNotReady).obj(),
			},
			want: `agent_sandboxes{created_by="controller",expired="false",launch_type="warm",namespace="ns",operating_mode="Running",owned_by="SandboxWarmPool",ready_condition="false",sandbox_template="python"} 1`,
		},
		"suspended sandbox reports its operating mode": {
			sandboxes: []*sandboxv1beta1.Sandbox{
				makeSandbox("a", "ns").mode(sandboxv1beta1.SandboxOperatingModeSuspended).
					ready(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonSuspended).obj(),
			},
			want: `agent_sandboxes{created_by="unknown",expired="false",launch_type="cold",namespace="ns",operating_mode="Suspended",owned_by="None",ready_condition="false",sandbox_template="unknown"} 1`,
		},
		"expired sandbox": {
			sandboxes: []*sandboxv1beta1.Sandbox{
				makeSandbox("a", "ns").ready(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonExpired).obj(),
			},
			want: `agent_sandboxes{created_by="unknown",expired="true",launch_type="cold",namespace="ns",operating_mode="Running",owned_by="None",ready_condition="false",sandbox_template="unknown"} 1`,
		},
		"Ready=Unknown counts as not ready": {
			sandboxes: []*sandboxv1beta1.Sandbox{
				makeSandbox("a", "ns").ready(metav1.ConditionUnknown, sandboxv1beta1.SandboxReasonDependenciesNotReady).obj(),
			},
			want: `agent_sandboxes{` + defaultLabels + `} 1`,
		},
		"owners that are not an extensions controller count as None": {
			sandboxes: []*sandboxv1beta1.Sandbox{
				makeSandbox("not-controller", "ns").owner(claimV1beta1, "SandboxClaim", false).obj(),
				makeSandbox("other-group", "ns").owner("example.com/v1", "SandboxClaim", true).obj(),
				makeSandbox("other-kind", "ns").owner(claimV1beta1, "SandboxTemplate", true).obj(),
			},
			want: `agent_sandboxes{` + defaultLabels + `} 3`,
		},
		"unrecognised created-by and launch-type values are normalised": {
			sandboxes: []*sandboxv1beta1.Sandbox{
				makeSandbox("a", "ns").
					label(sandboxv1beta1.CreatedByLabel, "my-script").
					label(sandboxv1beta1.LaunchTypeLabel, "lukewarm").obj(),
			},
			want: `agent_sandboxes{` + defaultLabels + `} 1`,
		},
		"counts aggregate per label set and namespace": {
			sandboxes: []*sandboxv1beta1.Sandbox{
				makeSandbox("a", "ns").obj(),
				makeSandbox("b", "ns").obj(),
				makeSandbox("c", "ns").ready(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady).obj(),
				makeSandbox("a", "other").obj(),
			},
			want: strings.Join([]string{
				`agent_sandboxes{` + defaultLabels + `} 2`,
				`agent_sandboxes{created_by="unknown",expired="false",launch_type="cold",namespace="ns",operating_mode="Running",owned_by="None",ready_condition="true",sandbox_template="unknown"} 1`,
				`agent_sandboxes{created_by="unknown",expired="false",launch_type="cold",namespace="other",operating_mode="Running",owned_by="None",ready_condition="false",sandbox_template="unknown"} 1`,
			}, "\n"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, inf := watchedCollector(t, logr.Discard())
			for _, sb := range tc.sandboxes {
				inf.Add(sb)
			}
			want := ""
			if tc.want != "" {
				want = sandboxesHeader + tc.want + "\n"
			}
			if err := promtestutil.CollectAndCompare(c, strings.NewReader(want), "agent_sandboxes"); err != nil {
				t.Error(err)
			}
		})
	}
}

// watchedCollector returns a collector that watches the Sandbox informer of fake informers, and
// that informer (synced: its Add, Update and Delete stand for the watch's events).
func watchedCollector(t *testing.T, log logr.Logger) (*SandboxCollector, *controllertest.FakeInformer) {
	t.Helper()
	informers := &informertest.FakeInformers{Scheme: newScheme(t)}
	c := NewSandboxCollector(log)
	if err := c.WatchSandboxes(context.Background(), informers); err != nil {
		t.Fatal(err)
	}
	inf, err := informers.FakeInformerFor(context.Background(), &sandboxv1beta1.Sandbox{})
	if err != nil {
		t.Fatal(err)
	}
	return c, inf
}

// TestSandboxCollectorFollowsEvents checks that the counts follow the informer's events: a
// Sandbox that changes label values moves between series, a resync moves nothing, a delete
// (also one the watch missed) removes it, and a series whose count falls to 0 disappears.
func TestSandboxCollectorFollowsEvents(t *testing.T) {
	const readyLabels = `created_by="unknown",expired="false",launch_type="cold",namespace="ns",operating_mode="Running",owned_by="None",ready_condition="true",sandbox_template="unknown"`
	const notReadyLabels = `created_by="unknown",expired="false",launch_type="cold",namespace="ns",operating_mode="Running",owned_by="None",ready_condition="false",sandbox_template="unknown"`
	c, inf := watchedCollector(t, logr.Discard())
	a, b := makeSandbox("a", "ns").obj(), makeSandbox("b", "ns").obj()
	aReady := makeSandbox("a", "ns").ready(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady).obj()
	steps := []struct {
		name  string
		event func()
		want  []string
	}{
		{"two added", func() { inf.Add(a); inf.Add(b) }, []string{notReadyLabels + `} 2`}},
		{"one becomes Ready", func() { inf.Update(a, aReady) }, []string{notReadyLabels + `} 1`, readyLabels + `} 1`}},
		{"a resync", func() { inf.Update(aReady, aReady); inf.Update(b, b) }, []string{notReadyLabels + `} 1`, readyLabels + `} 1`}},
		{"the Ready one deleted", func() { inf.Delete(aReady) }, []string{notReadyLabels + `} 1`}},
		{"a delete the watch missed", func() {
			for _, h := range []toolscache.ResourceEventHandler{c} {
				h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/b", Obj: b})
			}
		}, nil},
	}
	for _, st := range steps {
		st.event()
		want := ""
		if len(st.want) > 0 {
			lines := make([]string, len(st.want))
			for i, l := range st.want {
				lines[i] = "agent_sandboxes{" + l
			}
			want = sandboxesHeader + strings.Join(lines, "\n") + "\n"
		}
		if err := promtestutil.CollectAndCompare(c, strings.NewReader(want), "agent_sandboxes"); err != nil {
			t.Errorf("after %s: %v", st.name, err)
		}
	}
	if len(c.counts) != 0 {
		t.Errorf("counts hold %v after every Sandbox was deleted, want none", c.counts)
	}
}

// TestSandboxCollectorNotSynced checks that nothing is served before the informer's initial
// list has been counted, as a partial count would read as Sandboxes gone.
func TestSandboxCollectorNotSynced(t *testing.T) {
	c := NewSandboxCollector(logr.Discard())
	c.OnAdd(makeSandbox("a", "ns").obj(), true)
	if n := promtestutil.CollectAndCount(c); n != 0 {
		t.Errorf("collected %d series before the informer synced, want 0", n)
	}
}

// BenchmarkSandboxCollectorScrape measures a scrape of 12,000 Sandboxes in 20 series: it should
// allocate per series, not per Sandbox.
func BenchmarkSandboxCollectorScrape(b *testing.B) {
	c := NewSandboxCollector(logr.Discard())
	c.synced = func() bool { return true }
	for i := range 12000 {
		w := makeSandbox(fmt.Sprintf("sb-%05d", i), "ns")
		if i < 2000 {
			w = w.label(sandboxv1beta1.LaunchTypeLabel, "warm").template(fmt.Sprintf("t%d", i%20))
		}
		c.OnAdd(w.obj(), true)
	}
	ch := make(chan prometheus.Metric, 100)
	done := make(chan struct{})
	go func() {
		for range ch {
		}
		close(done)
	}()
	b.ReportAllocs()
	for b.Loop() {
		c.Collect(ch)
	}
	close(ch)
	<-done
}
