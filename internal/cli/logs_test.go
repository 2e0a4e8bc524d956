package cli

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

func TestPodName(t *testing.T) {
	if got := podName(testutil.MakeSandbox("box", "ns").Obj()); got != "box" {
		t.Errorf("pod of a kubox sandbox = %q, want its own name", got)
	}
	adopted := testutil.MakeSandbox("box", "ns").Annotation(sandboxv1beta1.PodNameAnnotation, "legacy-pod").Obj()
	if got := podName(adopted); got != "legacy-pod" {
		t.Errorf("pod of an adopting sandbox = %q, want its pod-name annotation", got)
	}
}

func TestDefaultContainer(t *testing.T) {
	pod := func(annotation string, containers ...string) *corev1.Pod {
		p := &corev1.Pod{}
		if annotation != "" {
			p.Annotations = map[string]string{defaultContainerAnnotation: annotation}
		}
		for _, c := range containers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
		}
		return p
	}
	tests := map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"annotated":     {pod("main", "sidecar", "main"), "main"},
		"first":         {pod("", "app", "sidecar"), "app"},
		"no containers": {pod(""), ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := defaultContainer(tc.pod); got != tc.want {
				t.Errorf("defaultContainer = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStreamLogs(t *testing.T) {
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "box", Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}})
	var out bytes.Buffer
	if err := streamLogs(t.Context(), cs, "box", "ns", &logsOptions{tail: -1}, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "fake logs" { // what client-go's fake answers for every Pod
		t.Errorf("logs = %q, want the Pod's log stream copied", out.String())
	}
	err := streamLogs(t.Context(), cs, "gone", "ns", &logsOptions{tail: -1}, &out)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(`Pod "gone" not found in namespace ns`)) ||
		!bytes.Contains([]byte(err.Error()), []byte("kubox resume")) {
		t.Errorf("logs of a missing Pod: %v; want not found and the hint for suspended sandboxes", err)
	}
}
