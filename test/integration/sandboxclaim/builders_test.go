package sandboxclaim

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

// Builders for the extension kinds, in the style of internal/testutil: they set only what a test
// asks for, plus the minimum the API server requires, and leave defaulting to the server.

type templateWrapper struct{ extv1beta1.SandboxTemplate }

// makeTemplate starts a SandboxTemplate whose blueprint is testutil.MakeSandbox's, with its
// NetworkPolicy unmanaged (these tests are about claims).
func makeTemplate(name, ns string) *templateWrapper {
	return &templateWrapper{extv1beta1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: extv1beta1.SandboxTemplateSpec{
			SandboxBlueprint:        sandboxv1beta1.SandboxBlueprint{PodTemplate: testutil.MakeSandbox("blueprint", ns).Obj().Spec.PodTemplate},
			NetworkPolicyManagement: extv1beta1.NetworkPolicyManagementUnmanaged,
		},
	}}
}

func (w *templateWrapper) Obj() *extv1beta1.SandboxTemplate { return w.DeepCopy() }

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

// Env sets a variable of the first container.
func (w *templateWrapper) Env(name, value string) *templateWrapper {
	c := &w.Spec.PodTemplate.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
	return w
}

func (w *templateWrapper) PodLabel(k, v string) *templateWrapper {
	if w.Spec.PodTemplate.Metadata.Labels == nil {
		w.Spec.PodTemplate.Metadata.Labels = map[string]string{}
	}
	w.Spec.PodTemplate.Metadata.Labels[k] = v
	return w
}

type poolWrapper struct{ extv1beta1.SandboxWarmPool }

// makePool starts a SandboxWarmPool of template with replicas members.
func makePool(name, ns, template string, replicas int32) *poolWrapper {
	return &poolWrapper{extv1beta1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: extv1beta1.SandboxWarmPoolSpec{
			Replicas:           ptr.To(replicas),
			SandboxTemplateRef: extv1beta1.SandboxTemplateReference{Name: template},
		},
	}}
}

func (w *poolWrapper) Obj() *extv1beta1.SandboxWarmPool { return w.DeepCopy() }

type claimWrapper struct{ extv1beta1.SandboxClaim }

// makeClaim starts a SandboxClaim of warm pool pool.
func makeClaim(name, ns, pool string) *claimWrapper {
	return &claimWrapper{extv1beta1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       extv1beta1.SandboxClaimSpec{WarmPoolRef: &extv1beta1.SandboxWarmPoolReference{Name: pool}},
	}}
}

func (w *claimWrapper) Obj() *extv1beta1.SandboxClaim { return w.DeepCopy() }

// Template makes the claim start cold from template, and name no pool.
func (w *claimWrapper) Template(template string) *claimWrapper {
	w.Spec.WarmPoolRef, w.Spec.SandboxTemplateRef = nil, &extv1beta1.SandboxTemplateReference{Name: template}
	return w
}

func (w *claimWrapper) Annotation(k, v string) *claimWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
	return w
}

func (w *claimWrapper) PodLabel(k, v string) *claimWrapper {
	if w.Spec.AdditionalPodMetadata.Labels == nil {
		w.Spec.AdditionalPodMetadata.Labels = map[string]string{}
	}
	w.Spec.AdditionalPodMetadata.Labels[k] = v
	return w
}

func (w *claimWrapper) PodAnnotation(k, v string) *claimWrapper {
	if w.Spec.AdditionalPodMetadata.Annotations == nil {
		w.Spec.AdditionalPodMetadata.Annotations = map[string]string{}
	}
	w.Spec.AdditionalPodMetadata.Annotations[k] = v
	return w
}

// Env adds an environment variable for container ("" for the first container).
func (w *claimWrapper) Env(name, value, container string) *claimWrapper {
	w.Spec.Env = append(w.Spec.Env, extv1beta1.EnvVar{Name: name, Value: value, ContainerName: container})
	return w
}

func (w *claimWrapper) VolumeClaimTemplate(name, size string) *claimWrapper {
	w.Spec.VolumeClaimTemplates = append(w.Spec.VolumeClaimTemplates, testutil.MakeVolumeClaimTemplate(name, size))
	return w
}

func (w *claimWrapper) lifecycle() *extv1beta1.ClaimLifecycle {
	if w.Spec.Lifecycle == nil {
		w.Spec.Lifecycle = &extv1beta1.ClaimLifecycle{}
	}
	return w.Spec.Lifecycle
}

// ShutdownAt sets lifecycle.shutdownTime, truncated to the second as the API server stores it.
func (w *claimWrapper) ShutdownAt(t time.Time) *claimWrapper {
	w.lifecycle().ShutdownTime = ptr.To(metav1.NewTime(t.Truncate(time.Second)))
	return w
}

func (w *claimWrapper) ShutdownPolicy(p extv1beta1.ClaimShutdownPolicy) *claimWrapper {
	w.lifecycle().ShutdownPolicy = p
	return w
}

func (w *claimWrapper) TTLSecondsAfterFinished(s int32) *claimWrapper {
	w.lifecycle().TTLSecondsAfterFinished = ptr.To(s)
	return w
}
