package sandboxclaim

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/blueprint"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// attackerImage is what an attacker's Pod runs; no claim may ever get it.
const attackerImage = "registry.invalid/attacker:1"

// attacker is a client for ServiceAccount "attacker" of ns.
func attacker(t *testing.T, ns string) client.Client { return user(t, ns, "attacker") }

// user is a client for ServiceAccount name of ns with the rights of an ordinary user of the
// namespace: it may create and update Sandboxes, Pods, Services, PVCs and Secrets, and has no
// provenance permission (sandboxes/provenance) unless extra grants it.
func user(t *testing.T, ns, name string, extra ...rbacv1.PolicyRule) client.Client {
	t.Helper()
	token := env.ServiceAccountToken(t, ns, name)
	rw := []string{"get", "list", "watch", "create", "update", "patch"}
	env.Grant(t, ns, name, name, append([]rbacv1.PolicyRule{
		{APIGroups: []string{sandboxv1beta1.GroupVersion.Group}, Resources: []string{"sandboxes"}, Verbs: rw},
		{APIGroups: []string{""}, Resources: []string{"pods", "services", "persistentvolumeclaims", "secrets"}, Verbs: rw},
	}, extra...)...)
	c, err := client.New(env.ConfigFor(token), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rbacDenied tells RBAC's refusal (the grant is not yet in the authorizer's cache) from an
// admission policy's.
func rbacDenied(err error) bool {
	return apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "sandboxes/provenance")
}

// write runs fn as the attacker, retrying while RBAC has not yet seen the grant, and returns the
// API server's answer.
func write(t *testing.T, fn func() error) error {
	t.Helper()
	var err error
	framework.Eventually(t, func() (bool, string) {
		err = fn()
		return !rbacDenied(err), fmt.Sprintf("RBAC still refuses: %v", err)
	})
	return err
}

// refusedForProvenance checks that err is the admission policies' refusal, naming the
// permission that would allow the write.
func refusedForProvenance(t *testing.T, what string, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: the API server accepted it; want it refused for lack of create on sandboxes/provenance", what)
	case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "sandboxes/provenance"):
		t.Errorf("%s: %v; want Forbidden naming sandboxes/provenance", what, err)
	}
}

// memberLike is a Sandbox that copies everything a member of pool, built from tpl (as stored),
// carries, but runs the attacker's image; owned makes pool its controller.
func memberLike(name string, tpl *extv1beta1.SandboxTemplate, pool *extv1beta1.SandboxWarmPool, owned bool) *sandboxv1beta1.Sandbox {
	bp := blueprint.FromTemplate(tpl)
	hash := blueprint.Hash(&bp)
	bp.PodTemplate.Spec.Containers[0].Image = attackerImage
	sb := &sandboxv1beta1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pool.Namespace, Labels: map[string]string{
			sandboxv1beta1.WarmPoolSandboxLabel:        sandboxv1beta1.NameHash(pool.Name),
			sandboxv1beta1.SandboxTemplateRefHashLabel: sandboxv1beta1.NameHash(tpl.Name),
			sandboxv1beta1.SandboxTemplateHashLabel:    hash,
			sandboxv1beta1.LaunchTypeLabel:             extv1beta1.LaunchTypeWarm,
			sandboxv1beta1.CreatedByLabel:              extv1beta1.CreatedByController,
		}},
		Spec: sandboxv1beta1.SandboxSpec{SandboxBlueprint: bp},
	}
	if owned {
		sb.OwnerReferences = []metav1.OwnerReference{{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxWarmPool",
			Name: pool.Name, UID: pool.UID, Controller: ptr.To(true)}}
	}
	return sb
}

// claimedSandboxIsClean claims from pool and checks that the sandbox the claim gets, and its
// Pod, run the template's image and not the attacker's.
func claimedSandboxIsClean(t *testing.T, ns, claimName string, claim *extv1beta1.SandboxClaim) {
	t.Helper()
	env.Create(t, claim)
	got := waitReady(t, ns, claimName)
	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, got.Status.Sandbox.Name)
	if img := sb.Spec.PodTemplate.Spec.Containers[0].Image; img == attackerImage {
		t.Errorf("Claim %s got Sandbox %s whose spec runs the attacker's image %s", claimName, sb.Name, img)
	}
	pod := framework.Read[corev1.Pod](t, env, ns, sb.Name)
	for _, c := range pod.Spec.Containers {
		if c.Image == attackerImage {
			t.Errorf("Claim %s got Sandbox %s whose Pod %s runs the attacker's image %s", claimName, sb.Name, pod.Name, c.Image)
		}
	}
}

// TestForgedPoolMemberIsNeverBound: a user who may create Sandboxes makes one that looks like a
// member of another team's pool (its labels, and in one case the pool as controller) and runs
// their own image. The API server refuses it, and the next claim gets a member the pool built.
func TestForgedPoolMemberIsNeverBound(t *testing.T) {
	for name, owned := range map[string]bool{"labelled as an orphan": false, "owner reference to the pool": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := env.NewNamespace(t)
			env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
			env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(1).Obj())
			tpl := framework.Read[extv1beta1.SandboxTemplate](t, env, ns, "python")
			pool := framework.Read[extv1beta1.SandboxWarmPool](t, env, ns, "pool")
			// The forgery exists before the controllers start, so the pool's first pass sees it
			// and creates no member of its own.
			att := attacker(t, ns)
			forged := memberLike("pool-forged", tpl, pool, owned)
			refusedForProvenance(t, "Creating a Sandbox that looks like a member of pool",
				write(t, func() error { return att.Create(t.Context(), forged) }))
			env.StartKubelet(t, ns)
			env.StartKubox(t, ns, nil)
			waitForPoolReady(t, ns, "pool", 1)
			claimedSandboxIsClean(t, ns, "c1", testutil.MakeClaim("c1", ns).WarmPool("pool").Obj())
		})
	}
}

// TestEditedPoolMemberIsNeverBound: a user who may update Sandboxes changes the image of an
// unclaimed member of another team's pool. The member is stale by its spec, whatever its labels
// say: the claim never gets it, and the pool replaces it.
func TestEditedPoolMemberIsNeverBound(t *testing.T) {
	t.Parallel()
	ns := startWarm(t)
	members, err := poolMembers(t, ns, "pool")
	if err != nil {
		t.Fatal(err)
	}
	att := attacker(t, ns)
	edited := members[0].DeepCopy()
	err = write(t, func() error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := att.Get(t.Context(), client.ObjectKeyFromObject(edited), edited); err != nil {
				return err
			}
			edited.Spec.PodTemplate.Spec.Containers[0].Image = attackerImage
			return att.Update(t.Context(), edited)
		})
	})
	if err != nil {
		t.Fatalf("Updating member %s as a user who may update Sandboxes: %v", edited.Name, err)
	}
	claimedSandboxIsClean(t, ns, "c1", testutil.MakeClaim("c1", ns).WarmPool("pool").Obj())
	env.WaitForEvent(t, ns, "SandboxWarmPool", "pool", "Warning", "DeletedTamperedMembers", edited.Name)
}

// TestPlantedPodIsNeverAdoptedByAClaimedSandbox: a user who may create Pods plants one with the
// name a cold claim's Sandbox will have, labelled for adoption in each of the ways agent-sandbox
// allows. The claim's Sandbox never adopts it: it reports the squatter, and its Pod is never
// the attacker's.
func TestPlantedPodIsNeverAdoptedByAClaimedSandbox(t *testing.T) {
	cases := map[string]func(*testutil.PodWrapper) *testutil.PodWrapper{
		"adoptable label": func(p *testutil.PodWrapper) *testutil.PodWrapper {
			return p.Label(sandboxv1beta1.AdoptableLabel, "true")
		},
		"name-hash label": func(p *testutil.PodWrapper) *testutil.PodWrapper {
			return p.Label(sandboxv1beta1.SandboxNameHashLabel, sandboxv1beta1.NameHash("c1"))
		},
	}
	for name, label := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := startController(t)
			env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
			att := attacker(t, ns)
			planted := label(testutil.MakePod("c1", ns)).Obj()
			planted.Spec.Containers[0].Image = attackerImage
			if err := write(t, func() error { return att.Create(t.Context(), planted) }); err != nil {
				t.Fatalf("Planting Pod c1: %v", err)
			}
			env.Create(t, testutil.MakeClaim("c1", ns).Template("python").Obj())
			framework.Consistently(t, quiet, func() (bool, string) {
				pod := framework.Read[corev1.Pod](t, env, ns, "c1")
				if ref := metav1.GetControllerOf(pod); ref != nil {
					return false, fmt.Sprintf("the planted Pod c1 (image %s) is controlled by %s %s", pod.Spec.Containers[0].Image, ref.Kind, ref.Name)
				}
				return true, ""
			})
			env.WaitForEvent(t, ns, "Sandbox", "c1", "Warning", "AdoptionRefused", "Pod c1")
			sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, "c1")
			if meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady) {
				t.Errorf("Sandbox c1 is Ready with a planted Pod: %+v", sb.Status.Conditions)
			}
		})
	}
}

// TestChildOwnerReferencesNeedProvenance: a user who may create Pods and Secrets gives one an
// owner reference to a Sandbox (their own, whose Pod they want to replace, or a pool member's,
// whose agent token they want to choose). The API server refuses both; an ordinary Pod and an
// ordinary update of the user's own Sandbox still pass.
func TestChildOwnerReferencesNeedProvenance(t *testing.T) {
	t.Parallel()
	ns := startWarm(t)
	members, err := poolMembers(t, ns, "pool")
	if err != nil {
		t.Fatal(err)
	}
	member := &members[0]
	att := attacker(t, ns)
	own := testutil.MakeSandbox("own", ns).Suspended().Obj()
	if err := write(t, func() error { return att.Create(t.Context(), own) }); err != nil {
		t.Fatalf("Creating the user's own Sandbox: %v", err)
	}
	sandboxRef := func(sb *sandboxv1beta1.Sandbox) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: sandboxv1beta1.GroupVersion.String(), Kind: "Sandbox", Name: sb.Name, UID: sb.UID, Controller: ptr.To(true)}}
	}

	pod := testutil.MakePod("own", ns).Label(sandboxv1beta1.SandboxNameHashLabel, sandboxv1beta1.NameHash("own")).Obj()
	pod.Spec.Containers[0].Image = attackerImage
	pod.OwnerReferences = sandboxRef(own)
	refusedForProvenance(t, "Creating a Pod controlled by Sandbox own", att.Create(t.Context(), pod))

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sandboxv1beta1.AgentSecretName(member.Name), Namespace: ns,
		OwnerReferences: sandboxRef(member)}, StringData: map[string]string{"token": "chosen-by-the-attacker"}}
	refusedForProvenance(t, "Creating a Secret controlled by pool member "+member.Name, att.Create(t.Context(), secret))

	// Without the reference such a Pod is an ordinary Pod, and adding the reference later is
	// refused.
	ordinary := testutil.MakePod("ordinary", ns).Obj()
	if err := att.Create(t.Context(), ordinary); err != nil {
		t.Fatalf("Creating an ordinary Pod: %v", err)
	}
	base := ordinary.DeepCopy()
	ordinary.OwnerReferences = sandboxRef(own)
	refusedForProvenance(t, "Patching Pod ordinary to be controlled by Sandbox own", att.Patch(t.Context(), ordinary, client.MergeFrom(base)))

	// Ordinary updates pass: the user resumes their own Sandbox.
	if err := att.Patch(t.Context(), own, client.RawPatch("application/merge-patch+json",
		[]byte(`{"spec":{"operatingMode":"Running"}}`))); err != nil {
		t.Errorf("Patching spec.operatingMode of the user's own Sandbox: %v", err)
	}
}

// TestProvenancePermissionAllowsMarkingAndClaimedUpdates: a user granted create on
// sandboxes/provenance (an administrator) may hand a Sandbox to a pool, and a user who may only
// update Sandboxes still patches spec.operatingMode of the sandbox their claim got.
func TestProvenancePermissionAllowsMarkingAndClaimedUpdates(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(1).Obj())
	tpl := framework.Read[extv1beta1.SandboxTemplate](t, env, ns, "python")
	pool := framework.Read[extv1beta1.SandboxWarmPool](t, env, ns, "pool")
	admin := user(t, ns, "admin", framework.ProvenanceRule())
	marked := memberLike("pool-marked", tpl, pool, false)
	marked.Spec.PodTemplate.Spec.Containers[0].Image = tpl.Spec.PodTemplate.Spec.Containers[0].Image
	if err := write(t, func() error { return admin.Create(t.Context(), marked) }); err != nil {
		t.Fatalf("Creating a Sandbox labelled as a member of pool, with create on sandboxes/provenance: %v", err)
	}
	env.StartKubelet(t, ns)
	env.StartKubox(t, ns, nil)
	env.WaitForEvent(t, ns, "SandboxWarmPool", "pool", "Normal", "Adopted", "pool-marked")
	waitForPoolReady(t, ns, "pool", 1)
	env.Create(t, testutil.MakeClaim("c1", ns).WarmPool("pool").Obj())
	claim := waitReady(t, ns, "c1")
	if claim.Status.Sandbox.Name != "pool-marked" {
		t.Errorf("Claim got Sandbox %q; want the adopted member pool-marked", claim.Status.Sandbox.Name)
	}

	ordinary := user(t, ns, "ordinary")
	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, claim.Status.Sandbox.Name)
	err := write(t, func() error {
		return ordinary.Patch(t.Context(), sb, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"operatingMode":"Suspended"}}`)))
	})
	if err != nil {
		t.Errorf("Suspending the claimed Sandbox: %v", err)
	}
}
