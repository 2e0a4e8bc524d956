//go:build e2e

package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodRuns checks that a pod really runs under each RuntimeClass, that kubectl exec reaches
// it, and that the host reaches it by pod IP.
func TestPodRuns(t *testing.T) {
	for _, rc := range []string{"runc", "gvisor"} {
		t.Run(rc, func(t *testing.T) {
			ns := namespace(t)
			createPod(t, ns, busyboxPod("web", rc))
			pod := waitRunning(t, ns, "web")
			if got := kubectlExec(t, ns, "web", "sh", "-c", "echo hello from $(hostname)"); got != "hello from web" {
				t.Errorf("kubectl exec printed %q, want %q", got, "hello from web")
			}
			if body := httpGet(t, "http://"+pod.Status.PodIP+":8080/"); body != "hello from kubox busybox" {
				t.Errorf("GET pod IP returned %q", body)
			}
		})
	}
}

// TestGVisorIsGVisor checks that the gvisor RuntimeClass runs the pod on gVisor's kernel and that
// runc does not.
func TestGVisorIsGVisor(t *testing.T) {
	ns := namespace(t)
	createPod(t, ns, busyboxPod("gvisor", "gvisor"))
	createPod(t, ns, busyboxPod("runc", "runc"))
	waitRunning(t, ns, "gvisor")
	waitRunning(t, ns, "runc")
	if v := kubectlExec(t, ns, "gvisor", "cat", "/proc/version"); !strings.Contains(strings.ToLower(v), "gvisor") {
		t.Errorf("gvisor pod: /proc/version = %q, want gVisor's kernel", v)
	}
	if d := kubectlExec(t, ns, "gvisor", "dmesg"); !strings.Contains(d, "gVisor") {
		t.Errorf("gvisor pod: dmesg does not mention gVisor:\n%s", d)
	}
	if v := kubectlExec(t, ns, "runc", "cat", "/proc/version"); strings.Contains(strings.ToLower(v), "gvisor") {
		t.Errorf("runc pod: /proc/version = %q, want the host kernel", v)
	}
}

// TestVolumeSurvivesPodDeletion checks the default StorageClass: a claim binds dynamically and a
// file written through one pod is there for the next pod.
func TestVolumeSurvivesPodDeletion(t *testing.T) {
	ns := namespace(t)
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: quantity("10Mi")}},
		},
	}
	if _, err := clientset.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, rc := range []string{"gvisor", "runc"} {
		pod := busyboxPod("writer", rc)
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		createPod(t, ns, pod)
		waitRunning(t, ns, "writer")
		if i == 0 {
			kubectlExec(t, ns, "writer", "sh", "-c", "echo kept > /data/file")
		} else if got := kubectlExec(t, ns, "writer", "cat", "/data/file"); got != "kept" {
			t.Errorf("/data/file in the second pod = %q, want %q", got, "kept")
		}
		deletePod(t, ns, "writer")
	}
}

func httpGet(t testing.TB, url string) string {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(body))
}
