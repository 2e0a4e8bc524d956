package sandboxwarmpool

import (
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

// makeTemplate starts a SandboxTemplate whose blueprint is testutil.MakeSandbox's, with its
// NetworkPolicy left unmanaged (these tests are about pools).
func makeTemplate(name, ns string) *templateWrapper {
	return &templateWrapper{extv1beta1.SandboxTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxTemplate"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: extv1beta1.SandboxTemplateSpec{
			SandboxBlueprint: sandboxv1beta1.SandboxBlueprint{
				PodTemplate: testutil.MakeSandbox("blueprint", ns).Obj().Spec.PodTemplate,
			},
			NetworkPolicyManagement: extv1beta1.NetworkPolicyManagementUnmanaged,
		},
	}}
}

func (w *templateWrapper) Obj() *extv1beta1.SandboxTemplate { return w.DeepCopy() }

// Image sets the image of the first container.
func (w *templateWrapper) Image(image string) *templateWrapper {
	w.Spec.PodTemplate.Spec.Containers[0].Image = image
	return w
}

// PodLabel sets a label of the pod template.
func (w *templateWrapper) PodLabel(k, v string) *templateWrapper {
	if w.Spec.PodTemplate.Metadata.Labels == nil {
		w.Spec.PodTemplate.Metadata.Labels = map[string]string{}
	}
	w.Spec.PodTemplate.Metadata.Labels[k] = v
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

// RollingUpdate sets type RollingUpdate and the given bounds.
func (w *poolWrapper) RollingUpdate(maxSurge, maxUnavailable intstr.IntOrString) *poolWrapper {
	w.Spec.UpdateStrategy.Type = extv1beta1.WarmPoolUpdateStrategyRollingUpdate
	w.Spec.UpdateStrategy.RollingUpdate = &extv1beta1.RollingUpdateWarmPool{MaxSurge: &maxSurge, MaxUnavailable: &maxUnavailable}
	return w
}

func (w *poolWrapper) ProgressDeadlineSeconds(s int32) *poolWrapper {
	w.Spec.ProgressDeadlineSeconds = ptr.To(s)
	return w
}
