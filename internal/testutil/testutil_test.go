package testutil

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

func TestSandboxContainers(t *testing.T) {
	cases := map[string]struct {
		sandbox *SandboxWrapper
		want    []corev1.Container
	}{
		"default": {
			sandbox: MakeSandbox("a", "ns"),
			want:    []corev1.Container{{Name: "main", Image: DefaultImage, Command: []string{"sleep", "infinity"}}},
		},
		"image changes the first container": {
			sandbox: MakeSandbox("a", "ns").Image("example.invalid/x:2"),
			want:    []corev1.Container{{Name: "main", Image: "example.invalid/x:2", Command: []string{"sleep", "infinity"}}},
		},
		"container of the same name replaces it": {
			sandbox: MakeSandbox("a", "ns").Container("main", "example.invalid/srv:1", 8080),
			want: []corev1.Container{{Name: "main", Image: "example.invalid/srv:1", Ports: []corev1.ContainerPort{
				{ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			}}},
		},
		"container of another name is added": {
			sandbox: MakeSandbox("a", "ns").Container("side", "example.invalid/side:1", 1, 2),
			want: []corev1.Container{
				{Name: "main", Image: DefaultImage, Command: []string{"sleep", "infinity"}},
				{Name: "side", Image: "example.invalid/side:1", Ports: []corev1.ContainerPort{
					{ContainerPort: 1, Protocol: corev1.ProtocolTCP},
					{ContainerPort: 2, Protocol: corev1.ProtocolTCP},
				}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.sandbox.Obj().Spec.PodTemplate.Spec.Containers
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Containers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSandboxRetentionPolicy(t *testing.T) {
	const (
		retain = sandboxv1beta1.RetainPersistentVolumeClaimRetentionPolicyType
		del    = sandboxv1beta1.DeletePersistentVolumeClaimRetentionPolicyType
	)
	cases := map[string]struct {
		sandbox *SandboxWrapper
		want    *sandboxv1beta1.PersistentVolumeClaimRetentionPolicy
	}{
		"unset": {
			sandbox: MakeSandbox("a", "ns"),
		},
		"empty": {
			sandbox: MakeSandbox("a", "ns").PersistentVolumeClaimRetentionPolicy("", ""),
			want:    &sandboxv1beta1.PersistentVolumeClaimRetentionPolicy{},
		},
		"retain when deleted": {
			sandbox: MakeSandbox("a", "ns").RetainPVCsWhenDeleted(),
			want:    &sandboxv1beta1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: retain},
		},
		"delete when expired": {
			sandbox: MakeSandbox("a", "ns").DeletePVCsWhenExpired(),
			want:    &sandboxv1beta1.PersistentVolumeClaimRetentionPolicy{WhenExpired: del},
		},
		"both keep each other": {
			sandbox: MakeSandbox("a", "ns").DeletePVCsWhenExpired().RetainPVCsWhenDeleted(),
			want:    &sandboxv1beta1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: retain, WhenExpired: del},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.sandbox.Obj().Spec.PersistentVolumeClaimRetentionPolicy
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PersistentVolumeClaimRetentionPolicy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSandboxShutdownAtTruncatesToTheSecond(t *testing.T) {
	at := time.Date(2026, 12, 2, 17, 0, 5, 999_999_999, time.UTC)
	got := MakeSandbox("a", "ns").ShutdownAt(at).Obj().Spec.ShutdownTime
	want := ptr.To(metav1.NewTime(time.Date(2026, 12, 2, 17, 0, 5, 0, time.UTC)))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ShutdownTime (-want +got):\n%s", diff)
	}
}

func TestObjReturnsACopy(t *testing.T) {
	w := MakeSandbox("a", "ns").PodLabel("k", "1")
	first := w.Obj()
	w.PodLabel("k", "2").Image("example.invalid/other:1")
	if got := first.Spec.PodTemplate.Metadata.Labels["k"]; got != "1" {
		t.Errorf("Label of an earlier Obj() changed to %q by later building", got)
	}
	if got := first.Spec.PodTemplate.Spec.Containers[0].Image; got != DefaultImage {
		t.Errorf("Image of an earlier Obj() changed to %q by later building", got)
	}
}

func TestControlledBy(t *testing.T) {
	owner := MakeSandbox("owner", "ns").Obj()
	owner.UID = types.UID("uid-1")
	other := MakeSandbox("other", "ns").Obj()
	other.UID = types.UID("uid-2")
	ref := func(name string, uid types.UID) metav1.OwnerReference {
		return metav1.OwnerReference{
			APIVersion: "agents.x-k8s.io/v1beta1", Kind: "Sandbox", Name: name, UID: uid,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}
	}
	cases := map[string]struct {
		got  []metav1.OwnerReference
		want []metav1.OwnerReference
	}{
		"pod": {
			got:  MakePod("p", "ns").ControlledBy(owner, SandboxKind).Obj().OwnerReferences,
			want: []metav1.OwnerReference{ref("owner", "uid-1")},
		},
		"same owner twice is one reference": {
			got:  MakeService("s", "ns").ControlledBy(owner, SandboxKind).ControlledBy(owner, SandboxKind).Obj().OwnerReferences,
			want: []metav1.OwnerReference{ref("owner", "uid-1")},
		},
		"two owners are two references": {
			got:  MakePVC("c", "ns").ControlledBy(owner, SandboxKind).ControlledBy(other, SandboxKind).Obj().OwnerReferences,
			want: []metav1.OwnerReference{ref("owner", "uid-1"), ref("other", "uid-2")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("OwnerReferences (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodStatus(t *testing.T) {
	got := MakePod("p", "ns").Phase(corev1.PodRunning).Scheduled().Ready().IP("10.0.0.7").Obj().Status
	want := corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		},
		PodIP:  "10.0.0.7",
		PodIPs: []corev1.PodIP{{IP: "10.0.0.7"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
	notReady := MakePod("p", "ns").Ready().Condition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}).Obj()
	if diff := cmp.Diff([]corev1.PodCondition{
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse},
	}, notReady.Status.Conditions); diff != "" {
		t.Errorf("Conditions after replacing Ready (-want +got):\n%s", diff)
	}
}
