package sandboxclaim

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestClaimRecreatedWhileItsPredecessorsSandboxIsCollected is what TestStormClaimsDeletedWhileBinding
// found, made deterministic: a claim deleted and created again under its name meets, on the cold
// path, the Sandbox of the claim before it (named like both), which the garbage collector has not
// deleted yet; and its own Sandbox then meets the old Sandbox's Pod (named like both too). Neither
// belongs to a live owner (two objects of a kind cannot share a name), so the new claim, and then
// its Sandbox, wait for them to go, saying so, rather than reporting a conflict that asks the user
// to delete or rename something, and never touch them. The test API server runs no garbage
// collector: the test deletes the old Sandbox and its Pod as the collector would.
func TestClaimRecreatedWhileItsPredecessorsSandboxIsCollected(t *testing.T) {
	ns := startController(t)
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	first := testutil.MakeClaim("c1", ns).Template("python").Obj()
	env.Create(t, first)
	waitReady(t, ns, "c1")
	old := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, "c1")
	oldPod := framework.Read[corev1.Pod](t, env, ns, "c1")
	if err := env.Client.Delete(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	env.WaitGone(t, first)

	second := testutil.MakeClaim("c1", ns).Template("python").Obj()
	env.Create(t, second)
	c := waitNotReady(t, ns, "c1", extv1beta1.ClaimReasonSandboxCreatePending)
	if r := readyCondition(c); !strings.Contains(r.Message, string(first.UID)) || !strings.Contains(r.Message, "garbage") {
		t.Errorf("Ready message = %q; want it to say Sandbox c1 belongs to the deleted claim %s and waits for the garbage collector", r.Message, first.UID)
	}
	framework.Consistently(t, quiet, func() (bool, string) {
		sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, "c1")
		ok, _ := env.IsControlledBy(sb, first)
		return sb.UID == old.UID && ok, fmt.Sprintf("Sandbox c1 (uid %s; the old one is %s): owner references %v; want it left to the garbage collector", sb.UID, old.UID, sb.OwnerReferences)
	})

	// The garbage collector deletes it, and the claim's own Sandbox meets the old Sandbox's Pod,
	// which the collector deletes next: that Sandbox waits for it too, and leaves it alone.
	env.ForceDelete(t, old)
	framework.Eventually(t, func() (bool, string) {
		sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"}}
		found, err := env.Get(t, sb)
		if err != nil || !found || sb.UID == old.UID {
			return false, fmt.Sprintf("Sandbox c1: found %t, uid %s (the old one is %s), err %v", found, sb.UID, old.UID, err)
		}
		ready := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
		return ready != nil && ready.Reason == sandboxv1beta1.SandboxReasonDependenciesNotReady &&
				strings.Contains(ready.Message, "earlier Sandbox c1") && strings.Contains(ready.Message, string(old.UID)),
			fmt.Sprintf("Sandbox c1 Ready %+v; want DependenciesNotReady (a wait, not an error) saying Pod c1 belongs to the deleted Sandbox %s", ready, old.UID)
	})
	framework.Consistently(t, quiet, func() (bool, string) {
		pod := framework.Read[corev1.Pod](t, env, ns, "c1")
		ok, _ := env.IsControlledBy(pod, old)
		return pod.UID == oldPod.UID && ok, fmt.Sprintf("Pod c1 (uid %s; the old one is %s): owner references %v; want it left to the garbage collector", pod.UID, oldPod.UID, pod.OwnerReferences)
	})
	env.ForceDelete(t, oldPod)
	c = waitReady(t, ns, "c1")
	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, "c1")
	if ok, desc := isBoundTo(sb, c); !ok || sb.UID == old.UID {
		t.Errorf("%s (uid %s, the old one was %s); want a new Sandbox bound to the new claim", desc, sb.UID, old.UID)
	}
	pod := framework.Read[corev1.Pod](t, env, ns, "c1")
	if ok, desc := env.IsControlledBy(pod, sb); !ok || pod.UID == oldPod.UID {
		t.Errorf("%s; want a new Pod of the new Sandbox", desc)
	}
}
