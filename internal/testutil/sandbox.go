// Package testutil builds the objects kubox's tests use: `MakeSandbox("a", ns).Suspended().Obj()`
// instead of pages of literals. Builders set only what a test asks for, plus the minimum the API
// server requires; they leave defaulting to the server.
package testutil

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// Defaults of the objects the builders make.
const (
	// DefaultContainer is the name of the one container a builder's Pod spec starts with.
	DefaultContainer = "main"
	// DefaultImage is its image. The registry does not resolve: no test pulls it.
	DefaultImage = "registry.invalid/busybox:1"
)

// DefaultCommand is the command of the default container.
func DefaultCommand() []string { return []string{"sleep", "infinity"} }

func defaultPodSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{
		Name:    DefaultContainer,
		Image:   DefaultImage,
		Command: DefaultCommand(),
	}}}
}

// SandboxWrapper builds a Sandbox.
type SandboxWrapper struct {
	sandboxv1beta1.Sandbox
}

// MakeSandbox starts a Sandbox named name in namespace ns with one container, DefaultContainer,
// running DefaultImage with DefaultCommand. Everything else is left to the API server's defaults.
func MakeSandbox(name, ns string) *SandboxWrapper {
	return &SandboxWrapper{sandboxv1beta1.Sandbox{
		TypeMeta: metav1.TypeMeta{
			APIVersion: sandboxv1beta1.GroupVersion.String(),
			Kind:       "Sandbox",
		},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: sandboxv1beta1.SandboxSpec{
			SandboxBlueprint: sandboxv1beta1.SandboxBlueprint{
				PodTemplate: sandboxv1beta1.PodTemplate{Spec: defaultPodSpec()},
			},
		},
	}}
}

// Obj returns a copy of the Sandbox built so far; the wrapper can go on building variants.
func (w *SandboxWrapper) Obj() *sandboxv1beta1.Sandbox {
	return w.DeepCopy()
}

// GenerateName has the API server name the Sandbox: prefix and a random suffix.
func (w *SandboxWrapper) GenerateName(prefix string) *SandboxWrapper {
	w.Name = ""
	w.ObjectMeta.GenerateName = prefix
	return w
}

// Label sets a label on the Sandbox.
func (w *SandboxWrapper) Label(k, v string) *SandboxWrapper {
	w.Labels = setKey(w.Labels, k, v)
	return w
}

// Annotation sets an annotation on the Sandbox.
func (w *SandboxWrapper) Annotation(k, v string) *SandboxWrapper {
	w.Annotations = setKey(w.Annotations, k, v)
	return w
}

// Image sets the image of the Pod's first container.
func (w *SandboxWrapper) Image(image string) *SandboxWrapper {
	w.Spec.PodTemplate.Spec.Containers[0].Image = image
	return w
}

// Command sets the command of the Pod's first container.
func (w *SandboxWrapper) Command(cmd ...string) *SandboxWrapper {
	w.Spec.PodTemplate.Spec.Containers[0].Command = cmd
	return w
}

// Container sets the container called name to run image, exposing ports over TCP. It replaces the
// container of that name (DefaultContainer included), or adds one after the others. The container
// has no command: the image's entry point runs.
func (w *SandboxWrapper) Container(name, image string, ports ...int32) *SandboxWrapper {
	w.Spec.PodTemplate.Spec.Containers = setContainer(w.Spec.PodTemplate.Spec.Containers, name, image, ports)
	return w
}

// PodSpec lets a test change the pod template's spec in ways the other methods do not cover.
func (w *SandboxWrapper) PodSpec(mutate func(*corev1.PodSpec)) *SandboxWrapper {
	mutate(&w.Spec.PodTemplate.Spec)
	return w
}

// RuntimeClass sets the Pod's runtimeClassName.
func (w *SandboxWrapper) RuntimeClass(name string) *SandboxWrapper {
	w.Spec.PodTemplate.Spec.RuntimeClassName = ptr.To(name)
	return w
}

// PodLabel sets a label of the pod template.
func (w *SandboxWrapper) PodLabel(k, v string) *SandboxWrapper {
	w.Spec.PodTemplate.Metadata.Labels = setKey(w.Spec.PodTemplate.Metadata.Labels, k, v)
	return w
}

// PodAnnotation sets an annotation of the pod template.
func (w *SandboxWrapper) PodAnnotation(k, v string) *SandboxWrapper {
	w.Spec.PodTemplate.Metadata.Annotations = setKey(w.Spec.PodTemplate.Metadata.Annotations, k, v)
	return w
}

// OperatingMode sets spec.operatingMode; Running and Suspended are shorthands.
func (w *SandboxWrapper) OperatingMode(m sandboxv1beta1.SandboxOperatingMode) *SandboxWrapper {
	w.Spec.OperatingMode = m
	return w
}

// Running sets spec.operatingMode to Running.
func (w *SandboxWrapper) Running() *SandboxWrapper {
	return w.OperatingMode(sandboxv1beta1.SandboxOperatingModeRunning)
}

// Suspended sets spec.operatingMode to Suspended.
func (w *SandboxWrapper) Suspended() *SandboxWrapper {
	return w.OperatingMode(sandboxv1beta1.SandboxOperatingModeSuspended)
}

// Service sets spec.service.
func (w *SandboxWrapper) Service(create bool) *SandboxWrapper {
	w.Spec.Service = ptr.To(create)
	return w
}

// ShutdownAt sets spec.shutdownTime to t, truncated to the second as the API server stores it, so
// a Sandbox read back compares equal to the one built.
func (w *SandboxWrapper) ShutdownAt(t time.Time) *SandboxWrapper {
	w.Spec.ShutdownTime = ptr.To(metav1.NewTime(t.Truncate(time.Second)))
	return w
}

// ShutdownPolicy sets spec.shutdownPolicy.
func (w *SandboxWrapper) ShutdownPolicy(p sandboxv1beta1.ShutdownPolicy) *SandboxWrapper {
	w.Spec.ShutdownPolicy = ptr.To(p)
	return w
}

// VolumeClaimTemplate adds a volume claim template called name: a ReadWriteOnce claim requesting
// size (a quantity such as "1Gi") of the default StorageClass.
func (w *SandboxWrapper) VolumeClaimTemplate(name, size string) *SandboxWrapper {
	w.Spec.VolumeClaimTemplates = append(w.Spec.VolumeClaimTemplates, MakeVolumeClaimTemplate(name, size))
	return w
}

// MakeVolumeClaimTemplate returns the volume claim template SandboxWrapper.VolumeClaimTemplate
// adds, for tests that change a stored Sandbox's templates.
func MakeVolumeClaimTemplate(name, size string) sandboxv1beta1.PersistentVolumeClaimTemplate {
	return sandboxv1beta1.PersistentVolumeClaimTemplate{
		Metadata: sandboxv1beta1.EmbeddedObjectMetadata{Name: name},
		Spec:     pvcSpec(size),
	}
}

// PersistentVolumeClaimRetentionPolicy sets spec.persistentVolumeClaimRetentionPolicy; empty
// values leave a field to the API server's default.
func (w *SandboxWrapper) PersistentVolumeClaimRetentionPolicy(whenDeleted, whenExpired sandboxv1beta1.PersistentVolumeClaimRetentionPolicyType) *SandboxWrapper {
	w.Spec.PersistentVolumeClaimRetentionPolicy = &sandboxv1beta1.PersistentVolumeClaimRetentionPolicy{
		WhenDeleted: whenDeleted,
		WhenExpired: whenExpired,
	}
	return w
}

// RetainPVCsWhenDeleted sets persistentVolumeClaimRetentionPolicy.whenDeleted to Retain, keeping
// whenExpired.
func (w *SandboxWrapper) RetainPVCsWhenDeleted() *SandboxWrapper {
	w.retentionPolicy().WhenDeleted = sandboxv1beta1.RetainPersistentVolumeClaimRetentionPolicyType
	return w
}

// DeletePVCsWhenExpired sets persistentVolumeClaimRetentionPolicy.whenExpired to Delete, keeping
// whenDeleted.
func (w *SandboxWrapper) DeletePVCsWhenExpired() *SandboxWrapper {
	w.retentionPolicy().WhenExpired = sandboxv1beta1.DeletePersistentVolumeClaimRetentionPolicyType
	return w
}

func (w *SandboxWrapper) retentionPolicy() *sandboxv1beta1.PersistentVolumeClaimRetentionPolicy {
	if w.Spec.PersistentVolumeClaimRetentionPolicy == nil {
		w.Spec.PersistentVolumeClaimRetentionPolicy = &sandboxv1beta1.PersistentVolumeClaimRetentionPolicy{}
	}
	return w.Spec.PersistentVolumeClaimRetentionPolicy
}

// Finalizer adds a finalizer to the Sandbox.
func (w *SandboxWrapper) Finalizer(f string) *SandboxWrapper {
	w.Finalizers = append(w.Finalizers, f)
	return w
}

// Condition sets a status condition, replacing one of the same type. The API server ignores status
// on create: write it with Status().Update.
func (w *SandboxWrapper) Condition(c metav1.Condition) *SandboxWrapper {
	for i := range w.Status.Conditions {
		if w.Status.Conditions[i].Type == c.Type {
			w.Status.Conditions[i] = c
			return w
		}
	}
	w.Status.Conditions = append(w.Status.Conditions, c)
	return w
}

func setKey(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

func setContainer(cs []corev1.Container, name, image string, ports []int32) []corev1.Container {
	c := corev1.Container{Name: name, Image: image}
	for _, p := range ports {
		c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: p, Protocol: corev1.ProtocolTCP})
	}
	for i := range cs {
		if cs[i].Name == name {
			cs[i] = c
			return cs
		}
	}
	return append(cs, c)
}

func pvcSpec(size string) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
		},
	}
}

// SandboxKind is the GroupVersionKind of Sandbox, for ControlledBy.
var SandboxKind = sandboxv1beta1.GroupVersion.WithKind("Sandbox")
