package manager

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandbox"
)

// The cache transforms below decide what kubox-controller's memory holds per Sandbox: each
// Sandbox has a Pod and usually a Service in the cache, so a field kept there is kept 10,000 times
// in a cluster of 10,000 Sandboxes (test/bench/claims -only scale measures it). Reconcilers never
// write a Pod or Service from the cache with Update: they send patches of the fields they own,
// computed against the trimmed object, so a dropped field is never written back.

// TrimPod is the Pod informer's transform: it keeps the metadata, spec.nodeName, the command of
// the container that runs kubox-agent (its flags are the agent's ports, which the Sandbox records
// in status.agent), the status fields the Sandbox status is computed from and status.hostIP
// (where the node's kubox-node is), and drops the rest (other container specs, volumes, container
// statuses but a restored Pod's), which is most of a Pod's size. The
// strings Pods share are interned, as in TrimSandbox.
func TrimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod.ManagedFields = nil
	internObjectMeta(&pod.ObjectMeta)
	spec := corev1.PodSpec{NodeName: intern(pod.Spec.NodeName)}
	for _, c := range pod.Spec.Containers {
		if len(c.Command) > 0 && c.Command[0] == sandbox.AgentBinary {
			internStrings(c.Command)
			spec.Containers = []corev1.Container{{Name: intern(c.Name), Command: c.Command}}
			break
		}
	}
	pod.Spec = spec
	status := corev1.PodStatus{
		Phase:      corev1.PodPhase(intern(string(pod.Status.Phase))),
		Conditions: podConditions(pod.Status.Conditions),
		Message:    intern(pod.Status.Message),
		Reason:     intern(pod.Status.Reason),
		HostIP:     intern(pod.Status.HostIP),
		PodIP:      pod.Status.PodIP,
		PodIPs:     pod.Status.PodIPs,
	}
	if _, restoring := pod.Annotations[contract.RestoreImageAnnotation]; restoring {
		// A Pod restored from a memory snapshot: how its containers failed to start is how the
		// Sandbox controller sees a failed restore (memory.go).
		status.InitContainerStatuses = startStates(pod.Status.InitContainerStatuses)
		status.ContainerStatuses = startStates(pod.Status.ContainerStatuses)
	}
	pod.Status = status
	return pod, nil
}

// startStates keeps of each container status its name, readiness and why it waits or ended.
func startStates(cs []corev1.ContainerStatus) []corev1.ContainerStatus {
	var kept []corev1.ContainerStatus
	for _, c := range cs {
		kept = append(kept, corev1.ContainerStatus{Name: c.Name, Ready: c.Ready,
			State: stateReason(c.State), LastTerminationState: stateReason(c.LastTerminationState)})
	}
	return kept
}

func stateReason(s corev1.ContainerState) corev1.ContainerState {
	var out corev1.ContainerState
	if w := s.Waiting; w != nil {
		out.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
	}
	if t := s.Terminated; t != nil {
		out.Terminated = &corev1.ContainerStateTerminated{Reason: t.Reason, Message: t.Message, ExitCode: t.ExitCode}
	}
	return out
}

// keptPodConditions are the Pod conditions the Sandbox status is computed from: Ready and
// PodScheduled. A running Pod has three more (Initialized, ContainersReady,
// PodReadyToStartContainers) that nothing in kubox reads.
var keptPodConditions = map[corev1.PodConditionType]bool{corev1.PodReady: true, corev1.PodScheduled: true}

// podConditions returns the kept conditions of cs, their strings interned, in an array of their
// own, so the dropped ones are not held by it.
func podConditions(cs []corev1.PodCondition) []corev1.PodCondition {
	var kept []corev1.PodCondition
	for _, c := range cs {
		if keptPodConditions[c.Type] {
			c.Type = corev1.PodConditionType(intern(string(c.Type)))
			c.Status = corev1.ConditionStatus(intern(string(c.Status)))
			c.Reason, c.Message = intern(c.Reason), intern(c.Message)
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

// TrimSandbox is the Sandbox informer's transform. A Sandbox is decoded from JSON (a CRD has no
// protobuf), so each of its strings is an allocation of its own, though most are the same in
// every Sandbox of a template or a pool: label and annotation keys and values, owner references,
// the pod template's image, command and names, the condition types, reasons and messages. It
// interns those (Go's unique package: one copy per distinct value, dropped when no object holds
// it), and drops managedFields and kubectl's last-applied-configuration annotation (a copy of the
// object as applied), which nothing in kubox reads; reconcilers patch Sandboxes and never
// Update their metadata from the cache, so it is never written back without them. Every value
// a reader sees is unchanged.
func TrimSandbox(obj any) (any, error) {
	sb, ok := obj.(*sandboxv1beta1.Sandbox)
	if !ok {
		return obj, nil
	}
	sb.ManagedFields = nil
	delete(sb.Annotations, corev1.LastAppliedConfigAnnotation)
	internObjectMeta(&sb.ObjectMeta)
	sb.Spec.PodTemplate.Metadata.Labels = internMap(sb.Spec.PodTemplate.Metadata.Labels)
	sb.Spec.PodTemplate.Metadata.Annotations = internMap(sb.Spec.PodTemplate.Metadata.Annotations)
	internPodSpec(&sb.Spec.PodTemplate.Spec)
	st := &sb.Status
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Reason, c.Message = intern(c.Type), intern(c.Reason), intern(c.Message)
	}
	st.NodeName = intern(st.NodeName)
	return sb, nil
}

// internObjectMeta interns the metadata strings objects share: namespace, labels, annotations,
// owner references and finalizers. Names, UIDs and resource versions are each object's own.
func internObjectMeta(m *metav1.ObjectMeta) {
	m.Namespace, m.GenerateName = intern(m.Namespace), intern(m.GenerateName)
	m.Labels, m.Annotations = internMap(m.Labels), internMap(m.Annotations)
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion, r.Kind, r.Name, r.UID = intern(r.APIVersion), intern(r.Kind), intern(r.Name), types.UID(intern(string(r.UID)))
	}
	internStrings(m.Finalizers)
}

// internPodSpec interns the strings of a pod template's containers, which all Sandboxes of a
// template share.
func internPodSpec(s *corev1.PodSpec) {
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			c := &cs[i]
			c.Name, c.Image, c.WorkingDir = intern(c.Name), intern(c.Image), intern(c.WorkingDir)
			internStrings(c.Command)
			internStrings(c.Args)
			for j := range c.Env {
				c.Env[j].Name, c.Env[j].Value = intern(c.Env[j].Name), intern(c.Env[j].Value)
			}
		}
	}
	s.ServiceAccountName, s.RuntimeClassName = intern(s.ServiceAccountName), internPtr(s.RuntimeClassName)
}

// intern returns the canonical copy of s.
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

func internPtr(s *string) *string {
	if s != nil {
		*s = intern(*s)
	}
	return s
}

func internStrings(ss []string) {
	for i, s := range ss {
		ss[i] = intern(s)
	}
}

// internMap returns m with interned keys and values (a map cannot have its keys replaced in
// place).
func internMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[intern(k)] = intern(v)
	}
	return out
}
