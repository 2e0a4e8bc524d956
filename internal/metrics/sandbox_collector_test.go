package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

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
			b := fake.NewClientBuilder().WithScheme(newScheme(t))
			for _, sb := range tc.sandboxes {
				b = b.WithObjects(sb)
			}
			c := NewSandboxCollector(b.Build(), logr.Discard())
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

func TestSandboxCollectorListError(t *testing.T) {
	reader := fake.NewClientBuilder().WithScheme(newScheme(t)).
		WithObjects(makeSandbox("a", "ns").obj()).
		WithInterceptorFuncs(interceptor.Funcs{
			List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
				return errors.New("cache not synced")
			},
		}).Build()
	var logged []string
	log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})

	if n := promtestutil.CollectAndCount(NewSandboxCollector(reader, log)); n != 0 {
		t.Errorf("collected %d series after a failed List, want 0", n)
	}
	want := []string{`"msg"="Failed to list Sandboxes for the agent_sandboxes metric" "error"="cache not synced"`}
	if diff := cmp.Diff(want, logged); diff != "" {
		t.Errorf("log mismatch (-want +got):\n%s", diff)
	}
}
