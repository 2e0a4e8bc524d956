package api

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

// Builders for the extension kinds, in the style of internal/testutil: they set only what a test
// asks for, plus the minimum the API server requires, and leave defaulting to the server.

// templateWrapper builds a SandboxTemplate.
type templateWrapper struct {
	extv1beta1.SandboxTemplate
}

// makeTemplate starts a SandboxTemplate whose blueprint is testutil.MakeSandbox's.
func makeTemplate(name, ns string) *templateWrapper {
	return &templateWrapper{extv1beta1.SandboxTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxTemplate"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: extv1beta1.SandboxTemplateSpec{
			SandboxBlueprint: sandboxv1beta1.SandboxBlueprint{
				PodTemplate: testutil.MakeSandbox("blueprint", ns).Obj().Spec.PodTemplate,
			},
		},
	}}
}

func (w *templateWrapper) Obj() *extv1beta1.SandboxTemplate { return w.DeepCopy() }

func (w *templateWrapper) NetworkPolicyManagement(m extv1beta1.NetworkPolicyManagement) *templateWrapper {
	w.Spec.NetworkPolicyManagement = m
	return w
}

func (w *templateWrapper) NetworkPolicy(np *extv1beta1.NetworkPolicySpec) *templateWrapper {
	w.Spec.NetworkPolicy = np
	return w
}

func (w *templateWrapper) EnvVarsInjectionPolicy(p extv1beta1.EnvVarsInjectionPolicy) *templateWrapper {
	w.Spec.EnvVarsInjectionPolicy = p
	return w
}

func (w *templateWrapper) VolumeClaimTemplatesPolicy(p extv1beta1.VolumeClaimTemplatesPolicy) *templateWrapper {
	w.Spec.VolumeClaimTemplatesPolicy = p
	return w
}

func (w *templateWrapper) VolumeClaimTemplate(name, size string) *templateWrapper {
	w.Spec.VolumeClaimTemplates = append(w.Spec.VolumeClaimTemplates, testutil.MakeVolumeClaimTemplate(name, size))
	return w
}

// poolWrapper builds a SandboxWarmPool.
type poolWrapper struct {
	extv1beta1.SandboxWarmPool
}

// makePool starts a SandboxWarmPool of template.
func makePool(name, ns, template string) *poolWrapper {
	return &poolWrapper{extv1beta1.SandboxWarmPool{
		TypeMeta:   metav1.TypeMeta{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxWarmPool"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: extv1beta1.SandboxWarmPoolSpec{
			SandboxTemplateRef: extv1beta1.SandboxTemplateReference{Name: template},
		},
	}}
}

func (w *poolWrapper) Obj() *extv1beta1.SandboxWarmPool { return w.DeepCopy() }

func (w *poolWrapper) Replicas(n int32) *poolWrapper {
	w.Spec.Replicas = ptr.To(n)
	return w
}

func (w *poolWrapper) Strategy(t extv1beta1.WarmPoolUpdateStrategyType) *poolWrapper {
	w.Spec.UpdateStrategy.Type = t
	return w
}

// RollingUpdate sets type RollingUpdate and the given bounds; nil leaves a bound unset.
func (w *poolWrapper) RollingUpdate(maxSurge, maxUnavailable *intstr.IntOrString) *poolWrapper {
	w.Spec.UpdateStrategy.Type = extv1beta1.WarmPoolUpdateStrategyRollingUpdate
	w.Spec.UpdateStrategy.RollingUpdate = &extv1beta1.RollingUpdateWarmPool{MaxSurge: maxSurge, MaxUnavailable: maxUnavailable}
	return w
}

func (w *poolWrapper) ProgressDeadlineSeconds(s int32) *poolWrapper {
	w.Spec.ProgressDeadlineSeconds = ptr.To(s)
	return w
}

// claimWrapper builds a SandboxClaim.
type claimWrapper struct {
	extv1beta1.SandboxClaim
}

// makeClaim starts a SandboxClaim of warm pool "pool".
func makeClaim(name, ns string) *claimWrapper {
	return &claimWrapper{extv1beta1.SandboxClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: extv1beta1.SandboxClaimSpec{
			WarmPoolRef: &extv1beta1.SandboxWarmPoolReference{Name: "pool"},
		},
	}}
}

func (w *claimWrapper) Obj() *extv1beta1.SandboxClaim { return w.DeepCopy() }

func (w *claimWrapper) GenerateName(prefix string) *claimWrapper {
	w.Name = ""
	w.ObjectMeta.GenerateName = prefix
	return w
}

// WarmPool makes the claim take from pool, and name no template.
func (w *claimWrapper) WarmPool(pool string) *claimWrapper {
	w.Spec.WarmPoolRef = &extv1beta1.SandboxWarmPoolReference{Name: pool}
	w.Spec.SandboxTemplateRef = nil
	return w
}

// Template makes the claim start cold from template, and name no pool.
func (w *claimWrapper) Template(template string) *claimWrapper {
	w.Spec.SandboxTemplateRef = &extv1beta1.SandboxTemplateReference{Name: template}
	w.Spec.WarmPoolRef = nil
	return w
}

// Refs sets both references as given; nil leaves one unset.
func (w *claimWrapper) Refs(pool, template *string) *claimWrapper {
	w.Spec.WarmPoolRef, w.Spec.SandboxTemplateRef = nil, nil
	if pool != nil {
		w.Spec.WarmPoolRef = &extv1beta1.SandboxWarmPoolReference{Name: *pool}
	}
	if template != nil {
		w.Spec.SandboxTemplateRef = &extv1beta1.SandboxTemplateReference{Name: *template}
	}
	return w
}

func (w *claimWrapper) lifecycle() *extv1beta1.ClaimLifecycle {
	if w.Spec.Lifecycle == nil {
		w.Spec.Lifecycle = &extv1beta1.ClaimLifecycle{}
	}
	return w.Spec.Lifecycle
}

func (w *claimWrapper) TTLSecondsAfterFinished(s int32) *claimWrapper {
	w.lifecycle().TTLSecondsAfterFinished = ptr.To(s)
	return w
}

func (w *claimWrapper) ShutdownPolicy(p extv1beta1.ClaimShutdownPolicy) *claimWrapper {
	w.lifecycle().ShutdownPolicy = p
	return w
}

// ShutdownAt sets lifecycle.shutdownTime, truncated to the second as the API server stores it.
func (w *claimWrapper) ShutdownAt(t time.Time) *claimWrapper {
	w.lifecycle().ShutdownTime = ptr.To(metav1.NewTime(t.Truncate(time.Second)))
	return w
}

// PodLabel sets a label of additionalPodMetadata.
func (w *claimWrapper) PodLabel(k, v string) *claimWrapper {
	if w.Spec.AdditionalPodMetadata.Labels == nil {
		w.Spec.AdditionalPodMetadata.Labels = map[string]string{}
	}
	w.Spec.AdditionalPodMetadata.Labels[k] = v
	return w
}

// PodAnnotation sets an annotation of additionalPodMetadata.
func (w *claimWrapper) PodAnnotation(k, v string) *claimWrapper {
	if w.Spec.AdditionalPodMetadata.Annotations == nil {
		w.Spec.AdditionalPodMetadata.Annotations = map[string]string{}
	}
	w.Spec.AdditionalPodMetadata.Annotations[k] = v
	return w
}

// Env adds an environment variable for container ("" for the default container).
func (w *claimWrapper) Env(name, value, container string) *claimWrapper {
	w.Spec.Env = append(w.Spec.Env, extv1beta1.EnvVar{Name: name, Value: value, ContainerName: container})
	return w
}

func (w *claimWrapper) VolumeClaimTemplate(name, size string) *claimWrapper {
	w.Spec.VolumeClaimTemplates = append(w.Spec.VolumeClaimTemplates, testutil.MakeVolumeClaimTemplate(name, size))
	return w
}
