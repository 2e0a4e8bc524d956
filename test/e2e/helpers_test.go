//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

const (
	busybox     = "kubox.local/busybox:dev"
	waitTimeout = 3 * time.Minute
)

// namespace creates a namespace for one test and deletes it when the test ends.
func namespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	name := "e2e-" + rand.String(6)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := clientset.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	waitFor(t, "service account "+name+"/default", func(ctx context.Context) (bool, error) {
		_, err := clientset.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	t.Cleanup(func() {
		_ = clientset.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// waitFor polls check every 200ms until it is true; it fails the test after waitTimeout.
func waitFor(t testing.TB, what string, check func(context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var last error
	for {
		ok, err := check(ctx)
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", waitTimeout, what, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// busyboxPod is a pod that serves HTTP on 8080 with busybox httpd, under runtimeClass.
func busyboxPod(name, runtimeClass string) *corev1.Pod {
	zero := int64(1)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RuntimeClassName:              &runtimeClass,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name: "main", Image: busybox, ImagePullPolicy: corev1.PullNever,
				Command: []string{"httpd", "-f", "-p", "8080", "-h", "/var/www"},
			}},
		},
	}
}

func createPod(t testing.TB, ns string, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := clientset.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, pod.Name, err)
	}
	return created
}

// waitRunning waits until the pod is Running and Ready, and returns it.
func waitRunning(t testing.TB, ns, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(t, "pod "+ns+"/"+name+" running", func(ctx context.Context) (bool, error) {
		p, err := clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return p.Status.Phase == corev1.PodRunning && podReady(p) && p.Status.PodIP != "", fmt.Errorf("phase %s", p.Status.Phase)
	})
	return pod
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitPodGone waits until the pod no longer exists.
func waitPodGone(t testing.TB, ns, name string) {
	t.Helper()
	waitFor(t, "pod "+ns+"/"+name+" deleted", func(ctx context.Context) (bool, error) {
		_, err := clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

// deletePod deletes the Pod ns/name and waits until it is gone.
func deletePod(t testing.TB, ns, name string) {
	t.Helper()
	if err := clientset.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodGone(t, ns, name)
}

// kubectlExec runs a command in the pod's first container through `kubectl exec`.
func kubectlExec(t testing.TB, ns, pod string, command ...string) string {
	t.Helper()
	args := append([]string{"--kubeconfig=" + kubeconfig, "exec", "-n", ns, pod, "--"}, command...)
	out, err := exec.Command(kubectl, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl exec %s/%s %v: %v\n%s", ns, pod, command, err, out)
	}
	return strings.TrimSpace(string(out))
}

func quantity(s string) resource.Quantity { return resource.MustParse(s) }
