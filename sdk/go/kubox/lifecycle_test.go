package kubox

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// TestLookupAndSetModeWithoutWaiting: Lookup returns the Sandbox as it is, not Ready, and
// Suspend and Resume with NoWait only set its spec.
func TestLookupAndSetModeWithoutWaiting(t *testing.T) {
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}}
	kube := fake.NewClientBuilder().WithScheme(newScheme()).WithObjects(sb).Build()
	c := &Client{opts: Options{Namespace: "default"}, kube: kube}

	h, err := c.Lookup(t.Context(), "ns", "s")
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	read := func() *sandboxv1beta1.Sandbox {
		got := &sandboxv1beta1.Sandbox{}
		if err := kube.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "s"}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if err := h.Suspend(t.Context(), KeepMemory(), NoWait()); err != nil {
		t.Fatalf("Suspend(NoWait): %v", err)
	}
	got := read()
	if diff := cmp.Diff(sandboxv1beta1.SandboxOperatingModeSuspended, got.Spec.OperatingMode); diff != "" ||
		got.Spec.SuspendPolicy == nil || !got.Spec.SuspendPolicy.KeepMemory {
		t.Errorf("after Suspend: operatingMode %q, suspendPolicy %+v; want Suspended and keepMemory", got.Spec.OperatingMode, got.Spec.SuspendPolicy)
	}
	if err := h.Resume(t.Context(), NoWait()); err != nil {
		t.Fatalf("Resume(NoWait): %v", err)
	}
	if got := read(); got.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeRunning {
		t.Errorf("after Resume: operatingMode %q; want Running", got.Spec.OperatingMode)
	}

	if _, err := c.Lookup(t.Context(), "ns", "ghost"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Lookup of a missing sandbox: %v; want ErrNotFound", err)
	}
}
