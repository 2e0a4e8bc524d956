package usage

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/usage"
)

var t0 = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func sandbox(ns, name, uid, principal string, ready, suspended bool) *sandboxv1beta1.Sandbox {
	st := func(b bool) metav1.ConditionStatus {
		if b {
			return metav1.ConditionTrue
		}
		return metav1.ConditionFalse
	}
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid),
		Labels:          map[string]string{"example.com/user": principal},
		OwnerReferences: []metav1.OwnerReference{controllerRef("SandboxClaim", "claim-"+name)}}}
	sb.Spec.PodTemplate.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}
	sb.Status.Conditions = []metav1.Condition{
		{Type: sandboxv1beta1.SandboxConditionReady, Status: st(ready)},
		{Type: sandboxv1beta1.SandboxConditionSuspended, Status: st(suspended)},
	}
	return sb
}

// controllerRef is the controller reference kubox-controller gives the Sandboxes of a claim or pool.
func controllerRef(kind, name string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: extv1beta1.GroupVersion.String(), Kind: kind, Name: name, UID: types.UID(name),
		Controller: ptr.To(true)}
}

// TestTrackerIdentity: the record names the claim, pool and template a sandbox was made for, and
// the principal its claim's pod labels name; a tenant's own Sandbox cannot forge them.
func TestTrackerIdentity(t *testing.T) {
	const tplAnn = sandboxv1beta1.SandboxTemplateRefAnnotation
	made := func(owner metav1.OwnerReference, template string, podLabels map[string]string) *sandboxv1beta1.Sandbox {
		sb := sandbox("team-a", "s", "u1", "", true, false)
		sb.Labels = nil
		sb.OwnerReferences = []metav1.OwnerReference{owner}
		sb.Annotations = map[string]string{tplAnn: template}
		sb.Spec.PodTemplate.Metadata.Labels = podLabels
		return sb
	}
	type ident struct{ Claim, Pool, Template, Principal, TemplateLabel string }
	cases := map[string]struct {
		observed []*sandboxv1beta1.Sandbox
		want     ident
	}{
		"a claim's cold sandbox": {
			observed: []*sandboxv1beta1.Sandbox{made(controllerRef("SandboxClaim", "job-1"), "python", map[string]string{"example.com/user": "bob"})},
			want:     ident{Claim: "job-1", Template: "python", Principal: "bob", TemplateLabel: "python"},
		},
		"a warm member a claim then takes keeps its pool and gains the claim": {
			observed: []*sandboxv1beta1.Sandbox{
				made(controllerRef("SandboxWarmPool", "py-pool"), "python", nil),
				made(controllerRef("SandboxClaim", "job-2"), "python", map[string]string{"example.com/user": "carol"}),
			},
			want: ident{Claim: "job-2", Pool: "py-pool", Template: "python", Principal: "carol", TemplateLabel: "python"},
		},
		"attack: a tenant's own Sandbox naming a template and a claim of another group": {
			observed: []*sandboxv1beta1.Sandbox{made(metav1.OwnerReference{APIVersion: "evil.example.com/v1", Kind: "SandboxClaim",
				Name: "someone-elses", UID: "x", Controller: ptr.To(true)}, "gpu-a100", nil)},
			want: ident{TemplateLabel: usage.UnknownLabel},
		},
		"attack: a reference that is not the controller": {
			observed: []*sandboxv1beta1.Sandbox{made(metav1.OwnerReference{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxClaim",
				Name: "someone-elses", UID: "x"}, "gpu-a100", nil)},
			want: ident{TemplateLabel: usage.UnknownLabel},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tr := NewTracker(Config{PrincipalLabel: "example.com/user"})
			for i, sb := range tc.observed {
				tr.Observe(sb, at(10*i))
			}
			rec, _ := tr.Delete(tc.observed[len(tc.observed)-1], at(100))
			got := ident{Claim: rec.Claim, Pool: rec.Pool, Template: rec.Template, Principal: rec.Principal}
			// The last period counts under the labels the last observation gave.
			principal := tc.want.Principal
			if principal == "" {
				principal = usage.UnknownLabel
			}
			got.TemplateLabel = "(none: not counted under template " + tc.want.TemplateLabel + ")"
			if testutil.ToFloat64(tr.running.WithLabelValues("team-a", tc.want.TemplateLabel, principal)) > 0 {
				got.TemplateLabel = tc.want.TemplateLabel
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("identity (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTrackerRecordsOnDelete(t *testing.T) {
	tr := NewTracker(Config{PrincipalLabel: "example.com/user", MaxPrincipals: 10})
	tr.Observe(sandbox("team-a", "s", "u1", "alice", false, false), at(0))
	tr.Observe(sandbox("team-a", "s", "u1", "alice", true, false), at(10))
	tr.Observe(sandbox("team-a", "s", "u1", "alice", false, true), at(70))
	tr.Observe(sandbox("team-a", "s", "u1", "alice", true, false), at(170))
	rec, ok := tr.Delete(sandbox("team-a", "s", "u1", "alice", true, false), at(200))
	if !ok {
		t.Fatal("Delete returned no record for a tracked sandbox")
	}
	want := usage.Record{Schema: usage.SchemaVersion, Namespace: "team-a", Name: "s", UID: "u1", Claim: "claim-s",
		Principal: "alice", Start: at(0), End: at(200),
		Figures: usage.Figures{RunningSeconds: 90, SuspendedSeconds: 100, Wakes: 1, RequestedCPUCoreSeconds: 90, RequestedMemoryGiBSeconds: 90}}
	if diff := cmp.Diff(want, rec); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if _, ok := tr.Delete(sandbox("team-a", "s", "u1", "alice", true, false), at(300)); ok {
		t.Error("a second Delete of the same UID returned a record again")
	}
	if got := testutil.ToFloat64(tr.running.WithLabelValues("team-a", usage.UnknownLabel, "alice")); got != 90 {
		t.Errorf("kubox_usage_running_seconds_total = %v, want 90", got)
	}
	if got := testutil.ToFloat64(tr.wakes.WithLabelValues("team-a", usage.UnknownLabel, "alice")); got != 1 {
		t.Errorf("kubox_usage_wakes_total = %v, want 1", got)
	}
}

// TestTrackerAttackPrincipalCardinality: a tenant labelling each sandbox with a new principal
// gets at most MaxPrincipals series (plus "other"), never one per sandbox.
func TestTrackerAttackPrincipalCardinality(t *testing.T) {
	tr := NewTracker(Config{PrincipalLabel: "example.com/user", MaxPrincipals: 3})
	for i := range 50 {
		uid := string(rune('a'+i%26)) + string(rune('a'+i/26))
		tr.Observe(sandbox("team-a", uid, uid, "p"+uid, true, false), at(0))
		tr.Delete(sandbox("team-a", uid, uid, "p"+uid, true, false), at(1))
	}
	if n := testutil.CollectAndCount(tr.running); n > 4 {
		t.Errorf("%d running-seconds series, want at most 4 (3 principals + other)", n)
	}
}

// TestTrackerRegisterTakesOverExistingMetrics: a second Tracker registered where a first one
// already is (the manager set up again in one process) adds to the same series instead of
// failing.
func TestTrackerRegisterTakesOverExistingMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, second := NewTracker(Config{}), NewTracker(Config{})
	if err := first.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := second.Register(reg); err != nil {
		t.Fatalf("registering a second Tracker: %v", err)
	}
	for i, tr := range []*Tracker{first, second} {
		uid := string(rune('a' + i))
		tr.Observe(sandbox("team-a", uid, uid, "", true, false), at(0))
		tr.Delete(sandbox("team-a", uid, uid, "", true, false), at(10))
	}
	if got := testutil.ToFloat64(first.running.WithLabelValues("team-a", usage.UnknownLabel, usage.UnknownLabel)); got != 20 {
		t.Errorf("kubox_usage_running_seconds_total = %v, want 20 (both trackers' sandboxes)", got)
	}
}
