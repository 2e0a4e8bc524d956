package testutil

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// Builders for the extension kinds (SandboxTemplate, SandboxWarmPool, SandboxClaim), in the style
// of MakeSandbox: they set only what a test asks for, plus the minimum the API server requires,
// and leave defaulting to the server.

// TemplateWrapper builds a SandboxTemplate.
type TemplateWrapper struct{ extv1beta1.SandboxTemplate }

// MakeTemplate starts a SandboxTemplate whose blueprint is MakeSandbox's.
func MakeTemplate(name, ns string) *TemplateWrapper {
	return &TemplateWrapper{extv1beta1.SandboxTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxTemplate"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: extv1beta1.SandboxTemplateSpec{SandboxBlueprint: sandboxv1beta1.SandboxBlueprint{
			PodTemplate: MakeSandbox("blueprint", ns).Obj().Spec.PodTemplate,
		}},
	}}
}

// Obj returns a copy of the template built so far.
func (w *TemplateWrapper) Obj() *extv1beta1.SandboxTemplate { return w.DeepCopy() }

// Meta sets the UID and generation the API server would have given the template.
func (w *TemplateWrapper) Meta(uid types.UID, generation int64) *TemplateWrapper {
	w.UID, w.Generation = uid, generation
	return w
}

// NetworkPolicyManagement sets spec.networkPolicyManagement.
func (w *TemplateWrapper) NetworkPolicyManagement(m extv1beta1.NetworkPolicyManagement) *TemplateWrapper {
	w.Spec.NetworkPolicyManagement = m
	return w
}

// Unmanaged leaves network policy to someone else (tests that are not about it).
func (w *TemplateWrapper) Unmanaged() *TemplateWrapper {
	return w.NetworkPolicyManagement(extv1beta1.NetworkPolicyManagementUnmanaged)
}

// NetworkPolicy sets spec.networkPolicy.
func (w *TemplateWrapper) NetworkPolicy(np *extv1beta1.NetworkPolicySpec) *TemplateWrapper {
	w.Spec.NetworkPolicy = np
	return w
}

// Rules sets spec.networkPolicy to these rules.
func (w *TemplateWrapper) Rules(ingress []networkingv1.NetworkPolicyIngressRule, egress []networkingv1.NetworkPolicyEgressRule) *TemplateWrapper {
	return w.NetworkPolicy(&extv1beta1.NetworkPolicySpec{Ingress: ingress, Egress: egress})
}

// EnvVarsInjectionPolicy sets spec.envVarsInjectionPolicy.
func (w *TemplateWrapper) EnvVarsInjectionPolicy(p extv1beta1.EnvVarsInjectionPolicy) *TemplateWrapper {
	w.Spec.EnvVarsInjectionPolicy = p
	return w
}

// VolumeClaimTemplatesPolicy sets spec.volumeClaimTemplatesPolicy.
func (w *TemplateWrapper) VolumeClaimTemplatesPolicy(p extv1beta1.VolumeClaimTemplatesPolicy) *TemplateWrapper {
	w.Spec.VolumeClaimTemplatesPolicy = p
	return w
}

// VolumeClaimTemplate adds a volume claim template of size.
func (w *TemplateWrapper) VolumeClaimTemplate(name, size string) *TemplateWrapper {
	w.Spec.VolumeClaimTemplates = append(w.Spec.VolumeClaimTemplates, MakeVolumeClaimTemplate(name, size))
	return w
}

// ClaimPolicy sets spec.claimPolicy.
func (w *TemplateWrapper) ClaimPolicy(p extv1beta1.ClaimPolicy) *TemplateWrapper {
	w.Spec.ClaimPolicy = &p
	return w
}

// VolumeClaimTemplateWith adds a volume claim template of size, changed by mutate (a storage
// class, a data source).
func (w *TemplateWrapper) VolumeClaimTemplateWith(name, size string, mutate func(*corev1.PersistentVolumeClaimSpec)) *TemplateWrapper {
	vct := MakeVolumeClaimTemplate(name, size)
	mutate(&vct.Spec)
	w.Spec.VolumeClaimTemplates = append(w.Spec.VolumeClaimTemplates, vct)
	return w
}

// Env sets a variable of the first container.
func (w *TemplateWrapper) Env(name, value string) *TemplateWrapper {
	c := &w.Spec.PodTemplate.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
	return w
}

// Image sets the image of the first container.
func (w *TemplateWrapper) Image(image string) *TemplateWrapper {
	w.Spec.PodTemplate.Spec.Containers[0].Image = image
	return w
}

// PodLabel sets a label of the pod template.
func (w *TemplateWrapper) PodLabel(k, v string) *TemplateWrapper {
	w.Spec.PodTemplate.Metadata.Labels = setKey(w.Spec.PodTemplate.Metadata.Labels, k, v)
	return w
}

// PodAnnotation sets an annotation of the pod template.
func (w *TemplateWrapper) PodAnnotation(k, v string) *TemplateWrapper {
	w.Spec.PodTemplate.Metadata.Annotations = setKey(w.Spec.PodTemplate.Metadata.Annotations, k, v)
	return w
}

// PodSpec lets a test change the pod template's spec in ways the other methods do not cover.
func (w *TemplateWrapper) PodSpec(mutate func(*corev1.PodSpec)) *TemplateWrapper {
	mutate(&w.Spec.PodTemplate.Spec)
	return w
}

// PoolWrapper builds a SandboxWarmPool.
type PoolWrapper struct{ extv1beta1.SandboxWarmPool }

// MakePool starts a SandboxWarmPool of template, with the server's default replicas.
func MakePool(name, ns, template string) *PoolWrapper {
	return &PoolWrapper{extv1beta1.SandboxWarmPool{
		TypeMeta:   metav1.TypeMeta{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxWarmPool"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       extv1beta1.SandboxWarmPoolSpec{SandboxTemplateRef: extv1beta1.SandboxTemplateReference{Name: template}},
	}}
}

// Obj returns a copy of the pool built so far.
func (w *PoolWrapper) Obj() *extv1beta1.SandboxWarmPool { return w.DeepCopy() }

// Replicas sets spec.replicas.
func (w *PoolWrapper) Replicas(n int32) *PoolWrapper {
	w.Spec.Replicas = ptr.To(n)
	return w
}

// Strategy sets spec.updateStrategy.type.
func (w *PoolWrapper) Strategy(t extv1beta1.WarmPoolUpdateStrategyType) *PoolWrapper {
	w.Spec.UpdateStrategy.Type = t
	return w
}

// RollingUpdate sets type RollingUpdate and the given bounds; nil leaves a bound to the server.
func (w *PoolWrapper) RollingUpdate(maxSurge, maxUnavailable *intstr.IntOrString) *PoolWrapper {
	w.Spec.UpdateStrategy.Type = extv1beta1.WarmPoolUpdateStrategyRollingUpdate
	w.Spec.UpdateStrategy.RollingUpdate = &extv1beta1.RollingUpdateWarmPool{MaxSurge: maxSurge, MaxUnavailable: maxUnavailable}
	return w
}

// ProgressDeadlineSeconds sets spec.progressDeadlineSeconds.
func (w *PoolWrapper) ProgressDeadlineSeconds(s int32) *PoolWrapper {
	w.Spec.ProgressDeadlineSeconds = ptr.To(s)
	return w
}

// ReadinessGracePeriodSeconds sets spec.readinessGracePeriodSeconds.
func (w *PoolWrapper) ReadinessGracePeriodSeconds(s int32) *PoolWrapper {
	w.Spec.ReadinessGracePeriodSeconds = ptr.To(s)
	return w
}

// ClaimWrapper builds a SandboxClaim.
type ClaimWrapper struct{ extv1beta1.SandboxClaim }

// MakeClaim starts a SandboxClaim that names neither a pool nor a template: call WarmPool or
// Template (the API server requires exactly one).
func MakeClaim(name, ns string) *ClaimWrapper {
	return &ClaimWrapper{extv1beta1.SandboxClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
	}}
}

// Obj returns a copy of the claim built so far.
func (w *ClaimWrapper) Obj() *extv1beta1.SandboxClaim { return w.DeepCopy() }

// Meta sets the UID and generation the API server would have given the claim.
func (w *ClaimWrapper) Meta(uid types.UID, generation int64) *ClaimWrapper {
	w.UID, w.Generation = uid, generation
	return w
}

// GenerateName clears the name and lets the API server generate one from prefix.
func (w *ClaimWrapper) GenerateName(prefix string) *ClaimWrapper {
	w.Name, w.ObjectMeta.GenerateName = "", prefix
	return w
}

// WarmPool makes the claim take from pool, and name no template.
func (w *ClaimWrapper) WarmPool(pool string) *ClaimWrapper {
	w.Spec.WarmPoolRef, w.Spec.SandboxTemplateRef = &extv1beta1.SandboxWarmPoolReference{Name: pool}, nil
	return w
}

// Template makes the claim start cold from template, and name no pool.
func (w *ClaimWrapper) Template(template string) *ClaimWrapper {
	w.Spec.WarmPoolRef, w.Spec.SandboxTemplateRef = nil, &extv1beta1.SandboxTemplateReference{Name: template}
	return w
}

// Refs sets both references as given; nil leaves one unset.
func (w *ClaimWrapper) Refs(pool, template *string) *ClaimWrapper {
	w.Spec.WarmPoolRef, w.Spec.SandboxTemplateRef = nil, nil
	if pool != nil {
		w.Spec.WarmPoolRef = &extv1beta1.SandboxWarmPoolReference{Name: *pool}
	}
	if template != nil {
		w.Spec.SandboxTemplateRef = &extv1beta1.SandboxTemplateReference{Name: *template}
	}
	return w
}

// Annotation sets an annotation of the claim.
func (w *ClaimWrapper) Annotation(k, v string) *ClaimWrapper {
	w.Annotations = setKey(w.Annotations, k, v)
	return w
}

// PodLabel sets a label of spec.additionalPodMetadata.
func (w *ClaimWrapper) PodLabel(k, v string) *ClaimWrapper {
	w.Spec.AdditionalPodMetadata.Labels = setKey(w.Spec.AdditionalPodMetadata.Labels, k, v)
	return w
}

// PodAnnotation sets an annotation of spec.additionalPodMetadata.
func (w *ClaimWrapper) PodAnnotation(k, v string) *ClaimWrapper {
	w.Spec.AdditionalPodMetadata.Annotations = setKey(w.Spec.AdditionalPodMetadata.Annotations, k, v)
	return w
}

// Env adds an environment variable for container ("" for the first container).
func (w *ClaimWrapper) Env(name, value, container string) *ClaimWrapper {
	w.Spec.Env = append(w.Spec.Env, extv1beta1.EnvVar{Name: name, Value: value, ContainerName: container})
	return w
}

// VolumeClaimTemplate adds a volume claim template of size.
func (w *ClaimWrapper) VolumeClaimTemplate(name, size string) *ClaimWrapper {
	w.Spec.VolumeClaimTemplates = append(w.Spec.VolumeClaimTemplates, MakeVolumeClaimTemplate(name, size))
	return w
}

// VolumeClaimTemplateWith adds a volume claim template of size, changed by mutate (a storage
// class, a data source).
func (w *ClaimWrapper) VolumeClaimTemplateWith(name, size string, mutate func(*corev1.PersistentVolumeClaimSpec)) *ClaimWrapper {
	vct := MakeVolumeClaimTemplate(name, size)
	mutate(&vct.Spec)
	w.Spec.VolumeClaimTemplates = append(w.Spec.VolumeClaimTemplates, vct)
	return w
}

func (w *ClaimWrapper) lifecycle() *extv1beta1.ClaimLifecycle {
	if w.Spec.Lifecycle == nil {
		w.Spec.Lifecycle = &extv1beta1.ClaimLifecycle{}
	}
	return w.Spec.Lifecycle
}

// ShutdownAt sets lifecycle.shutdownTime, truncated to the second as the API server stores it.
func (w *ClaimWrapper) ShutdownAt(t time.Time) *ClaimWrapper {
	w.lifecycle().ShutdownTime = ptr.To(metav1.NewTime(t.Truncate(time.Second)))
	return w
}

// ShutdownPolicy sets lifecycle.shutdownPolicy.
func (w *ClaimWrapper) ShutdownPolicy(p extv1beta1.ClaimShutdownPolicy) *ClaimWrapper {
	w.lifecycle().ShutdownPolicy = p
	return w
}

// TTLSecondsAfterFinished sets lifecycle.ttlSecondsAfterFinished.
func (w *ClaimWrapper) TTLSecondsAfterFinished(s int32) *ClaimWrapper {
	w.lifecycle().TTLSecondsAfterFinished = ptr.To(s)
	return w
}

// Condition adds a status condition (for controller unit tests; the API server ignores status on
// create).
func (w *ClaimWrapper) Condition(c metav1.Condition) *ClaimWrapper {
	w.Status.Conditions = append(w.Status.Conditions, c)
	return w
}

// SandboxStatus sets status.sandbox.
func (w *ClaimWrapper) SandboxStatus(name string, ips ...string) *ClaimWrapper {
	w.Status.Sandbox = extv1beta1.ClaimSandboxStatus{Name: name, PodIPs: ips}
	return w
}
