package sandbox

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandbox"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// readySandbox creates the Sandbox sb (with a Service) and plays the kubelet until it is Ready.
// The Pod is not bound to a node, so deleting it removes it at once.
func readySandbox(t *testing.T, sb *sandboxv1beta1.Sandbox) (*corev1.Pod, *corev1.Service) {
	t.Helper()
	env.Create(t, sb)
	pod := waitForPod(t, sb.Namespace, sb.Name)
	env.UpdatePodStatus(t, sb.Namespace, sb.Name, framework.RunningAndReady("10.0.0.2"))
	waitForConditions(t, sb.Namespace, sb.Name,
		readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "Pod is Ready; Service Exists"))
	svc := framework.WaitForObject(t, env, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: sb.Namespace, Name: sb.Name}}, nil)
	return pod, svc
}

func setShutdownTime(t *testing.T, ns, name string, at time.Time) *sandboxv1beta1.Sandbox {
	t.Helper()
	return updateSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) {
		sb.Spec.ShutdownTime = ptr.To(metav1.NewTime(at.Truncate(time.Second)))
	})
}

// TestExpiry covers spec.shutdownTime with both shutdownPolicy values and both
// persistentVolumeClaimRetentionPolicy.whenExpired values.
func TestExpiry(t *testing.T) {
	t.Parallel()
	past := func() time.Time { return time.Now().Add(-time.Minute) }

	t.Run("Retain keeps the Sandbox, expired, and deletes its Pod and Service", func(t *testing.T) {
		t.Parallel()
		ns := startController(t)
		const name = "kept"
		pod, svc := readySandbox(t, testutil.MakeSandbox(name, ns).Service(true).VolumeClaimTemplate("data", "1Gi").Obj())
		setShutdownTime(t, ns, name, past())

		waitForConditions(t, ns, name,
			notReady(sandboxv1beta1.SandboxReasonExpired, "Sandbox has expired"),
			expiredNoPod)
		env.WaitGone(t, pod)
		env.WaitGone(t, svc)
		// The selector stays once set, as in agent-sandbox v1.
		selector := sandboxv1beta1.SandboxNameHashLabel + "=" + sandboxv1beta1.NameHash(name)
		sb := waitForSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) (bool, string) {
			return len(sb.Status.PodIPs) == 0 && sb.Status.NodeName == "" && sb.Status.Service == "" &&
				sb.Status.ServiceFQDN == "" && sb.Status.LabelSelector == selector, describe(sb)
		})
		if sb.DeletionTimestamp != nil {
			t.Errorf("Sandbox with shutdownPolicy Retain is being deleted; want it kept")
		}
		env.WaitForEvent(t, ns, "Sandbox", name, corev1.EventTypeNormal, sandbox.EventExpired, "shutdownPolicy Retain")

		// whenExpired defaults to Retain: the claim stays, still owned by the Sandbox.
		pvc := framework.WaitForObject(t, env, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns,
			Name: sandboxv1beta1.PVCName("data", name)}}, nil)
		if pvc.DeletionTimestamp != nil {
			t.Errorf("PersistentVolumeClaim %s is being deleted on expiry; whenExpired defaults to Retain", pvc.Name)
		}
		if ok, msg := env.IsControlledBy(pvc, sb); !ok {
			t.Error(msg)
		}
		// An expired Sandbox stays down.
		framework.Consistently(t, quiet, func() (bool, string) {
			podFound, err1 := env.Get(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			svcFound, err2 := env.Get(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			return !podFound && !svcFound && err1 == nil && err2 == nil, "a Pod or Service was recreated for an expired Sandbox"
		})
	})

	t.Run("Delete deletes the Sandbox", func(t *testing.T) {
		t.Parallel()
		ns := startController(t)
		const name = "gone"
		pod, svc := readySandbox(t, testutil.MakeSandbox(name, ns).Service(true).
			ShutdownPolicy(sandboxv1beta1.ShutdownPolicyDelete).Obj())
		setShutdownTime(t, ns, name, past())

		env.WaitGone(t, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		env.WaitGone(t, pod)
		env.WaitGone(t, svc)
		env.WaitForEvent(t, ns, "Sandbox", name, corev1.EventTypeNormal, sandbox.EventExpired, "shutdownPolicy Delete")
	})

	t.Run("whenExpired Delete deletes the claims", func(t *testing.T) {
		t.Parallel()
		ns := startController(t)
		const name = "wiped"
		pod, svc := readySandbox(t, testutil.MakeSandbox(name, ns).Service(true).
			VolumeClaimTemplate("data", "1Gi").VolumeClaimTemplate("cache", "1Gi").DeletePVCsWhenExpired().Obj())
		var pvcs []*corev1.PersistentVolumeClaim
		for _, vct := range []string{"data", "cache"} {
			pvcs = append(pvcs, framework.WaitForObject(t, env, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns,
				Name: sandboxv1beta1.PVCName(vct, name)}}, nil))
		}
		setShutdownTime(t, ns, name, past())

		waitForConditions(t, ns, name, notReady(sandboxv1beta1.SandboxReasonExpired, "Sandbox has expired"))
		env.WaitGone(t, pod)
		env.WaitGone(t, svc)
		for _, pvc := range pvcs {
			env.WaitDeleting(t, pvc)
		}
	})

	t.Run("a shutdownTime in the future fires by timer", func(t *testing.T) {
		t.Parallel()
		ns := startController(t)
		const name = "timed"
		pod, svc := readySandbox(t, testutil.MakeSandbox(name, ns).Service(true).Obj())

		// Nothing but the controller's own timer wakes it after this pass: the test writes nothing
		// more. The margin only has to cover one reconcile of the change.
		at := time.Now().Add(6 * time.Second)
		gen := setShutdownTime(t, ns, name, at).Generation
		framework.WaitFor(t, time.Until(at), func() (bool, string) {
			sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, name)
			return sb.Status.ObservedGeneration == gen && !isExpired(sb), describe(sb)
		})
		if found, err := env.Get(t, pod.DeepCopy()); !found || err != nil {
			t.Fatalf("Pod %s is gone before shutdownTime (err %v)", name, err)
		}

		waitForConditions(t, ns, name, notReady(sandboxv1beta1.SandboxReasonExpired, "Sandbox has expired"))
		env.WaitGone(t, pod)
		env.WaitGone(t, svc)
		if now := time.Now(); now.Before(at.Truncate(time.Second)) {
			t.Errorf("Sandbox expired at %v, before its shutdownTime %v", now, at.Truncate(time.Second))
		}
	})
}

func isExpired(sb *sandboxv1beta1.Sandbox) bool {
	c := findCondition(sb, sandboxv1beta1.SandboxConditionReady)
	return c != nil && c.Reason == sandboxv1beta1.SandboxReasonExpired
}
