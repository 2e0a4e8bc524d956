//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubox-dev/kubox/internal/devenv"
)

var sandboxes = schema.GroupVersionResource{Group: "agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxes"}

// requireController fails the test (never skips) when the Sandbox API or its controller is absent.
// The controller runs either as a host process (its pidfile names a live process) or, after
// `kubox dev up --in-cluster`, as the Deployment kubox-system/kubox-controller, rolled out.
func requireController(t testing.TB) {
	t.Helper()
	if _, err := dyn.Resource(sandboxes).Namespace("default").List(context.Background(), metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatalf("the Sandbox API (agents.x-k8s.io/v1beta1) is not served: %v; kubox dev up applies config/crd/bases", err)
	}
	data, err := os.ReadFile(filepath.Join(stateDir, "pids", "kubox-controller.pid"))
	var pid int
	if err == nil {
		_, err = fmt.Sscanf(string(data), "%d", &pid)
	}
	if err == nil {
		_, err = os.Stat(fmt.Sprintf("/proc/%d", pid))
	}
	if err == nil {
		return
	}
	d, derr := clientset.AppsV1().Deployments(devenv.KuboxNamespace).Get(context.Background(), devenv.Controller, metav1.GetOptions{})
	if derr == nil && devenv.RolledOut(d) {
		return
	}
	if derr == nil {
		derr = fmt.Errorf("%d/%d replicas available", d.Status.AvailableReplicas, d.Status.Replicas)
	}
	t.Fatalf("kubox-controller runs neither as a process (%v) nor as the Deployment %s/%s (%v); kubox dev up starts it "+
		"once ./cmd/kubox-controller builds: see `kubox dev status` and its log in %s/logs or `kubectl -n %[2]s logs deploy/%[3]s`",
		err, devenv.KuboxNamespace, devenv.Controller, derr, stateDir)
}

type sandboxOpt func(spec map[string]any)

// newSandbox builds a Sandbox whose pod runs busybox httpd under runtimeClass.
func newSandbox(name, runtimeClass string, opts ...sandboxOpt) *unstructured.Unstructured {
	container := map[string]any{
		"name": "main", "image": busybox, "imagePullPolicy": "Never",
		"command": []any{"httpd", "-f", "-p", "8080", "-h", "/var/www"},
	}
	spec := map[string]any{"podTemplate": map[string]any{"spec": map[string]any{
		"runtimeClassName": runtimeClass, "terminationGracePeriodSeconds": int64(1),
		"containers": []any{container},
	}}}
	for _, o := range opts {
		o(spec)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
}

// withVolume adds a volumeClaimTemplate "data" mounted at /data.
func withVolume(spec map[string]any) {
	spec["volumeClaimTemplates"] = []any{map[string]any{
		"metadata": map[string]any{"name": "data"},
		"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"},
			"resources": map[string]any{"requests": map[string]any{"storage": "10Mi"}}},
	}}
	podSpec := spec["podTemplate"].(map[string]any)["spec"].(map[string]any)
	c := podSpec["containers"].([]any)[0].(map[string]any)
	c["volumeMounts"] = []any{map[string]any{"name": "data", "mountPath": "/data"}}
}

func withShutdownTime(at time.Time) sandboxOpt {
	return func(spec map[string]any) { spec["shutdownTime"] = at.UTC().Format(time.RFC3339) }
}

func createSandbox(t testing.TB, ns string, sb *unstructured.Unstructured) {
	t.Helper()
	if _, err := dyn.Resource(sandboxes).Namespace(ns).Create(context.Background(), sb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Sandbox %s/%s: %v", ns, sb.GetName(), err)
	}
}

func patchSandbox(t testing.TB, ns, name, patch string) {
	t.Helper()
	_, err := dyn.Resource(sandboxes).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch Sandbox %s/%s with %s: %v", ns, name, patch, err)
	}
}

// waitSandboxReady waits for the Sandbox's Ready condition to be True.
func waitSandboxReady(t testing.TB, ns, name string) {
	t.Helper()
	waitFor(t, "Sandbox "+ns+"/"+name+" Ready", func(ctx context.Context) (bool, error) {
		sb, err := dyn.Resource(sandboxes).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(sb.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Ready" {
				return m["status"] == "True", fmt.Errorf("Ready=%v reason %v: %v", m["status"], m["reason"], m["message"])
			}
		}
		return false, fmt.Errorf("no Ready condition yet")
	})
}

// TestSandboxRuns checks that a Sandbox's pod really runs (under gVisor) and can be exec'd into.
func TestSandboxRuns(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	createSandbox(t, ns, newSandbox("sb", "gvisor"))
	waitSandboxReady(t, ns, "sb")
	waitRunning(t, ns, "sb")
	if got := kubectlExec(t, ns, "sb", "cat", "/var/www/index.html"); got != "hello from kubox busybox" {
		t.Errorf("kubectl exec in the sandbox printed %q", got)
	}
}

// TestSandboxVolumeSurvivesSuspend writes a file to the sandbox's PVC, suspends the sandbox (its
// pod goes away), resumes it and reads the file from the new pod.
func TestSandboxVolumeSurvivesSuspend(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	createSandbox(t, ns, newSandbox("vol", "gvisor", withVolume))
	waitSandboxReady(t, ns, "vol")
	first := waitRunning(t, ns, "vol")
	kubectlExec(t, ns, "vol", "sh", "-c", "echo survived > /data/file")

	patchSandbox(t, ns, "vol", `{"spec":{"operatingMode":"Suspended"}}`)
	waitPodGone(t, ns, "vol")
	patchSandbox(t, ns, "vol", `{"spec":{"operatingMode":"Running"}}`)
	waitSandboxReady(t, ns, "vol")
	second := waitRunning(t, ns, "vol")
	if second.UID == first.UID {
		t.Fatalf("the pod was not recreated on resume (same UID %s)", first.UID)
	}
	if got := kubectlExec(t, ns, "vol", "cat", "/data/file"); got != "survived" {
		t.Errorf("/data/file after resume = %q, want %q", got, "survived")
	}
}

// TestSandboxExpiry checks that reaching shutdownTime deletes the sandbox's pod.
func TestSandboxExpiry(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	createSandbox(t, ns, newSandbox("exp", "runc", withShutdownTime(time.Now().Add(15*time.Second))))
	waitRunning(t, ns, "exp")
	waitPodGone(t, ns, "exp")
	if _, err := dyn.Resource(sandboxes).Namespace(ns).Get(context.Background(), "exp", metav1.GetOptions{}); err != nil {
		t.Errorf("the Sandbox (shutdownPolicy Retain by default) should remain after expiry: %v", err)
	}
}

// TestSandboxDeletionCollectsPod checks that deleting a Sandbox lets the garbage collector delete
// its pod (owner reference).
func TestSandboxDeletionCollectsPod(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	createSandbox(t, ns, newSandbox("gc", "runc"))
	waitRunning(t, ns, "gc")
	err := dyn.Resource(sandboxes).Namespace(ns).Delete(context.Background(), "gc", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitPodGone(t, ns, "gc")
}
