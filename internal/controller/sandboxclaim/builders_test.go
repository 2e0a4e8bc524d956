package sandboxclaim

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

// Builders for the extension kinds, in the style of internal/testutil, for this package's tests.

const (
	testNS         = "team-a"
	testClaim      = "my-claim"
	testClaimUID   = types.UID("claim-uid")
	testTemplate   = "python"
	testPool       = "python-pool"
	testGeneration = int64(4)
)

var (
	testNow     = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	testEarlier = metav1.NewTime(time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC))
)

type claimWrapper struct{ extv1beta1.SandboxClaim }

// makeClaim starts a claim of pool testPool, with the metadata the API server would have set.
func makeClaim() *claimWrapper {
	return &claimWrapper{extv1beta1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: testClaim, Namespace: testNS, UID: testClaimUID, Generation: testGeneration},
		Spec:       extv1beta1.SandboxClaimSpec{WarmPoolRef: &extv1beta1.SandboxWarmPoolReference{Name: testPool}},
	}}
}

func (w *claimWrapper) Obj() *extv1beta1.SandboxClaim { return w.DeepCopy() }

func (w *claimWrapper) Template(name string) *claimWrapper {
	w.Spec.WarmPoolRef, w.Spec.SandboxTemplateRef = nil, &extv1beta1.SandboxTemplateReference{Name: name}
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

func (w *claimWrapper) Env(name, value, container string) *claimWrapper {
	w.Spec.Env = append(w.Spec.Env, extv1beta1.EnvVar{Name: name, Value: value, ContainerName: container})
	return w
}

func (w *claimWrapper) VolumeClaimTemplate(name, size string) *claimWrapper {
	w.Spec.VolumeClaimTemplates = append(w.Spec.VolumeClaimTemplates, testutil.MakeVolumeClaimTemplate(name, size))
	return w
}

func (w *claimWrapper) Condition(c metav1.Condition) *claimWrapper {
	w.Status.Conditions = append(w.Status.Conditions, c)
	return w
}

func (w *claimWrapper) SandboxStatus(name string, ips ...string) *claimWrapper {
	w.Status.Sandbox = extv1beta1.ClaimSandboxStatus{Name: name, PodIPs: ips}
	return w
}

type templateWrapper struct{ extv1beta1.SandboxTemplate }

// makeTemplate starts template testTemplate whose blueprint is testutil.MakeSandbox's.
func makeTemplate() *templateWrapper {
	return &templateWrapper{extv1beta1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: testTemplate, Namespace: testNS, UID: "template-uid", Generation: 1},
		Spec: extv1beta1.SandboxTemplateSpec{SandboxBlueprint: sandboxv1beta1.SandboxBlueprint{
			PodTemplate: testutil.MakeSandbox("blueprint", testNS).Obj().Spec.PodTemplate,
		}},
	}}
}

func (w *templateWrapper) Obj() *extv1beta1.SandboxTemplate { return w.DeepCopy() }

func (w *templateWrapper) EnvPolicy(p extv1beta1.EnvVarsInjectionPolicy) *templateWrapper {
	w.Spec.EnvVarsInjectionPolicy = p
	return w
}

func (w *templateWrapper) VCTPolicy(p extv1beta1.VolumeClaimTemplatesPolicy) *templateWrapper {
	w.Spec.VolumeClaimTemplatesPolicy = p
	return w
}

func (w *templateWrapper) VolumeClaimTemplate(name, size string) *templateWrapper {
	w.Spec.VolumeClaimTemplates = append(w.Spec.VolumeClaimTemplates, testutil.MakeVolumeClaimTemplate(name, size))
	return w
}

func (w *templateWrapper) PodLabel(k, v string) *templateWrapper {
	if w.Spec.PodTemplate.Metadata.Labels == nil {
		w.Spec.PodTemplate.Metadata.Labels = map[string]string{}
	}
	w.Spec.PodTemplate.Metadata.Labels[k] = v
	return w
}

func (w *templateWrapper) PodAnnotation(k, v string) *templateWrapper {
	if w.Spec.PodTemplate.Metadata.Annotations == nil {
		w.Spec.PodTemplate.Metadata.Annotations = map[string]string{}
	}
	w.Spec.PodTemplate.Metadata.Annotations[k] = v
	return w
}

func (w *templateWrapper) PodSpec(mutate func(*corev1.PodSpec)) *templateWrapper {
	mutate(&w.Spec.PodTemplate.Spec)
	return w
}

// sandboxWith returns a Sandbox called name with the given conditions and Pod IPs.
func sandboxWith(name string, ips []string, conds ...metav1.Condition) *sandboxv1beta1.Sandbox {
	sb := testutil.MakeSandbox(name, testNS).Obj()
	sb.Status.Conditions = conds
	sb.Status.PodIPs = ips
	return sb
}

func sbCond(typ string, status metav1.ConditionStatus, reason, msg string, ltt metav1.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: ltt, ObservedGeneration: 1}
}

// claimCond is a condition as computeStatus writes it: with the claim's generation.
func claimCond(typ string, status metav1.ConditionStatus, reason, msg string, ltt metav1.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: ltt, ObservedGeneration: testGeneration}
}
