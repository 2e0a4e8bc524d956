package sandboxclaim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/trace/noop"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

func TestBuildColdSandbox(t *testing.T) {
	tpl := makeTemplate().EnvVarsInjectionPolicy(extv1beta1.EnvVarsInjectionPolicyAllowed).VolumeClaimTemplatesPolicy(extv1beta1.VolumeClaimTemplatesPolicyAllowed).
		PodLabel("sandbox.users.io/team", "a").VolumeClaimTemplate("workspace", "1Gi").Obj()
	claim := makeClaim().Env("TOKEN", "x", "").VolumeClaimTemplate("cache", "2Gi").PodLabel("sandbox.users.io/user", "u1").
		Annotation("opentelemetry.io/trace-context", `{"traceparent":"t"}`).Obj()

	got, f := buildColdSandbox(claim, tpl)
	if f != nil {
		t.Fatalf("buildColdSandbox() failure = %v", f)
	}
	spec := testutil.MakeSandbox("blueprint", testNS).Obj().Spec.PodTemplate.Spec
	spec.AutomountServiceAccountToken = ptr.To(false)
	spec.Containers[0].Env = []corev1.EnvVar{{Name: "TOKEN", Value: "x"}}
	want := &sandboxv1beta1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{
			Name: testClaim, Namespace: testNS,
			Labels: map[string]string{
				"agents.x-k8s.io/claim-uid":                 string(testClaimUID),
				"agents.x-k8s.io/launch-type":               "cold",
				"agents.x-k8s.io/sandbox-template-ref-hash": sandboxv1beta1.NameHash(testTemplate),
				"agents.x-k8s.io/created-by":                "controller",
			},
			Annotations: map[string]string{
				"agents.x-k8s.io/sandbox-template-ref": testTemplate,
				"agents.x-k8s.io/pod-name":             "my-claim",
				"opentelemetry.io/trace-context":       `{"traceparent":"t"}`,
			},
		},
		Spec: sandboxv1beta1.SandboxSpec{SandboxBlueprint: sandboxv1beta1.SandboxBlueprint{
			PodTemplate: sandboxv1beta1.PodTemplate{
				Metadata: sandboxv1beta1.PodMetadata{Labels: map[string]string{"sandbox.users.io/team": "a", "sandbox.users.io/user": "u1"}},
				Spec:     spec,
			},
			VolumeClaimTemplates: []sandboxv1beta1.PersistentVolumeClaimTemplate{
				testutil.MakeVolumeClaimTemplate("workspace", "1Gi"), testutil.MakeVolumeClaimTemplate("cache", "2Gi"),
			},
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("buildColdSandbox() mismatch (-want +got):\n%s", diff)
	}
	if len(tpl.Spec.PodTemplate.Spec.Containers[0].Env) != 0 || len(tpl.Spec.VolumeClaimTemplates) != 1 {
		t.Errorf("buildColdSandbox() changed the template: %+v", tpl.Spec)
	}
}

func TestBuildColdSandboxTakesTheClaimsIdlePolicy(t *testing.T) {
	tpl := makeTemplate().Obj()
	tpl.Spec.IdlePolicy = &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: time.Hour}}
	claim := makeClaim().Obj()
	claim.Spec.IdlePolicy = &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: time.Minute}, RunningProcesses: sandboxv1beta1.IdleProcessPolicyIgnore}
	sb, f := buildColdSandbox(claim, tpl)
	if f != nil {
		t.Fatal(f)
	}
	if diff := cmp.Diff(claim.Spec.IdlePolicy, sb.Spec.IdlePolicy); diff != "" {
		t.Errorf("the Sandbox's idlePolicy (-want +got):\n%s", diff)
	}
	sb, _ = buildColdSandbox(makeClaim().Obj(), tpl)
	if diff := cmp.Diff(tpl.Spec.IdlePolicy, sb.Spec.IdlePolicy); diff != "" {
		t.Errorf("without the claim's, the Sandbox's idlePolicy (-want the template's +got):\n%s", diff)
	}
}

// TestClaimSnapshot: a claim's snapshotRef replaces the template's in the cold Sandbox, and a warm
// member serves it only when its template starts from that same snapshot.
func TestClaimSnapshot(t *testing.T) {
	tpl := makeTemplate().Obj()
	tpl.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: "from-template"}
	claim := makeClaim().Obj()
	claim.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: "numpy-loaded"}
	sb, f := buildColdSandbox(claim, tpl)
	if f != nil {
		t.Fatal(f)
	}
	if sb.Spec.SnapshotRef == nil || sb.Spec.SnapshotRef.Name != "numpy-loaded" || tpl.Spec.SnapshotRef.Name != "from-template" {
		t.Errorf("the Sandbox starts from %+v (template's now %+v); want the claim's numpy-loaded, the template unchanged", sb.Spec.SnapshotRef, tpl.Spec.SnapshotRef)
	}
	sb, _ = buildColdSandbox(makeClaim().Obj(), tpl)
	if sb.Spec.SnapshotRef == nil || sb.Spec.SnapshotRef.Name != "from-template" {
		t.Errorf("without the claim's, the Sandbox starts from %+v; want the template's", sb.Spec.SnapshotRef)
	}
	plain := makeTemplate().Obj()
	for name, tc := range map[string]struct {
		snapshot *sandboxv1beta1.SnapshotReference
		tpl      *extv1beta1.SandboxTemplate
		want     bool
	}{
		"no snapshot":                    {nil, plain, true},
		"a snapshot, a plain pool":       {claim.Spec.SnapshotRef, plain, false},
		"another snapshot than the pool": {claim.Spec.SnapshotRef, tpl, false},
		"the pool's snapshot":            {&sandboxv1beta1.SnapshotReference{Name: "from-template"}, tpl, true},
	} {
		if got := snapshotFitsWarm(tc.snapshot, tc.tpl); got != tc.want {
			t.Errorf("%s: snapshotFitsWarm = %t, want %t", name, got, tc.want)
		}
	}
}

func TestBuildColdSandboxFailures(t *testing.T) {
	cases := map[string]struct {
		claim      *extv1beta1.SandboxClaim
		template   *extv1beta1.SandboxTemplate
		wantReason string
	}{
		"env the template does not allow": {
			claim: makeClaim().Env("TOKEN", "x", "").Obj(), template: makeTemplate().Obj(),
			wantReason: extv1beta1.ClaimReasonEnvVarsInjectionRejected,
		},
		"volume claim templates the template does not allow": {
			claim: makeClaim().VolumeClaimTemplate("cache", "1Gi").Obj(), template: makeTemplate().Obj(),
			wantReason: extv1beta1.ClaimReasonVolumeClaimTemplatesError,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb, f := buildColdSandbox(tc.claim, tc.template)
			if sb != nil || f == nil || f.reason != tc.wantReason {
				t.Errorf("buildColdSandbox() = %v, %v; want no sandbox and reason %s", sb, f, tc.wantReason)
			}
		})
	}
}

func TestTakeExisting(t *testing.T) {
	claimRef := func(name string, uid types.UID) metav1.OwnerReference {
		return *metav1.NewControllerRef(&metav1.ObjectMeta{Name: name, UID: uid}, extv1beta1.GroupVersion.WithKind("SandboxClaim"))
	}
	cases := map[string]struct {
		refs       []metav1.OwnerReference
		wantBound  bool
		wantReason string
	}{
		"controlled by the claim": {refs: []metav1.OwnerReference{claimRef(testClaim, testClaimUID)}, wantBound: true},
		"controlled by an earlier claim of its name": {refs: []metav1.OwnerReference{claimRef(testClaim, "earlier-uid")},
			wantReason: extv1beta1.ClaimReasonSandboxCreatePending},
		"controlled by a claim of another name": {refs: []metav1.OwnerReference{claimRef("other", "other-uid")},
			wantReason: extv1beta1.ClaimReasonAdoptionConflict},
		"controlled by another kind of the claim's name": {refs: []metav1.OwnerReference{*metav1.NewControllerRef(
			&metav1.ObjectMeta{Name: testClaim, UID: "pool-uid"}, extv1beta1.GroupVersion.WithKind("SandboxWarmPool"))},
			wantReason: extv1beta1.ClaimReasonAdoptionConflict},
		"controlled by a claim of another group": {refs: []metav1.OwnerReference{*metav1.NewControllerRef(
			&metav1.ObjectMeta{Name: testClaim, UID: "earlier-uid"}, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "SandboxClaim"})},
			wantReason: extv1beta1.ClaimReasonAdoptionConflict},
		"uncontrolled": {wantReason: extv1beta1.ClaimReasonAdoptionConflict},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := NewReconciler(nil, nil, nil, nil, clock.RealClock{}, noop.NewTracerProvider(), nil, nil)
			existing := testutil.MakeSandbox(testClaim, testNS).Obj()
			existing.OwnerReferences = tc.refs
			obs := &observed{}
			r.takeExisting(makeClaim().Obj(), existing, obs)
			if got := obs.sandbox != nil; got != tc.wantBound {
				t.Errorf("bound = %t; want %t", got, tc.wantBound)
			}
			gotReason := ""
			if obs.failure != nil {
				gotReason = obs.failure.reason
			}
			if gotReason != tc.wantReason {
				t.Errorf("failure reason = %q; want %q (failure %v)", gotReason, tc.wantReason, obs.failure)
			}
		})
	}
}
