package sandbox

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandbox"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestMultiplePods starts the controller on a Sandbox that already controls two Pods: it reports
// MultiplePods with one Warning event and creates nothing, neither its own Pod nor its Service,
// until one of the two is deleted.
func TestMultiplePods(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	const name = "twins"
	env.Create(t, testutil.MakeSandbox(name, ns).Service(true).Obj())
	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, name)
	var pods []*corev1.Pod
	for _, podName := range []string{"twin-a", "twin-b"} {
		pod := testutil.MakePod(podName, ns).Label(sandboxv1beta1.SandboxNameHashLabel, sandboxv1beta1.NameHash(name)).
			ControlledBy(sb, testutil.SandboxKind).Obj()
		env.Create(t, pod)
		pods = append(pods, pod)
	}
	env.StartKubox(t, ns, nil)

	wantMsg := "multiple Pods (2) are controlled by this Sandbox; refusing to choose or create a Pod"
	sb = waitForConditions(t, ns, name,
		notReady(sandboxv1beta1.SandboxReasonMultiplePods, wantMsg),
		notSuspended,
		// PodScheduled stays present (agent-sandbox v1.0.13), with no single Pod to mirror.
		scheduledCond(metav1.ConditionUnknown, sandboxv1beta1.SandboxReasonPodSchedulingUnknown, wantMsg),
		absent(sandboxv1beta1.SandboxConditionFinished))
	if len(sb.Status.PodIPs) != 0 || sb.Status.Service != "" {
		t.Errorf("Sandbox with two Pods reports podIPs %v and service %q; want neither", sb.Status.PodIPs, sb.Status.Service)
	}
	env.WaitForEvent(t, ns, "Sandbox", name, corev1.EventTypeWarning, sandbox.EventMultiplePods, wantMsg)
	framework.Consistently(t, quiet, func() (bool, string) {
		podFound, err1 := env.Get(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		svcFound, err2 := env.Get(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		return !podFound && !svcFound && err1 == nil && err2 == nil,
			fmt.Sprintf("Pod created %t, Service created %t (errors %v, %v); want neither while two Pods are controlled", podFound, svcFound, err1, err2)
	})
	t.Log("Deleting one Pod lets the Sandbox go on with the other")
	env.ForceDelete(t, pods[1])
	framework.WaitForObject(t, env, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, nil)
	env.UpdatePodStatus(t, ns, pods[0].Name, framework.RunningAndReady("10.0.0.8"))
	sb = waitForConditions(t, ns, name,
		readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "Pod is Ready; Service Exists"))
	if len(sb.Status.PodIPs) != 1 || sb.Status.PodIPs[0] != "10.0.0.8" {
		t.Errorf("Sandbox reports podIPs %v; want the remaining Pod's, [10.0.0.8]", sb.Status.PodIPs)
	}
	if found, err := env.Get(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); found || err != nil {
		t.Errorf("A Pod %s was created although the Sandbox controls one (err %v)", name, err)
	}
}
