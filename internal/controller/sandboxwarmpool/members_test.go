package sandboxwarmpool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/blueprint"
	"github.com/kubox-dev/kubox/internal/controller/inflight"
	"github.com/kubox-dev/kubox/internal/testutil"
)

// Name hashes written out (FNV-1a, 8 hex digits), not computed by the code under test.
const (
	poolHash     = "91dd7983" // "pool"
	templateHash = "694aaa0b" // "template"
)

func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(sandboxv1beta1.AddToScheme(s))
	utilruntime.Must(extv1beta1.AddToScheme(s))
	return s
}

func testTemplate() *extv1beta1.SandboxTemplate {
	return &extv1beta1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "template", Namespace: testNS},
		Spec: extv1beta1.SandboxTemplateSpec{SandboxBlueprint: sandboxv1beta1.SandboxBlueprint{
			PodTemplate: testutil.MakeSandbox("x", testNS).PodLabel("app", "agent").PodAnnotation("note", "kept").Obj().Spec.PodTemplate,
		}},
	}
}

func observedTemplate(tpl *extv1beta1.SandboxTemplate) *observed {
	obs := &observed{template: tpl, blueprint: blueprint.FromTemplate(tpl)}
	obs.hash = blueprint.Hash(&obs.blueprint)
	return obs
}

func newTestReconciler(c client.Client) *Reconciler {
	clk := clocktesting.NewFakeClock(testNow)
	return NewReconciler(c, testScheme(), events.NewFakeRecorder(16), clk, inflight.NewExpectations(clk, time.Minute),
		Settings{MaxBatchSize: 300, ReadinessGracePeriod: testGrace, UnschedulableRecheckInterval: time.Minute})
}

// TestNewSandbox checks a member against the contract with the claim controller.
func TestNewSandbox(t *testing.T) {
	pool := makePool(1).Obj()
	cases := map[string]struct {
		template        *extv1beta1.SandboxTemplate
		wantAnnotations map[string]string
	}{
		"the template's pod metadata as it is": {
			template:        testTemplate(),
			wantAnnotations: map[string]string{"note": "kept"},
		},
		"the template's own eviction setting": {
			template: func() *extv1beta1.SandboxTemplate {
				tpl := testTemplate()
				tpl.Spec.PodTemplate.Metadata.Annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] = "false"
				return tpl
			}(),
			wantAnnotations: map[string]string{"note": "kept", "cluster-autoscaler.kubernetes.io/safe-to-evict": "false"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obs := observedTemplate(tc.template)
			before := tc.template.DeepCopy()
			sb, err := newTestReconciler(fake.NewClientBuilder().Build()).newSandbox(pool, obs)
			if err != nil {
				t.Fatalf("newSandbox() error: %v", err)
			}
			wantSpec := before.Spec.SandboxBlueprint
			wantSpec.PodTemplate.Spec.AutomountServiceAccountToken = ptr.To(false)
			// The spec is the template's blueprint: the pool's label and safe-to-evict reach the
			// Pod from the member's labels (the Sandbox controller), so binding leaves it alone.
			wantSpec.PodTemplate.Metadata.Labels = map[string]string{"app": "agent"}
			wantSpec.PodTemplate.Metadata.Annotations = tc.wantAnnotations
			// The pool names the member (pool- and five random characters) and its Pod.
			if !strings.HasPrefix(sb.Name, "pool-") || len(sb.Name) != len("pool-")+5 {
				t.Errorf("newSandbox() named the member %q; want pool- and 5 random characters", sb.Name)
			}
			want := &sandboxv1beta1.Sandbox{
				ObjectMeta: metav1.ObjectMeta{
					Namespace:    testNS,
					Name:         sb.Name,
					GenerateName: "pool-",
					Labels: map[string]string{
						"agents.x-k8s.io/warm-pool-sandbox":         poolHash,
						"agents.x-k8s.io/sandbox-template-ref-hash": templateHash,
						"agents.x-k8s.io/sandbox-template-hash":     obs.hash,
						"agents.x-k8s.io/launch-type":               "warm",
						"agents.x-k8s.io/created-by":                "controller",
					},
					Annotations: map[string]string{"agents.x-k8s.io/sandbox-template-ref": "template", "agents.x-k8s.io/pod-name": sb.Name},
					OwnerReferences: []metav1.OwnerReference{{
						APIVersion: "extensions.agents.x-k8s.io/v1beta1", Kind: "SandboxWarmPool", Name: "pool", UID: "pool-uid",
						Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
					}},
				},
				Spec: sandboxv1beta1.SandboxSpec{SandboxBlueprint: wantSpec},
			}
			if diff := cmp.Diff(want, sb); diff != "" {
				t.Errorf("newSandbox() mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.template); diff != "" {
				t.Errorf("newSandbox() changed the template (-before +after):\n%s", diff)
			}
			if got := blueprint.Hash(&sb.Spec.SandboxBlueprint); got != obs.hash {
				t.Errorf("The member's blueprint hashes to %s, its label says %s", got, obs.hash)
			}
		})
	}
}

func TestIsStale(t *testing.T) {
	tpl := testTemplate()
	obs := observedTemplate(tpl)
	created, err := newTestReconciler(fake.NewClientBuilder().Build()).newSandbox(makePool(1).Obj(), obs)
	if err != nil {
		t.Fatalf("newSandbox() error: %v", err)
	}
	created.Generation = 1 // as the API server creates it
	cases := map[string]struct {
		change    func(*extv1beta1.SandboxTemplate)
		edit      func(*sandboxv1beta1.Sandbox)
		template  string
		wantStale bool
	}{
		"member's spec updated since it was created": {template: "template", edit: func(sb *sandboxv1beta1.Sandbox) { sb.Generation = 2 }, wantStale: true},
		"member created with another spec and the hash label copied": {template: "template", edit: func(sb *sandboxv1beta1.Sandbox) {
			sb.Spec.PodTemplate.Spec.Containers[0].Image = "registry.invalid/attacker:1"
		}, wantStale: true},
		"member's hash label changed": {template: "template", edit: func(sb *sandboxv1beta1.Sandbox) {
			sb.Labels[sandboxv1beta1.SandboxTemplateHashLabel] = "00000000"
		}, wantStale: true},
		"unchanged":               {template: "template"},
		"pod label changed":       {template: "template", change: func(t *extv1beta1.SandboxTemplate) { t.Spec.PodTemplate.Metadata.Labels["app"] = "other" }},
		"pod annotation added":    {template: "template", change: func(t *extv1beta1.SandboxTemplate) { t.Spec.PodTemplate.Metadata.Annotations["more"] = "x" }},
		"template labels changed": {template: "template", change: func(t *extv1beta1.SandboxTemplate) { t.Labels = map[string]string{"team": "b"} }},
		"network policy changed":  {template: "template", change: func(t *extv1beta1.SandboxTemplate) { t.Spec.NetworkPolicy = &extv1beta1.NetworkPolicySpec{} }},
		"image changed": {template: "template", change: func(t *extv1beta1.SandboxTemplate) {
			t.Spec.PodTemplate.Spec.Containers[0].Image = "registry.invalid/other:2"
		}, wantStale: true},
		"service switched on": {template: "template", change: func(t *extv1beta1.SandboxTemplate) { t.Spec.Service = ptr.To(true) }, wantStale: true},
		"volume claim template": {template: "template", change: func(t *extv1beta1.SandboxTemplate) {
			t.Spec.VolumeClaimTemplates = []sandboxv1beta1.PersistentVolumeClaimTemplate{testutil.MakeVolumeClaimTemplate("data", "1Gi")}
		}, wantStale: true},
		"token mounted explicitly": {template: "template", change: func(t *extv1beta1.SandboxTemplate) {
			t.Spec.PodTemplate.Spec.AutomountServiceAccountToken = ptr.To(true)
		}, wantStale: true},
		"token unmounted explicitly": {template: "template", change: func(t *extv1beta1.SandboxTemplate) {
			t.Spec.PodTemplate.Spec.AutomountServiceAccountToken = ptr.To(false)
		}},
		"pool names another template with the same blueprint": {template: "other", wantStale: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			changed := tpl.DeepCopy()
			if tc.change != nil {
				tc.change(changed)
			}
			member := created.DeepCopy()
			if tc.edit != nil {
				tc.edit(member)
			}
			bp := blueprint.FromTemplate(changed)
			if got := isStale(member, tc.template, blueprint.Hash(&bp)); got != tc.wantStale {
				t.Errorf("isStale() = %v; want %v", got, tc.wantStale)
			}
		})
	}
}

func TestNewMember(t *testing.T) {
	pool := makePool(1).Obj()
	created := testNow.Add(-time.Hour)
	readyAt := metav1.NewTime(testNow.Add(-10 * time.Minute))
	notReadyAt := metav1.NewTime(testNow.Add(-2 * time.Minute))
	cases := map[string]struct {
		conds []metav1.Condition
		edit  func(*sandboxv1beta1.Sandbox)
		want  member
	}{
		"no status yet": {
			want: member{notReadySince: created},
		},
		"spec changed since it was created": {
			edit: func(sb *sandboxv1beta1.Sandbox) { sb.Generation = 2 },
			want: member{tampered: true, notReadySince: created},
		},
		"spec not the one its hash label names": {
			edit: func(sb *sandboxv1beta1.Sandbox) {
				sb.Labels = map[string]string{sandboxv1beta1.SandboxTemplateHashLabel: "00000000"}
			},
			want: member{tampered: true, notReadySince: created},
		},
		"ready": {
			conds: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, LastTransitionTime: readyAt}},
			want:  member{ready: true, readySince: readyAt.Time, notReadySince: created},
		},
		"not ready any more": {
			conds: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, LastTransitionTime: notReadyAt}},
			want:  member{notReadySince: notReadyAt.Time},
		},
		"unschedulable": {
			conds: []metav1.Condition{
				{Type: "Ready", Status: metav1.ConditionFalse, LastTransitionTime: metav1.NewTime(created)},
				{Type: "PodScheduled", Status: metav1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available"},
			},
			want: member{unschedulable: true, schedulingMessage: "0/1 nodes are available", notReadySince: created},
		},
		// agent-sandbox v1: a Pod held by scheduling gates is not churned either.
		"held by scheduling gates": {
			conds: []metav1.Condition{{Type: "PodScheduled", Status: metav1.ConditionFalse, Reason: "SchedulingGated",
				Message: "Scheduling is blocked due to non-empty scheduling gates"}},
			want: member{unschedulable: true, schedulingMessage: "Scheduling is blocked due to non-empty scheduling gates",
				notReadySince: created},
		},
		"not scheduled for another reason": {
			conds: []metav1.Condition{{Type: "PodScheduled", Status: metav1.ConditionFalse, Reason: "SomethingElse"}},
			want:  member{notReadySince: created},
		},
		"finished": {
			conds: []metav1.Condition{{Type: "Finished", Status: metav1.ConditionTrue, Reason: "PodFailed"}},
			want:  member{finished: true, notReadySince: created},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb := sandboxOf("a", tc.conds...)
			if tc.edit != nil {
				tc.edit(sb)
			}
			got := (&observed{}).newMember(pool, sb)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(member{}), cmpopts.IgnoreFields(member{}, "sandbox")); diff != "" {
				t.Errorf("newMember() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeleteMembersLeavesChangedMembersAlone checks that a member changed since the pass read it
// (a claim bound it) is not deleted, while an unchanged one is, and that the expectations wait
// only for the deletion that was made.
func TestDeleteMembersLeavesChangedMembersAlone(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(testScheme()).
		WithObjects(testutil.MakeSandbox("bound", testNS).Obj(), testutil.MakeSandbox("unbound", testNS).Obj()).Build()
	r := newTestReconciler(c)
	read := func(name string) *sandboxv1beta1.Sandbox {
		sb := &sandboxv1beta1.Sandbox{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: name}, sb); err != nil {
			t.Fatalf("Reading Sandbox %s: %v", name, err)
		}
		return sb
	}
	seen := []*sandboxv1beta1.Sandbox{read("bound"), read("unbound")}
	// The claim binds "bound" after the pass read it.
	binding := read("bound")
	binding.Labels = map[string]string{"agents.x-k8s.io/claim-uid": "claim-uid"}
	if err := c.Update(ctx, binding); err != nil {
		t.Fatalf("Binding: %v", err)
	}

	pool := makePool(0).Obj()
	dels := []deletion{{member: &member{sandbox: seen[0]}}, {member: &member{sandbox: seen[1]}}}
	skipped, err := r.deleteMembers(ctx, pool, &observed{}, dels)
	if err != nil {
		t.Fatalf("deleteMembers() error: %v", err)
	}
	if skipped != 1 {
		t.Errorf("deleteMembers() skipped %d members; want 1, the bound one, so the pass creates no replacement for it", skipped)
	}
	if got := read("bound"); got.Labels["agents.x-k8s.io/claim-uid"] != "claim-uid" {
		t.Errorf("The bound Sandbox changed: %+v", got.ObjectMeta)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: "unbound"}, &sandboxv1beta1.Sandbox{}); !apierrors.IsNotFound(err) {
		t.Errorf("Reading the unbound member after its deletion: %v; want NotFound", err)
	}
	if ok, _ := r.expectations.Satisfied(poolKey(pool)); ok {
		t.Errorf("Expectations satisfied before the deletion was observed")
	}
	r.expectations.DeletionObserved(poolKey(pool), seen[1].UID)
	if ok, _ := r.expectations.Satisfied(poolKey(pool)); !ok {
		t.Errorf("Expectations not satisfied after the deletion was observed: the conflicting one is still expected")
	}
}

// TestCreateMembersExpectations checks that a failed create, and the creates a failed batch kept
// from being sent, are not waited for, while the successful ones are.
func TestCreateMembersExpectations(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	c := fake.NewClientBuilder().WithScheme(testScheme()).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			n := calls.Add(1)
			if n == 3 { // one of the second batch's two calls
				return apierrors.NewForbidden(schema.GroupResource{Resource: "sandboxes"}, "", errors.New("exceeded quota"))
			}
			obj.SetUID(types.UID(fmt.Sprintf("uid-%d", n))) // the fake client sets none
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	r := newTestReconciler(c)
	pool := makePool(5).Obj()
	obs := observedTemplate(testTemplate())
	err := r.createMembers(ctx, pool, obs, 5)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("createMembers() error = %v; want the Forbidden error", err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d creates sent; want 3 (batches of 1 and 2, stopping at the failure)", n)
	}
	list := &sandboxv1beta1.SandboxList{}
	if err := c.List(ctx, list); err != nil {
		t.Fatalf("Listing: %v", err)
	}
	if ok, _ := r.expectations.Satisfied(poolKey(pool)); ok {
		t.Fatalf("Expectations satisfied before the creations were observed")
	}
	for i := range list.Items {
		r.expectations.CreationObserved(poolKey(pool), list.Items[i].UID)
	}
	if ok, _ := r.expectations.Satisfied(poolKey(pool)); !ok {
		t.Errorf("Expectations not satisfied after the %d created members were observed", len(list.Items))
	}
	if len(list.Items) != 2 {
		t.Errorf("%d members created; want 2", len(list.Items))
	}
}
