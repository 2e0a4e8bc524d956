package framework_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

func TestReadAndUpdate(t *testing.T) {
	ns := env.NewNamespace(t)
	env.Create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}, Data: map[string]string{"a": "1"}})

	// A stale copy: Update reads the stored object before it mutates it.
	stale := framework.Read[corev1.ConfigMap](t, env, ns, "cm")
	framework.Update(t, env, framework.Read[corev1.ConfigMap](t, env, ns, "cm"), func(cm *corev1.ConfigMap) { cm.Data["b"] = "2" })
	framework.Update(t, env, stale, func(cm *corev1.ConfigMap) { cm.Data["c"] = "3" })
	if got := stale.Data; len(got) != 3 || got["b"] != "2" || got["c"] != "3" {
		t.Errorf("Data after two updates, the second from a stale copy: %v; want a, b and c", got)
	}
	if got := framework.Read[corev1.ConfigMap](t, env, ns, "cm"); got.ResourceVersion != stale.ResourceVersion {
		t.Errorf("Read returned resourceVersion %s; want the one Update left, %s", got.ResourceVersion, stale.ResourceVersion)
	}

	ft := runFake(func(tb testing.TB) { framework.Read[corev1.ConfigMap](tb, env, ns, "missing") })
	if !ft.failed || !strings.Contains(ft.msg, "ConfigMap missing") {
		t.Errorf("Read of a missing object: failed=%t with %q; want a failure naming the ConfigMap", ft.failed, ft.msg)
	}
}

func TestWaitGoneAndWaitDeleting(t *testing.T) {
	ns := env.NewNamespace(t)
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held", Finalizers: []string{"test.kubox.dev/hold"}}}
	env.Create(t, held)
	if err := env.Client.Delete(t.Context(), held); err != nil {
		t.Fatalf("Deleting ConfigMap held: %v", err)
	}
	env.WaitDeleting(t, held)
	framework.Update(t, env, held, func(cm *corev1.ConfigMap) { cm.Finalizers = nil })
	env.WaitGone(t, held)
	if found, err := env.Get(t, held); found || err != nil {
		t.Errorf("ConfigMap held after WaitGone: found %t, err %v; want it gone", found, err)
	}
}

func TestIsControlledBy(t *testing.T) {
	sb := testutil.MakeSandbox("owner", "ns").Obj()
	sb.UID = "owner-uid"
	sb.TypeMeta = metav1.TypeMeta{} // as a typed client reads it: the kind comes from the scheme
	ref := func(mutate func(*metav1.OwnerReference)) []metav1.OwnerReference {
		r := *metav1.NewControllerRef(sb, testutil.SandboxKind)
		if mutate != nil {
			mutate(&r)
		}
		return []metav1.OwnerReference{r}
	}
	cases := map[string]struct {
		refs    []metav1.OwnerReference
		want    bool
		wantMsg string
	}{
		"controller reference to the owner": {refs: ref(nil), want: true},
		"no owner references":               {wantMsg: "has no controller"},
		"owner but not controller":          {refs: ref(func(r *metav1.OwnerReference) { r.Controller = ptr.To(false) }), wantMsg: "has no controller"},
		"another UID":                       {refs: ref(func(r *metav1.OwnerReference) { r.UID = "other" }), wantMsg: "want Sandbox owner (uid owner-uid)"},
		"another kind":                      {refs: ref(func(r *metav1.OwnerReference) { r.Kind = "SandboxClaim" }), wantMsg: "want Sandbox owner"},
		"another API version":               {refs: ref(func(r *metav1.OwnerReference) { r.APIVersion = "agents.x-k8s.io/v1alpha1" }), wantMsg: "want Sandbox owner"},
		"another name":                      {refs: ref(func(r *metav1.OwnerReference) { r.Name = "other" }), wantMsg: "want Sandbox owner"},
		"no blockOwnerDeletion":             {refs: ref(func(r *metav1.OwnerReference) { r.BlockOwnerDeletion = nil }), wantMsg: "want Sandbox owner"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := testutil.MakePod("child", "ns").Obj()
			pod.OwnerReferences = tc.refs
			got, msg := env.IsControlledBy(pod, sb)
			if got != tc.want || !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("IsControlledBy() = %t, %q; want %t with a message containing %q", got, msg, tc.want, tc.wantMsg)
			}
		})
	}
}
