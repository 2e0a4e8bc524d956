package testutil

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// controlledBy makes owner the controller of obj. owner must have been created: its UID is used.
func controlledBy(obj metav1.Object, owner client.Object, gvk schema.GroupVersionKind) {
	ref := metav1.NewControllerRef(owner, gvk)
	refs := obj.GetOwnerReferences()
	for i := range refs {
		if refs[i].UID == ref.UID {
			refs[i] = *ref
			obj.SetOwnerReferences(refs)
			return
		}
	}
	obj.SetOwnerReferences(append(refs, *ref))
}

func mergeKeys(dst, src map[string]string) map[string]string {
	for k, v := range src {
		dst = setKey(dst, k, v)
	}
	return dst
}

// PodWrapper builds a Pod, for pre-existing Pods in adoption tests and for Pod status that a
// controller test drives by hand (there is no kubelet).
type PodWrapper struct {
	corev1.Pod
}

// MakePod starts a Pod named name in namespace ns with the same container as MakeSandbox's.
func MakePod(name, ns string) *PodWrapper {
	return &PodWrapper{corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       defaultPodSpec(),
	}}
}

// Obj returns a copy of the Pod built so far. The API server ignores status on create: write the
// status this builder sets with Status().Update after creating the Pod.
func (w *PodWrapper) Obj() *corev1.Pod {
	return w.DeepCopy()
}

// Labels adds labels to the Pod.
func (w *PodWrapper) Labels(labels map[string]string) *PodWrapper {
	w.ObjectMeta.Labels = mergeKeys(w.ObjectMeta.Labels, labels)
	return w
}

// Label sets a label on the Pod.
func (w *PodWrapper) Label(k, v string) *PodWrapper {
	w.ObjectMeta.Labels = setKey(w.ObjectMeta.Labels, k, v)
	return w
}

// Annotation sets an annotation on the Pod.
func (w *PodWrapper) Annotation(k, v string) *PodWrapper {
	w.Annotations = setKey(w.Annotations, k, v)
	return w
}

// ControlledBy makes owner, of kind gvk, the Pod's controller. owner must have been created.
func (w *PodWrapper) ControlledBy(owner client.Object, gvk schema.GroupVersionKind) *PodWrapper {
	controlledBy(&w.Pod, owner, gvk)
	return w
}

// NodeName sets spec.nodeName, as if the Pod had been scheduled.
func (w *PodWrapper) NodeName(node string) *PodWrapper {
	w.Spec.NodeName = node
	return w
}

// Phase sets status.phase.
func (w *PodWrapper) Phase(p corev1.PodPhase) *PodWrapper {
	w.Status.Phase = p
	return w
}

// Ready sets the Pod's Ready and ContainersReady conditions to True.
func (w *PodWrapper) Ready() *PodWrapper {
	w.condition(corev1.ContainersReady, corev1.ConditionTrue)
	return w.condition(corev1.PodReady, corev1.ConditionTrue)
}

// Scheduled sets the Pod's PodScheduled condition to True.
func (w *PodWrapper) Scheduled() *PodWrapper {
	return w.condition(corev1.PodScheduled, corev1.ConditionTrue)
}

// Condition sets one of the Pod's conditions, replacing one of the same type.
func (w *PodWrapper) Condition(c corev1.PodCondition) *PodWrapper {
	for i := range w.Status.Conditions {
		if w.Status.Conditions[i].Type == c.Type {
			w.Status.Conditions[i] = c
			return w
		}
	}
	w.Status.Conditions = append(w.Status.Conditions, c)
	return w
}

func (w *PodWrapper) condition(t corev1.PodConditionType, s corev1.ConditionStatus) *PodWrapper {
	return w.Condition(corev1.PodCondition{Type: t, Status: s})
}

// IP sets status.podIP and status.podIPs to ip alone.
func (w *PodWrapper) IP(ip string) *PodWrapper {
	w.Status.PodIP = ip
	w.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	return w
}

// ServiceWrapper builds a Service.
type ServiceWrapper struct {
	corev1.Service
}

// MakeService starts a headless Service named name in namespace ns, with no selector and no ports.
func MakeService(name, ns string) *ServiceWrapper {
	return &ServiceWrapper{corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone},
	}}
}

// Obj returns a copy of the Service built so far.
func (w *ServiceWrapper) Obj() *corev1.Service {
	return w.DeepCopy()
}

// Labels adds labels to the Service.
func (w *ServiceWrapper) Labels(labels map[string]string) *ServiceWrapper {
	w.ObjectMeta.Labels = mergeKeys(w.ObjectMeta.Labels, labels)
	return w
}

// Selector adds to the Service's selector.
func (w *ServiceWrapper) Selector(selector map[string]string) *ServiceWrapper {
	w.Spec.Selector = mergeKeys(w.Spec.Selector, selector)
	return w
}

// ControlledBy makes owner, of kind gvk, the Service's controller. owner must have been created.
func (w *ServiceWrapper) ControlledBy(owner client.Object, gvk schema.GroupVersionKind) *ServiceWrapper {
	controlledBy(&w.Service, owner, gvk)
	return w
}

// PVCWrapper builds a PersistentVolumeClaim.
type PVCWrapper struct {
	corev1.PersistentVolumeClaim
}

// MakePVC starts a ReadWriteOnce PersistentVolumeClaim for 1Gi named name in namespace ns.
func MakePVC(name, ns string) *PVCWrapper {
	return &PVCWrapper{corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       pvcSpec("1Gi"),
	}}
}

// Obj returns a copy of the PersistentVolumeClaim built so far.
func (w *PVCWrapper) Obj() *corev1.PersistentVolumeClaim {
	return w.DeepCopy()
}

// Labels adds labels to the claim.
func (w *PVCWrapper) Labels(labels map[string]string) *PVCWrapper {
	w.ObjectMeta.Labels = mergeKeys(w.ObjectMeta.Labels, labels)
	return w
}

// Size sets the storage the claim requests, a quantity such as "1Gi".
func (w *PVCWrapper) Size(size string) *PVCWrapper {
	w.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(size)
	return w
}

// ControlledBy makes owner, of kind gvk, the claim's controller. owner must have been created.
func (w *PVCWrapper) ControlledBy(owner client.Object, gvk schema.GroupVersionKind) *PVCWrapper {
	controlledBy(&w.PersistentVolumeClaim, owner, gvk)
	return w
}
