package nodeuninstall

import (
	"bytes"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubox-dev/kubox/internal/node/cli"
	"github.com/kubox-dev/kubox/internal/node/install"
)

const (
	nodeNS = "kubox-node"
	sa     = "kubox-node-uninstall"
)

// TestUninstallCheckAsItsServiceAccount: with config/node/uninstall's ServiceAccount and nothing
// else, the check lists its node's Pods through the API server's field selector and reads their
// RuntimeClasses, and finds the kubox-runsc Pods of that node only (one of them under a
// RuntimeClass of another name with kubox's handler). The ServiceAccount may do that and patch
// Nodes, and nothing more: no Secrets, no writes to Pods, no list of RuntimeClasses or Nodes.
func TestUninstallCheckAsItsServiceAccount(t *testing.T) {
	applyUninstallRBAC(t)
	tenant := env.NewNamespace(t)
	for _, rc := range []*nodev1.RuntimeClass{
		{ObjectMeta: metav1.ObjectMeta{Name: install.Handler}, Handler: install.Handler},
		{ObjectMeta: metav1.ObjectMeta{Name: "memory"}, Handler: install.Handler},
		{ObjectMeta: metav1.ObjectMeta{Name: "runc"}, Handler: "runc"},
	} {
		env.Create(t, rc)
	}
	env.Create(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-x"}})
	for _, p := range []struct{ name, node, class string }{
		{"on-kubox", "node-x", install.Handler},
		{"on-memory", "node-x", "memory"},
		{"on-runc", "node-x", "runc"},
		{"plain", "node-x", ""},
		{"elsewhere", "node-y", install.Handler},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: p.name},
			Spec: corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if p.class != "" {
			pod.Spec.RuntimeClassName = ptr.To(p.class)
		}
		env.Create(t, pod)
	}

	c := asServiceAccount(t)
	got, err := cli.SandboxesOnHandler(t.Context(), c, "node-x")
	if err != nil {
		t.Fatalf("the check as %s: %v", sa, err)
	}
	if diff := cmp.Diff([]string{tenant + "/on-kubox", tenant + "/on-memory"}, got); diff != "" {
		t.Errorf("Pods of node-x on the handler (-want +got):\n%s", diff)
	}
	if _, err := c.CoreV1().Nodes().Patch(t.Context(), "node-x", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"kubox.dev/memory-sandboxes":null}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("patching the Node's label as %s: %v", sa, err)
	}

	ctx := t.Context()
	for what, call := range map[string]func() error{
		"get a Secret": func() error {
			_, err := c.CoreV1().Secrets(nodeNS).Get(ctx, "kubox-node-manifest-key", metav1.GetOptions{})
			return err
		},
		"list Secrets":        func() error { _, err := c.CoreV1().Secrets(tenant).List(ctx, metav1.ListOptions{}); return err },
		"get a Pod":           func() error { _, err := c.CoreV1().Pods(tenant).Get(ctx, "on-kubox", metav1.GetOptions{}); return err },
		"delete a Pod":        func() error { return c.CoreV1().Pods(tenant).Delete(ctx, "on-kubox", metav1.DeleteOptions{}) },
		"list RuntimeClasses": func() error { _, err := c.NodeV1().RuntimeClasses().List(ctx, metav1.ListOptions{}); return err },
		"delete RuntimeClass": func() error { return c.NodeV1().RuntimeClasses().Delete(ctx, "memory", metav1.DeleteOptions{}) },
		"list Nodes":          func() error { _, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); return err },
		"watch Pods":          func() error { w, err := c.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{}); stop(w); return err },
		"create a Pod": func() error {
			_, err := c.CoreV1().Pods(tenant).Create(ctx, &corev1.Pod{}, metav1.CreateOptions{})
			return err
		},
		"get a ServiceAccount": func() error {
			_, err := c.CoreV1().ServiceAccounts(nodeNS).Get(ctx, sa, metav1.GetOptions{})
			return err
		},
	} {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("%s as %s: %v, want Forbidden", what, sa, err)
		}
	}
}

// applyUninstallRBAC creates config/node/uninstall/rbac.yaml's objects (and their namespace).
func applyUninstallRBAC(t *testing.T) {
	t.Helper()
	env.Create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nodeNS}})
	b, err := os.ReadFile("../../../config/node/uninstall/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("config/node/uninstall/rbac.yaml: %v", err)
		}
		env.Create(t, u)
	}
}

// asServiceAccount is a client holding a token of the uninstall ServiceAccount only.
func asServiceAccount(t *testing.T) kubernetes.Interface {
	t.Helper()
	tr, err := env.Clientset(t).CoreV1().ServiceAccounts(nodeNS).CreateToken(t.Context(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(env.ConfigFor(tr.Status.Token))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func stop(w interface{ Stop() }) {
	if w != nil {
		w.Stop()
	}
}
