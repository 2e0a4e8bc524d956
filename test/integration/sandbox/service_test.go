package sandbox

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestServiceToggle switches spec.service between unset, true and false on a Ready Sandbox: true
// makes a headless Service that selects the Pod, unset keeps (and requires) an owned one without
// making one, false deletes it.
func TestServiceToggle(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	const name = "svc"
	sbw := testutil.MakeSandbox(name, ns).Container("main", testutil.DefaultImage).PodSpec(func(s *corev1.PodSpec) {
		s.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {ContainerPort: 9090, Protocol: corev1.ProtocolUDP}}
		s.InitContainers = []corev1.Container{{Name: "sidecar", Image: testutil.DefaultImage, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
			Ports: []corev1.ContainerPort{{ContainerPort: 7070}, {Name: "dup", ContainerPort: 8080}, {Name: "http", ContainerPort: 8081}}}}
	})
	env.Create(t, sbw.Obj())
	svcKey := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	waitForPod(t, ns, name)
	env.UpdatePodStatus(t, ns, name, framework.RunningAndReady("10.0.0.7"))

	t.Log("Unset: no Service")
	waitForConditions(t, ns, name, readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"))
	if found, err := env.Get(t, svcKey.DeepCopy()); found || err != nil {
		t.Fatalf("Service %s exists (err %v) while spec.service is unset; want none", name, err)
	}

	// Ports: containers' first, then sidecars'; a port keeps the first name given to it unless
	// another port has that name already.
	t.Log("True: a headless Service selecting the Pod, with the containers' ports")
	updateSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) { sb.Spec.Service = ptr.To(true) })
	sb := waitForConditions(t, ns, name,
		readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "Pod is Ready; Service Exists"))
	if want := fmt.Sprintf("%s.%s.svc.%s", name, ns, clusterDomain); sb.Status.Service != name || sb.Status.ServiceFQDN != want {
		t.Errorf("Sandbox reports service %q (%q); want %q (%q)", sb.Status.Service, sb.Status.ServiceFQDN, name, want)
	}
	svc := framework.WaitForObject(t, env, svcKey.DeepCopy(), nil)
	if ok, msg := env.IsControlledBy(svc, sb); !ok {
		t.Error(msg)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service clusterIP %q; want None (headless)", svc.Spec.ClusterIP)
	}
	if got := svc.Labels[sandboxv1beta1.SandboxNameHashLabel]; got != sandboxv1beta1.NameHash(name) {
		t.Errorf("Service label %s=%q; want %q", sandboxv1beta1.SandboxNameHashLabel, got, sandboxv1beta1.NameHash(name))
	}
	if diff := cmp.Diff(map[string]string{sandboxv1beta1.SandboxNameLabel: name}, svc.Spec.Selector); diff != "" {
		t.Errorf("Service selector (-want +got):\n%s", diff)
	}
	wantPorts := []corev1.ServicePort{
		{Name: "p-7070-tcp", Port: 7070, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(7070)},
		{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)},
		{Name: "p-8081-tcp", Port: 8081, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8081)},
		{Name: "p-9090-udp", Port: 9090, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(9090)},
	}
	if diff := cmp.Diff(wantPorts, svc.Spec.Ports); diff != "" {
		t.Errorf("Service ports (-want +got):\n%s", diff)
	}
	pod := waitForPod(t, ns, name)
	for k, v := range svc.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("Service selector %s=%s does not select the Pod, labelled %v", k, v, pod.Labels)
		}
	}

	t.Log("A deleted Service is made again")
	if err := env.Client.Delete(t.Context(), svc); err != nil {
		t.Fatalf("Deleting Service: %v", err)
	}
	recreated := framework.WaitForObject(t, env, svcKey.DeepCopy(), func(s *corev1.Service) (bool, string) {
		return s.UID != svc.UID, "the deleted Service is still there"
	})
	svc = recreated

	t.Log("Unset again: the owned Service stays and is still required")
	updateSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) { sb.Spec.Service = nil })
	waitForConditions(t, ns, name,
		readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "Pod is Ready; Service Exists"))
	framework.Consistently(t, quiet, func() (bool, string) {
		cur := svcKey.DeepCopy()
		found, err := env.Get(t, cur)
		return found && err == nil && cur.UID == svc.UID && cur.DeletionTimestamp == nil, "the Service was deleted while spec.service is unset"
	})

	t.Log("False: the owned Service is deleted")
	updateSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) { sb.Spec.Service = ptr.To(false) })
	env.WaitGone(t, svcKey.DeepCopy())
	sb = waitForConditions(t, ns, name, readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"))
	if sb.Status.Service != "" || sb.Status.ServiceFQDN != "" {
		t.Errorf("Sandbox reports service %q (%q) after spec.service=false; want none", sb.Status.Service, sb.Status.ServiceFQDN)
	}
}

// TestServiceFalseLeavesAForeignService: spec.service=false deletes only a Service the Sandbox
// owns; an unowned one of the same name stays.
func TestServiceFalseLeavesAForeignService(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	const name = "keepout"
	foreign := testutil.MakeService(name, ns).Labels(map[string]string{sandboxv1beta1.SandboxNameHashLabel: sandboxv1beta1.NameHash(name)}).Obj()
	env.Create(t, foreign)
	env.Create(t, testutil.MakeSandbox(name, ns).Service(false).Obj())
	waitForPod(t, ns, name)
	env.UpdatePodStatus(t, ns, name, framework.RunningAndReady("10.0.0.1"))
	sb := waitForConditions(t, ns, name, readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"))
	if sb.Status.Service != "" {
		t.Errorf("Sandbox reports service %q, which it does not own; want none", sb.Status.Service)
	}
	framework.Consistently(t, quiet, func() (bool, string) {
		cur := foreign.DeepCopy()
		found, err := env.Get(t, cur)
		return found && err == nil && cur.ResourceVersion == foreign.ResourceVersion, "the foreign Service was changed or deleted"
	})
}
