package sandbox

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
	env.StartKubox(t, ns, nil)
	return ns
}

// updateSandbox changes the stored Sandbox with mutate, retrying on conflicts (the controller
// writes the Sandbox too).
func updateSandbox(t *testing.T, ns, name string, mutate func(*sandboxv1beta1.Sandbox)) *sandboxv1beta1.Sandbox {
	t.Helper()
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	framework.Update(t, env, sb, mutate)
	return sb
}

// waitForPod waits until the Pod exists and returns it.
func waitForPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	return framework.WaitForObject(t, env, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, nil)
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
	return framework.WaitForObject(t, env, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, ok)
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

// ownedBy reports whether any owner reference of obj names uid.
func ownedBy(obj metav1.Object, uid types.UID) bool {
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == uid })
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
