package manager

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kubox-dev/kubox/internal/controller/sandbox"
)

// The cache transforms below decide what kubox-controller's memory holds per Sandbox: each
// Sandbox has a Pod and usually a Service in the cache, so a field kept there is kept 10,000 times
// in a cluster of 10,000 Sandboxes (test/bench/claims -only scale measures it). Reconcilers never
// write a Pod or Service from the cache with Update: they send patches of the fields they own,
// computed against the trimmed object, so a dropped field is never written back.

// TrimPod is the Pod informer's transform: it keeps the metadata, spec.nodeName, the command of
// the container that runs kubox-agent (its flags are the agent's ports, which the Sandbox records
// in status.agent) and the status fields the Sandbox status is computed from, and drops the rest
// (other container specs, volumes, container statuses), which is most of a Pod's size.
func TrimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod.ManagedFields = nil
	spec := corev1.PodSpec{NodeName: pod.Spec.NodeName}
	for _, c := range pod.Spec.Containers {
		if len(c.Command) > 0 && c.Command[0] == sandbox.AgentBinary {
			spec.Containers = []corev1.Container{{Name: c.Name, Command: c.Command}}
			break
		}
	}
	pod.Spec = spec
	pod.Status = corev1.PodStatus{
		Phase:      pod.Status.Phase,
		Conditions: podConditions(pod.Status.Conditions),
		Message:    pod.Status.Message,
		Reason:     pod.Status.Reason,
		PodIP:      pod.Status.PodIP,
		PodIPs:     pod.Status.PodIPs,
	}
	return pod, nil
}

// keptPodConditions are the Pod conditions the Sandbox status is computed from: Ready and
// PodScheduled. A running Pod has three more (Initialized, ContainersReady,
// PodReadyToStartContainers) that nothing in kubox reads.
var keptPodConditions = map[corev1.PodConditionType]bool{corev1.PodReady: true, corev1.PodScheduled: true}

// podConditions returns the kept conditions of cs in an array of their own, so the dropped ones
// are not held by it.
func podConditions(cs []corev1.PodCondition) []corev1.PodCondition {
	var kept []corev1.PodCondition
	for _, c := range cs {
		if keptPodConditions[c.Type] {
			kept = append(kept, c)
		}
	}
	return kept
}

// TrimService is the Service informer's transform: a Sandbox's reconciler reads of its Service
// the metadata (owner, labels), spec.selector, spec.ports and spec.clusterIP (headless or not),
// so the rest of the spec (IP families, cluster IPs, policies) and the status are dropped.
func TrimService(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	svc.ManagedFields = nil
	svc.Spec = corev1.ServiceSpec{Selector: svc.Spec.Selector, Ports: svc.Spec.Ports, ClusterIP: svc.Spec.ClusterIP}
	svc.Status = corev1.ServiceStatus{}
	return svc, nil
}
