package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubox-dev/kubox/internal/node/install"
)

// podBuilder builds the Pod fixtures of the uninstall guard's tests.
type podBuilder struct{ p *corev1.Pod }

func makePod(ns, name string) *podBuilder {
	return &podBuilder{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{NodeName: testNode}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}}
}

func (b *podBuilder) class(name string) *podBuilder {
	b.p.Spec.RuntimeClassName = ptr.To(name)
	return b
}
func (b *podBuilder) on(node string) *podBuilder { b.p.Spec.NodeName = node; return b }
func (b *podBuilder) phase(p corev1.PodPhase) *podBuilder {
	b.p.Status.Phase = p
	return b
}
func (b *podBuilder) labels(kv ...string) *podBuilder {
	b.p.Labels = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		b.p.Labels[kv[i]] = kv[i+1]
	}
	return b
}
func (b *podBuilder) terminating() *podBuilder {
	b.p.DeletionTimestamp, b.p.Finalizers = ptr.To(metav1.Now()), []string{"example.com/keep"}
	return b
}
func (b *podBuilder) obj() *corev1.Pod { return b.p }

func runtimeClass(name, handler string) *nodev1.RuntimeClass {
	return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}
}

// TestSandboxesOnHandler: the Pods that keep uninstall from removing the handler are the Pods
// of this node, not terminated, whose RuntimeClass's handler is kubox's: the class is resolved
// and its handler compared, never its name, and no label or annotation of the Pod (a tenant
// writes those) changes the answer.
func TestSandboxesOnHandler(t *testing.T) {
	classes := []runtime.Object{
		runtimeClass(install.Handler, install.Handler),
		runtimeClass("runc", "runc"),
		runtimeClass("gvisor", "runsc"),
		// another name, kubox's handler
		runtimeClass("memory", install.Handler),
		// kubox's name, another handler
		runtimeClass("looks-like-kubox", "runc"),
	}
	cases := map[string]struct {
		pods []*corev1.Pod
		want []string
	}{
		"no pods": {},
		"a runc pod": {pods: []*corev1.Pod{
			makePod("t", "plain").obj(),
			makePod("t", "runc").class("runc").obj(),
			makePod("t", "stock-gvisor").class("gvisor").obj(),
		}},
		"a kubox-runsc pod Running": {pods: []*corev1.Pod{makePod("t", "a").class(install.Handler).obj()}, want: []string{"t/a"}},
		"a kubox-runsc pod Pending on this node": {
			pods: []*corev1.Pod{makePod("t", "a").class(install.Handler).phase(corev1.PodPending).obj()}, want: []string{"t/a"}},
		"a kubox-runsc pod Terminating": {
			pods: []*corev1.Pod{makePod("t", "a").class(install.Handler).terminating().obj()}, want: []string{"t/a"}},
		"a kubox-runsc pod Succeeded or Failed": {pods: []*corev1.Pod{
			makePod("t", "done").class(install.Handler).phase(corev1.PodSucceeded).obj(),
			makePod("t", "failed").class(install.Handler).phase(corev1.PodFailed).obj(),
		}},
		"a kubox-runsc pod on another node": {pods: []*corev1.Pod{makePod("t", "a").class(install.Handler).on("node-b").obj()}},
		"a RuntimeClass named differently with kubox's handler": {
			pods: []*corev1.Pod{makePod("t", "b").class("memory").obj()}, want: []string{"t/b"}},
		"a RuntimeClass with kubox's name and another handler": {
			pods: []*corev1.Pod{makePod("t", "c").class("looks-like-kubox").obj()}},
		"lying labels do not change the answer": {pods: []*corev1.Pod{
			makePod("tenant", "says-runc").class(install.Handler).labels("kubox.dev/runtime-handler", "runc",
				"node.k8s.io/runtime-class", "runc", "app.kubernetes.io/managed-by", "kubox-node").obj(),
			makePod("tenant", "says-kubox").class("runc").labels("kubox.dev/runtime-handler", install.Handler,
				"node.k8s.io/runtime-class", install.Handler).obj(),
		}, want: []string{"tenant/says-runc"}},
		"a RuntimeClass that is gone": {
			pods: []*corev1.Pod{makePod("t", "d").class("deleted").obj()},
			want: []string{"t/d (its RuntimeClass deleted is gone, so its handler is unknown)"}},
		"several, sorted": {pods: []*corev1.Pod{
			makePod("z", "a").class(install.Handler).obj(),
			makePod("a", "b").class("memory").obj(),
			makePod("a", "a").class(install.Handler).obj(),
		}, want: []string{"a/a", "a/b", "z/a"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := append([]runtime.Object(nil), classes...)
			for _, p := range tc.pods {
				objs = append(objs, p)
			}
			got, err := SandboxesOnHandler(context.Background(), fake.NewClientset(objs...), testNode)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Pods on the handler (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSandboxesOnHandlerAsksForItsNodeOnly: the list names this node in its field selector, so
// the API server sends no other node's Pods.
func TestSandboxesOnHandlerAsksForItsNodeOnly(t *testing.T) {
	cs := fake.NewClientset()
	var selectors []string
	cs.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		selectors = append(selectors, a.(k8stesting.ListAction).GetListRestrictions().Fields.String())
		return false, nil, nil
	})
	if _, err := SandboxesOnHandler(context.Background(), cs, testNode); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"spec.nodeName=" + testNode}, selectors); diff != "" {
		t.Errorf("field selectors of the Pod lists (-want +got):\n%s", diff)
	}
}

// TestUninstallRefusesWhileSandboxesRun is the bug found in the e2e run: uninstalling the
// handler and shim while a kubox-runsc sandbox runs leaves its Pod unstoppable. Uninstall
// refuses, removes nothing (containerd's config, the drop-in, the binaries, the Node's label and
// condition stay, containerd is not restarted) and names the Pods and the fix.
func TestUninstallRefusesWhileSandboxesRun(t *testing.T) {
	ctx := context.Background()
	f := newFakeNode(t, 0)
	if err := f.o.install(ctx); err != nil {
		t.Fatalf("install: %v", err)
	}
	seed(t, f, runtimeClass(install.Handler, install.Handler), makePod("tenant", "sandbox-1").class(install.Handler).obj())
	installed, err := os.ReadFile(filepath.Join(f.root, install.DefaultContainerdConfig))
	if err != nil {
		t.Fatal(err)
	}
	f.events = nil
	err = f.o.uninstall(ctx)
	if err == nil {
		t.Fatal("uninstall with a kubox-runsc Pod on the node: nil error, want a refusal")
	}
	for _, want := range []string{"tenant/sandbox-1", testNode, install.Handler, "Delete or suspend", "--force"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("uninstall's error %q does not say %q", err, want)
		}
	}
	if diff := cmp.Diff([]string(nil), f.events); diff != "" {
		t.Errorf("uninstall that refused restarted or checked containerd (-want +got):\n%s", diff)
	}
	got, err := os.ReadFile(filepath.Join(f.root, install.DefaultContainerdConfig))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(installed), string(got)); diff != "" {
		t.Errorf("containerd's config after a refused uninstall (-want +got):\n%s", diff)
	}
	for _, name := range install.Binaries {
		if _, err := os.Lstat(filepath.Join(f.root, "opt/kubox/bin", name)); err != nil {
			t.Errorf("/opt/kubox/bin/%s after a refused uninstall: %v", name, err)
		}
	}
	if got := f.node(t).Labels[ReadyLabel]; got != "ready" {
		t.Errorf("Node label %s = %q after a refused uninstall, want ready", ReadyLabel, got)
	}
	if c := f.condition(t); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("Node condition %s = %+v after a refused uninstall, want True", ReadyCondition, c)
	}

	f.o.force = true
	if err := f.o.uninstall(ctx); err != nil {
		t.Fatalf("uninstall --force: %v", err)
	}
	if got, ok := f.node(t).Labels[ReadyLabel]; ok {
		t.Errorf("Node label %s = %q after uninstall --force, want none", ReadyLabel, got)
	}
}

// TestUninstallWaitsForSandboxes: with --wait, uninstall checks again, with a backoff, until
// the last kubox-runsc Pod is gone, and only then removes the handler.
func TestUninstallWaitsForSandboxes(t *testing.T) {
	ctx := context.Background()
	f := newFakeNode(t, 0)
	if err := f.o.install(ctx); err != nil {
		t.Fatalf("install: %v", err)
	}
	pod := makePod("tenant", "sandbox-1").class(install.Handler).obj()
	seed(t, f, runtimeClass(install.Handler, install.Handler), pod)
	lists := 0
	f.cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists++
		f.events = append(f.events, "list")
		if lists == 3 { // the sandbox is deleted while uninstall waits
			if err := f.cs.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), pod.Namespace, pod.Name); err != nil {
				return true, nil, err
			}
		}
		return false, nil, nil
	})
	f.o.wait, f.o.backoff = true, [2]time.Duration{1, 4}
	f.events = nil
	if err := f.o.uninstall(ctx); err != nil {
		t.Fatalf("uninstall --wait: %v", err)
	}
	// three checks before the label goes (the third finds none), one after it, then the handler
	if diff := cmp.Diff([]string{"list", "list", "list", "list", "restart", "check"}, f.events); diff != "" {
		t.Errorf("uninstall --wait: checks, restarts (-want +got):\n%s", diff)
	}
}

// TestUninstallChecksAgainAfterTheLabelGoes: a kubox-runsc Pod bound between the first check and
// the label's removal (the scheduler still saw the label) is found by the second check, and the
// handler stays.
func TestUninstallChecksAgainAfterTheLabelGoes(t *testing.T) {
	ctx := context.Background()
	f := newFakeNode(t, 0)
	if err := f.o.install(ctx); err != nil {
		t.Fatalf("install: %v", err)
	}
	seed(t, f, runtimeClass(install.Handler, install.Handler))
	f.cs.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		_ = f.cs.Tracker().Add(makePod("tenant", "late").class(install.Handler).obj())
		return false, nil, nil
	})
	f.events = nil
	err := f.o.uninstall(ctx)
	if err == nil || !strings.Contains(err.Error(), "tenant/late") {
		t.Fatalf("uninstall with a Pod bound during it: %v, want a refusal naming tenant/late", err)
	}
	if len(f.events) != 0 {
		t.Errorf("uninstall restarted containerd though a Pod runs on the handler: %v", f.events)
	}
	if _, err := os.Lstat(filepath.Join(f.root, "opt/kubox/bin", install.Binaries[0])); err != nil {
		t.Errorf("the shim is gone though a Pod runs on the handler: %v", err)
	}
}

// TestUninstallSaysWhenItCannotList: an uninstall that cannot list the node's Pods removes
// nothing and names the RBAC rule.
func TestUninstallSaysWhenItCannotList(t *testing.T) {
	f := newFakeNode(t, 0)
	f.cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	err := f.o.uninstall(context.Background())
	if err == nil || !strings.Contains(err.Error(), "list the Pods of node "+testNode) {
		t.Fatalf("uninstall: %v, want an error saying the Pods could not be listed", err)
	}
	if len(f.events) != 0 {
		t.Errorf("uninstall restarted containerd though it could not check the Pods: %v", f.events)
	}
}

func seed(t *testing.T, f *fakeNode, objs ...runtime.Object) {
	t.Helper()
	for _, o := range objs {
		if err := f.cs.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
}
