//go:build e2e

package agentsandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/agent-sandbox/clients/go/sandbox"
)

var (
	templates = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxtemplates"}
	pools     = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxwarmpools"}
)

// config is the local environment's kubeconfig (KUBOX_E2E_STATE_DIR, as test/e2e reads it).
func config(t *testing.T) *rest.Config {
	t.Helper()
	dir := os.Getenv("KUBOX_E2E_STATE_DIR")
	if dir == "" {
		dir = "/var/lib/kubox-dev"
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatalf("the local environment's kubeconfig: %v (bring it up with make dev, or run make test-e2e)", err)
	}
	return cfg
}

// sandboxdPool creates, in a new namespace, a template that runs a Python image (with runc: the
// SDK reaches sandboxd by a Pod port-forward, which this node's gVisor shim does not serve) with
// kubox-agent serving sandboxd's ports (the environment variables agent-sandbox v1's templates
// set; compatibilityAuth Disabled, because the SDK reaches them by port-forward with no token, as
// it reaches a sandboxd sidecar), and a warm pool of one.
func sandboxdPool(t *testing.T, cfg *rest.Config) (string, string) {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "as-sdk-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	dyn := dynamic.NewForConfigOrDie(cfg)
	template := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxTemplate",
		"metadata": map[string]any{"name": "python-sandboxd"},
		"spec": map[string]any{
			"agent": map[string]any{"compatibilityAuth": "Disabled"},
			"podTemplate": map[string]any{"spec": map[string]any{
				"runtimeClassName": "runc", "terminationGracePeriodSeconds": int64(1),
				"containers": []any{map[string]any{
					"name": "python", "image": "kubox.local/python:dev", "imagePullPolicy": "Never",
					"command": []any{"sleep", "infinity"},
					"env": []any{
						map[string]any{"name": "SANDBOXD_GRPC_ADDR", "value": "localhost:9090"},
						map[string]any{"name": "SANDBOXD_REST_ADDR", "value": "localhost:8080"},
					},
				}},
			}},
		},
	}}
	if _, err := dyn.Resource(templates).Namespace(ns.Name).Create(ctx, template, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create SandboxTemplate: %v", err)
	}
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
		"metadata": map[string]any{"name": "python-sandboxd"},
		"spec":     map[string]any{"replicas": int64(1), "sandboxTemplateRef": map[string]any{"name": "python-sandboxd"}},
	}}
	if _, err := dyn.Resource(pools).Namespace(ns.Name).Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create SandboxWarmPool: %v", err)
	}
	// Wait for the pool's member, so that the claim is served warm, as in agent-sandbox's example.
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := dyn.Resource(pools).Namespace(ns.Name).Get(ctx, "python-sandboxd", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ready, _, _ := unstructured.NestedInt64(p.Object, "status", "readyReplicas")
		return ready == 1, nil
	})
	if err != nil {
		t.Fatalf("SandboxWarmPool python-sandboxd has no ready member: %v", err)
	}
	return ns.Name, "python-sandboxd"
}

// TestAgentSandboxGoSDKWithSandboxd runs what agent-sandbox's Go SDK example does — claim a
// sandbox from a warm pool, run a command, write, read, list, check and delete a file, delete the
// claim — with the SDK's sandboxd runtime, unchanged, against kubox.
func TestAgentSandboxGoSDKWithSandboxd(t *testing.T) {
	cfg := config(t)
	ns, pool := sandboxdPool(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	client, err := sandbox.NewClient(ctx, sandbox.Options{Namespace: ns, Runtime: sandbox.RuntimeSandboxd, RestConfig: cfg,
		SandboxReadyTimeout: 2 * time.Minute, Quiet: true})
	if err != nil {
		t.Fatalf("sandbox.NewClient: %v", err)
	}
	defer client.DeleteAll(context.Background())
	sb, err := client.CreateSandbox(ctx, pool, ns)
	if err != nil {
		t.Fatalf("CreateSandbox from pool %s: %v", pool, err)
	}
	if !strings.HasPrefix(sb.SandboxName(), pool+"-") {
		t.Errorf("the claim got Sandbox %q; want a member of warm pool %s", sb.SandboxName(), pool)
	}

	res, err := sb.Run(ctx, `echo "hello from $(python3 -c 'print(6*7)')"; pwd; echo oops >&2; exit 3`)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Stdout != "hello from 42\n/workspace\n" || res.Stderr != "oops\n" || res.ExitCode != 3 {
		t.Errorf("Run = stdout %q, stderr %q, exit code %d; want %q, %q, 3", res.Stdout, res.Stderr, res.ExitCode,
			"hello from 42\n/workspace\n", "oops\n")
	}

	if err := sb.Write(ctx, "hello.txt", []byte("Hello, world!")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	data, err := sb.Read(ctx, "hello.txt")
	if err != nil || string(data) != "Hello, world!" {
		t.Errorf("Read = %q, %v; want what Write wrote", data, err)
	}
	entries, err := sb.List(ctx, ".")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if !slices.ContainsFunc(entries, func(e sandbox.FileEntry) bool { return e.Name == "hello.txt" && e.Size == 13 }) {
		t.Errorf("List(.) = %+v; want hello.txt of 13 bytes", entries)
	}
	if ok, err := sb.Exists(ctx, "hello.txt"); err != nil || !ok {
		t.Errorf("Exists(hello.txt) = %t, %v; want true", ok, err)
	}
	if err := sb.Delete(ctx, "hello.txt", false); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if ok, err := sb.Exists(ctx, "hello.txt"); err != nil || ok {
		t.Errorf("Exists(hello.txt) after Delete = %t, %v; want false", ok, err)
	}
	if err := client.DeleteSandbox(ctx, sb.ClaimName(), ns); err != nil {
		t.Errorf("DeleteSandbox: %v", err)
	}
}
