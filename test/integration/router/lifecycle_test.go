package router

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/wake"
	"github.com/kubox-dev/kubox/internal/testutil"
)

// recreate deletes obj and creates another of its name, and returns the new one; obj keeps the
// old UID, as a caller who read it before holds it.
func recreate[T client.Object](t *testing.T, obj T, fresh T) T {
	t.Helper()
	if err := env.Client.Delete(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
	env.WaitGone(t, obj)
	env.Create(t, fresh)
	return fresh
}

// TestLifecycleWritesChangeOnlyTheObjectRead: every lifecycle patch the router's E2B API and
// dashboard send (internal/router/wake) changes the object the caller read, never another
// Sandbox or SandboxClaim created under its name meanwhile: the attack is to delete and recreate
// the object between a caller's read and its write.
func TestLifecycleWritesChangeOnlyTheObjectRead(t *testing.T) {
	ns := env.NewNamespace(t)
	ctx := t.Context()
	at := metav1.NewTime(time.Now().Add(time.Hour).Truncate(time.Second))

	old := createSandbox(t, ns, "box", nil)
	cur := recreate(t, old.DeepCopy(), testutil.MakeSandbox("box", ns).Obj())
	if _, err := wake.SetMode(ctx, env.Client, old, sandboxv1beta1.SandboxOperatingModeSuspended); err == nil {
		t.Error("SetMode of the Sandbox read before it was recreated succeeded; want the API server's refusal")
	}
	if err := wake.SetShutdownTime(ctx, env.Client, old.DeepCopy(), at); err == nil {
		t.Error("SetShutdownTime of the Sandbox read before it was recreated succeeded; want the API server's refusal")
	}
	got := &sandboxv1beta1.Sandbox{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cur), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended || got.Spec.ShutdownTime != nil {
		t.Errorf("the recreated Sandbox was changed: operatingMode %q, shutdownTime %v", got.Spec.OperatingMode, got.Spec.ShutdownTime)
	}
	if gen, err := wake.SetMode(ctx, env.Client, got, sandboxv1beta1.SandboxOperatingModeSuspended); err != nil || gen <= got.Generation {
		t.Errorf("SetMode of the Sandbox as read = generation %d, %v; want a new generation", gen, err)
	}

	oldClaim := testutil.MakeClaim("claim", ns).Template("tpl").Obj()
	env.Create(t, oldClaim)
	curClaim := recreate(t, oldClaim.DeepCopy(), testutil.MakeClaim("claim", ns).Template("tpl").Obj())
	lc := &extv1beta1.ClaimLifecycle{ShutdownTime: &at, ShutdownPolicy: extv1beta1.ClaimShutdownPolicyDelete}
	if err := wake.SetClaimShutdown(ctx, env.Client, oldClaim.DeepCopy(), lc); err == nil {
		t.Error("SetClaimShutdown of the claim read before it was recreated succeeded; want the API server's refusal")
	}
	if err := wake.SetShutdownTime(ctx, env.Client, oldClaim.DeepCopy(), at); err == nil {
		t.Error("SetShutdownTime of the claim read before it was recreated succeeded; want the API server's refusal")
	}
	gotClaim := &extv1beta1.SandboxClaim{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(curClaim), gotClaim); err != nil {
		t.Fatal(err)
	}
	if gotClaim.Spec.Lifecycle != nil && gotClaim.Spec.Lifecycle.ShutdownTime != nil {
		t.Errorf("the recreated claim's shutdownTime was set to %v", gotClaim.Spec.Lifecycle.ShutdownTime)
	}
}
