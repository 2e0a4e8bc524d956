package sandboxwarmpool

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestMissingTemplate checks that a pool whose template does not exist reports it and creates
// nothing, and fills as soon as the template is created: the template's creation, not a timer,
// brings the pool back.
func TestMissingTemplate(t *testing.T) {
	t.Parallel()
	ns := startController(t, nil)
	env.StartKubelet(t, ns)
	env.Create(t, testutil.MakePool("pool", ns, "later").Replicas(2).Obj())

	notFound := poolState{ReadyReason: extv1beta1.WarmPoolReasonTemplateNotFound, ProgressReason: extv1beta1.WarmPoolReasonTemplateNotFound}
	pool := waitForPool(t, ns, "pool", notFound)
	const msg = "SandboxTemplate later does not exist; the pool creates its members once it does"
	for _, typ := range []string{extv1beta1.WarmPoolConditionReady, extv1beta1.WarmPoolConditionProgressing} {
		if c := condition(t, pool, typ); c.Status != metav1.ConditionFalse || c.Message != msg {
			t.Errorf("%s condition %+v; want False with message %q", typ, c, msg)
		}
	}
	framework.Consistently(t, quiet, func() (bool, string) {
		list := &sandboxv1beta1.SandboxList{}
		if err := env.Client.List(t.Context(), list); err != nil {
			return false, err.Error()
		}
		n := 0
		for _, sb := range list.Items {
			if sb.Namespace == ns {
				n++
			}
		}
		return n == 0, fmt.Sprintf("%d Sandboxes exist without a template", n)
	})

	env.Create(t, testutil.MakeTemplate("later", ns).Unmanaged().Obj())
	waitForPool(t, ns, "pool", full(2))
}

// TestTemplateDeleted checks that a pool whose template goes keeps its members (a claim may still
// take them) but reports the missing template and creates no replacement.
func TestTemplateDeleted(t *testing.T) {
	t.Parallel()
	ns := startController(t, nil)
	env.StartKubelet(t, ns)
	tpl := testutil.MakeTemplate("tpl", ns).Unmanaged().Obj()
	env.Create(t, tpl)
	env.Create(t, testutil.MakePool("pool", ns, "tpl").Replicas(2).Obj())
	pool := waitForPool(t, ns, "pool", full(2))
	before := members(t, ns, pool)

	if err := env.Client.Delete(t.Context(), tpl); err != nil {
		t.Fatalf("Deleting the template: %v", err)
	}
	waitForPool(t, ns, "pool", poolState{Replicas: 2, Ready: 2, ReadyReason: extv1beta1.WarmPoolReasonTemplateNotFound,
		ProgressReason: extv1beta1.WarmPoolReasonTemplateNotFound})
	bindFresh(t, before[0])
	framework.Consistently(t, quiet, func() (bool, string) {
		ms := members(t, ns, pool)
		return len(ms) == 1 && ms[0].UID == before[1].UID, fmt.Sprintf("members %v; want only %s", uids(ms), before[1].Name)
	})
}
