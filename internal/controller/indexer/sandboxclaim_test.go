package indexer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/blueprint"
	"github.com/kubox-dev/kubox/internal/testutil"
)

func TestReadyWarmPoolMember(t *testing.T) {
	poolRef := func(apiVersion, kind string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "pool", UID: "pool-uid", Controller: ptr.To(true)}
	}
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "DependenciesReady"}
	member := func(mutate ...func(*sandboxv1beta1.Sandbox)) *sandboxv1beta1.Sandbox {
		sb := testutil.MakeSandbox("pool-abcde", "ns").
			Label(sandboxv1beta1.WarmPoolSandboxLabel, "11111111").
			Label(sandboxv1beta1.SandboxTemplateHashLabel, "cafebabe").
			Condition(ready).Obj()
		sb.Generation = 1
		sb.OwnerReferences = []metav1.OwnerReference{poolRef("extensions.agents.x-k8s.io/v1beta1", "SandboxWarmPool")}
		for _, m := range mutate {
			m(sb)
		}
		return sb
	}
	// The hash of the member's spec, never its sandbox-template-hash label (cafebabe).
	specHash := "pool-uid/" + blueprint.Hash(&member().Spec.SandboxBlueprint)
	cases := map[string]struct {
		obj  client.Object
		want []string
	}{
		"a ready member is indexed by pool UID and the hash of its spec": {obj: member(), want: []string{specHash}},
		"a pool written through another version is a pool": {obj: member(func(sb *sandboxv1beta1.Sandbox) {
			sb.OwnerReferences = []metav1.OwnerReference{poolRef("extensions.agents.x-k8s.io/v1alpha1", "SandboxWarmPool")}
		}), want: []string{specHash}},
		"a member whose spec changed is indexed by its new spec": {obj: member(func(sb *sandboxv1beta1.Sandbox) {
			sb.Spec.PodTemplate.Spec.Containers[0].Image = "attacker"
		}), want: []string{"pool-uid/" + blueprint.Hash(&member(func(sb *sandboxv1beta1.Sandbox) {
			sb.Spec.PodTemplate.Spec.Containers[0].Image = "attacker"
		}).Spec.SandboxBlueprint)}},
		"a member whose spec someone updated is not a candidate": {obj: member(func(sb *sandboxv1beta1.Sandbox) { sb.Generation = 2 })},
		"a member that is not Ready is not a candidate": {obj: member(func(sb *sandboxv1beta1.Sandbox) {
			sb.Status.Conditions[0].Status = metav1.ConditionFalse
		})},
		"a member being deleted is not a candidate": {obj: member(func(sb *sandboxv1beta1.Sandbox) {
			sb.DeletionTimestamp = ptr.To(metav1.Now())
		})},
		"a sandbox without the pool label is not a member": {obj: member(func(sb *sandboxv1beta1.Sandbox) {
			delete(sb.Labels, sandboxv1beta1.WarmPoolSandboxLabel)
		})},
		"a sandbox a claim controls is not a member": {obj: member(func(sb *sandboxv1beta1.Sandbox) {
			sb.OwnerReferences = []metav1.OwnerReference{poolRef("extensions.agents.x-k8s.io/v1beta1", "SandboxClaim")}
		})},
		"a controller of another group is not a pool": {obj: member(func(sb *sandboxv1beta1.Sandbox) {
			sb.OwnerReferences = []metav1.OwnerReference{poolRef("example.com/v1", "SandboxWarmPool")}
		})},
		"a sandbox without a controller is not a member": {obj: member(func(sb *sandboxv1beta1.Sandbox) { sb.OwnerReferences = nil })},
		"another kind is not indexed":                    {obj: testutil.MakePod("p", "ns").Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ReadyWarmPoolMember(tc.obj)); diff != "" {
				t.Errorf("ReadyWarmPoolMember() mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if got := ReadyWarmPoolMemberValue(types.UID("pool-uid"), "cafebabe"); got != "pool-uid/cafebabe" {
		t.Errorf("ReadyWarmPoolMemberValue() = %q; want the value the index function gives", got)
	}
}

func TestClaimIndexes(t *testing.T) {
	pool := &extv1beta1.SandboxClaim{Spec: extv1beta1.SandboxClaimSpec{WarmPoolRef: &extv1beta1.SandboxWarmPoolReference{Name: "pool"}}}
	tpl := &extv1beta1.SandboxClaim{Spec: extv1beta1.SandboxClaimSpec{SandboxTemplateRef: &extv1beta1.SandboxTemplateReference{Name: "python"}}}
	cases := map[string]struct {
		fn   client.IndexerFunc
		obj  client.Object
		want []string
	}{
		"a pool claim by pool":         {fn: ClaimWarmPool, obj: pool, want: []string{"pool"}},
		"a template claim by no pool":  {fn: ClaimWarmPool, obj: tpl},
		"a template claim by template": {fn: ClaimTemplate, obj: tpl, want: []string{"python"}},
		"a pool claim by no template":  {fn: ClaimTemplate, obj: pool},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.fn(tc.obj)); diff != "" {
				t.Errorf("index mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
