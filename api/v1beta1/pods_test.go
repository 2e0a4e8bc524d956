package v1beta1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodLive(t *testing.T) {
	now := metav1.Now()
	for name, tc := range map[string]struct {
		pod  corev1.Pod
		want bool
	}{
		"running":     {pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, want: true},
		"pending":     {pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, want: true},
		"terminating": {pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}},
		"succeeded":   {pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}},
		"failed":      {pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}},
	} {
		if got := PodLive(&tc.pod); got != tc.want {
			t.Errorf("%s: PodLive = %v, want %v", name, got, tc.want)
		}
	}
}
