package sandbox

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// quiet is how long a test watches for something that must not happen. A short window makes such
// a check weaker, never flaky.
const quiet = time.Second

// clusterDomain is the default of ControllerConfiguration.clusterDomain.
const clusterDomain = configv1alpha1.DefaultClusterDomain

// startController creates a namespace for t and starts the Sandbox controller watching it, set up
// as kubox-controller sets it up: the field indexes, the production caches (label-scoped Pod,
// Service and PVC informers, trimmed Pods) and the default configuration.
func startController(t *testing.T) string {
	t.Helper()
	ns := env.NewNamespace(t)
	startControllerIn(t, ns)
	return ns
}

// startControllerIn starts the Sandbox controller watching ns, which already exists.
func startControllerIn(t *testing.T, ns string) {
	t.Helper()
	env.StartKubox(t, ns, nil)
}

func create(t *testing.T, obj client.Object) { env.Create(t, obj) }

func key(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

func getSandbox(t *testing.T, ns, name string) *sandboxv1beta1.Sandbox {
	t.Helper()
	sb := &sandboxv1beta1.Sandbox{}
	if err := env.Client.Get(t.Context(), key(ns, name), sb); err != nil {
		t.Fatalf("Reading Sandbox %s: %v", name, err)
	}
	return sb
}

// updateSandbox changes the stored Sandbox with mutate, retrying on conflicts (the controller
// writes the Sandbox too).
func updateSandbox(t *testing.T, ns, name string, mutate func(*sandboxv1beta1.Sandbox)) *sandboxv1beta1.Sandbox {
	t.Helper()
	sb := &sandboxv1beta1.Sandbox{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(t.Context(), key(ns, name), sb); err != nil {
			return err
		}
		mutate(sb)
		return env.Client.Update(t.Context(), sb)
	})
	if err != nil {
		t.Fatalf("Updating Sandbox %s: %v", name, err)
	}
	return sb
}

// updatePodStatus plays the kubelet: it changes the Pod's status with mutate.
func updatePodStatus(t *testing.T, ns, name string, mutate func(*corev1.PodStatus)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod := &corev1.Pod{}
		if err := env.Client.Get(t.Context(), key(ns, name), pod); err != nil {
			return err
		}
		mutate(&pod.Status)
		return env.Client.Status().Update(t.Context(), pod)
	})
	if err != nil {
		t.Fatalf("Updating the status of Pod %s: %v", name, err)
	}
}

// setPodCondition sets one Pod condition, replacing one of the same type.
func setPodCondition(st *corev1.PodStatus, c corev1.PodCondition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// runReady makes the Pod Running and Ready with the given IPs, as the kubelet reports it.
func runReady(ips ...string) func(*corev1.PodStatus) {
	return func(st *corev1.PodStatus) {
		st.Phase = corev1.PodRunning
		setPodCondition(st, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue})
		setPodCondition(st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
		st.PodIP, st.PodIPs = "", nil
		for _, ip := range ips {
			st.PodIPs = append(st.PodIPs, corev1.PodIP{IP: ip})
		}
		if len(ips) > 0 {
			st.PodIP = ips[0]
		}
	}
}

// bindPod plays the scheduler: it binds the Pod to node through the binding subresource, which
// sets spec.nodeName and PodScheduled=True. Once bound, a Pod is deleted gracefully: it stays
// Terminating until forceDelete, the kubelet's part, removes it.
func bindPod(t *testing.T, ns, name, node string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := env.Client.SubResource("binding").Create(t.Context(), pod, binding); err != nil {
		t.Fatalf("Binding Pod %s to node %s: %v", name, node, err)
	}
}

// forceDelete removes a terminating Pod at once, as the kubelet does once its containers stopped.
func forceDelete(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Delete(t.Context(), obj, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		t.Fatalf("Deleting %T %s: %v", obj, obj.GetName(), err)
	}
}

// get reads obj's current state; it reports false when the object is gone.
func get(t *testing.T, obj client.Object) (bool, error) { return env.Get(t, obj) }

// waitForObject waits until the object named like obj exists and ok (if any) accepts it.
func waitForObject[T client.Object](t *testing.T, obj T, ok func(T) (bool, string)) T {
	return framework.WaitForObject(t, env, obj, ok)
}

// waitForPod waits until the Pod exists and returns it.
func waitForPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	return waitForObject(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, nil)
}

// waitGone waits until the object named like obj no longer exists.
func waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	framework.Eventually(t, func() (bool, string) {
		found, err := get(t, obj)
		if err != nil {
			return false, err.Error()
		}
		return !found, fmt.Sprintf("%T %s still exists (deletionTimestamp %v)", obj, obj.GetName(), obj.GetDeletionTimestamp())
	})
}

// waitDeleted waits until the object is gone or being deleted (a PVC keeps its protection
// finalizer until a controller that envtest does not run removes it).
func waitDeleted(t *testing.T, obj client.Object) {
	t.Helper()
	framework.Eventually(t, func() (bool, string) {
		found, err := get(t, obj)
		if err != nil {
			return false, err.Error()
		}
		return !found || obj.GetDeletionTimestamp() != nil, fmt.Sprintf("%T %s exists and is not being deleted", obj, obj.GetName())
	})
}

// wantCondition is a Sandbox condition a test expects; Absent expects no condition of the type.
// Every present condition must carry the Sandbox's current generation.
type wantCondition struct {
	Type    string
	Status  metav1.ConditionStatus
	Reason  string
	Message string
	Absent  bool
}

func absent(condType string) wantCondition { return wantCondition{Type: condType, Absent: true} }

func readyCond(status metav1.ConditionStatus, reason, msg string) wantCondition {
	return wantCondition{Type: sandboxv1beta1.SandboxConditionReady, Status: status, Reason: reason, Message: msg}
}

func notReady(reason, msg string) wantCondition {
	return readyCond(metav1.ConditionFalse, reason, msg)
}

func suspendedCond(status metav1.ConditionStatus, reason, msg string) wantCondition {
	return wantCondition{Type: sandboxv1beta1.SandboxConditionSuspended, Status: status, Reason: reason, Message: msg}
}

var notSuspended = suspendedCond(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonNotSuspended, "Sandbox is not suspended")

func scheduledCond(status metav1.ConditionStatus, reason, msg string) wantCondition {
	return wantCondition{Type: sandboxv1beta1.SandboxConditionPodScheduled, Status: status, Reason: reason, Message: msg}
}

func finishedCond(reason, msg string) wantCondition {
	return wantCondition{Type: sandboxv1beta1.SandboxConditionFinished, Status: metav1.ConditionTrue, Reason: reason, Message: msg}
}

// conditionsMatch reports whether sb's conditions are as wanted, and describes them.
func conditionsMatch(sb *sandboxv1beta1.Sandbox, want []wantCondition) (bool, string) {
	ok := true
	for _, w := range want {
		got := findCondition(sb, w.Type)
		switch {
		case w.Absent:
			ok = ok && got == nil
		case got == nil:
			ok = false
		default:
			ok = ok && got.Status == w.Status && got.Reason == w.Reason && got.Message == w.Message &&
				got.ObservedGeneration == sb.Generation
		}
	}
	return ok, describe(sb)
}

func findCondition(sb *sandboxv1beta1.Sandbox, condType string) *metav1.Condition {
	for i := range sb.Status.Conditions {
		if sb.Status.Conditions[i].Type == condType {
			return &sb.Status.Conditions[i]
		}
	}
	return nil
}

// describe summarizes a Sandbox's status for failure messages.
func describe(sb *sandboxv1beta1.Sandbox) string {
	var b strings.Builder
	fmt.Fprintf(&b, "generation %d, status{observedGeneration %d, podIPs %v, nodeName %q, service %q, serviceFQDN %q, selector %q, conditions [",
		sb.Generation, sb.Status.ObservedGeneration, sb.Status.PodIPs, sb.Status.NodeName, sb.Status.Service,
		sb.Status.ServiceFQDN, sb.Status.LabelSelector)
	for _, c := range sb.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s/%s %q (gen %d)", c.Type, c.Status, c.Reason, c.Message, c.ObservedGeneration)
	}
	b.WriteString(" ]}")
	return b.String()
}

// waitForSandbox waits until ok accepts the stored Sandbox and returns it.
func waitForSandbox(t *testing.T, ns, name string, ok func(*sandboxv1beta1.Sandbox) (bool, string)) *sandboxv1beta1.Sandbox {
	t.Helper()
	return waitForObject(t, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, ok)
}

// waitForConditions waits until the Sandbox's status is of its current generation and its
// conditions are as wanted, and returns it.
func waitForConditions(t *testing.T, ns, name string, want ...wantCondition) *sandboxv1beta1.Sandbox {
	t.Helper()
	return waitForSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) (bool, string) {
		ok, desc := conditionsMatch(sb, want)
		return ok && sb.Status.ObservedGeneration == sb.Generation, desc
	})
}

// controllerUID returns the UID of obj's controller owner reference, or "".
func controllerUID(obj metav1.Object) types.UID {
	if ref := metav1.GetControllerOf(obj); ref != nil {
		return ref.UID
	}
	return ""
}

// isControlledBy reports whether sb is obj's controller, with the reference a garbage collector
// follows: kind Sandbox, controller and blockOwnerDeletion set.
func isControlledBy(obj metav1.Object, sb *sandboxv1beta1.Sandbox) (bool, string) {
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		return false, fmt.Sprintf("%s has no controller (owner references %v)", obj.GetName(), obj.GetOwnerReferences())
	}
	ok := ref.UID == sb.UID && ref.Kind == "Sandbox" && ref.APIVersion == sandboxv1beta1.GroupVersion.String() &&
		ref.Name == sb.Name && ptr.Deref(ref.BlockOwnerDeletion, false)
	return ok, fmt.Sprintf("%s has controller reference %+v; want Sandbox %s (uid %s)", obj.GetName(), *ref, sb.Name, sb.UID)
}

// ownedBy reports whether any owner reference of obj names uid.
func ownedBy(obj metav1.Object, uid types.UID) bool {
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == uid })
}

// waitForEvent waits for an event of type and reason about the Sandbox whose note contains noteSubstr.
func waitForEvent(t *testing.T, ns, name, eventType, reason, noteSubstr string) eventsv1.Event {
	return env.WaitForEvent(t, ns, "Sandbox", name, eventType, reason, noteSubstr)
}

// podVolume returns the Pod's volume called name, or nil.
func podVolume(pod *corev1.Pod, name string) *corev1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}
