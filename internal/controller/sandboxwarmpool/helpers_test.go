package sandboxwarmpool

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

const (
	testNS   = "team-a"
	testPool = "pool"
)

// testNow is the time of every pass in the unit tests; testGrace the readiness grace period.
var (
	testNow   = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	testGrace = 5 * time.Minute
)

// memberWrapper builds a member as observe would describe it.
type memberWrapper struct{ m member }

// makeMember starts a member called name, created age ago, not Ready since then and fresh.
func makeMember(name string, age time.Duration) *memberWrapper {
	sb := testutil.MakeSandbox(name, testNS).Obj()
	sb.UID = types.UID(name + "-uid")
	sb.ResourceVersion = "7"
	sb.CreationTimestamp = metav1.NewTime(testNow.Add(-age))
	return &memberWrapper{member{sandbox: sb, notReadySince: sb.CreationTimestamp.Time}}
}

// Ready makes the member Ready since its creation.
func (w *memberWrapper) Ready() *memberWrapper {
	w.m.ready, w.m.readySince = true, w.m.notReadySince
	return w
}

// ReadyFor makes the member Ready since d ago.
func (w *memberWrapper) ReadyFor(d time.Duration) *memberWrapper {
	w.m.ready, w.m.readySince = true, testNow.Add(-d)
	return w
}

// NotReadyFor makes the member not Ready since d ago.
func (w *memberWrapper) NotReadyFor(d time.Duration) *memberWrapper {
	w.m.ready, w.m.readySince, w.m.notReadySince = false, time.Time{}, testNow.Add(-d)
	return w
}

func (w *memberWrapper) Stale() *memberWrapper {
	w.m.stale = true
	return w
}

func (w *memberWrapper) Tampered() *memberWrapper {
	w.m.tampered = true
	return w
}

func (w *memberWrapper) Unschedulable(msg string) *memberWrapper {
	w.m.unschedulable, w.m.schedulingMessage = true, msg
	return w
}

func (w *memberWrapper) Finished() *memberWrapper {
	w.m.finished = true
	return w
}

func (w *memberWrapper) Obj() member { return w.m }

func members(ws ...*memberWrapper) []member {
	out := make([]member, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.Obj())
	}
	return out
}

func names(ms []*member) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.sandbox.Name)
	}
	return out
}

// sandboxOf returns a Sandbox as the API server holds it, for tests of observe's description.
func sandboxOf(name string, conds ...metav1.Condition) *sandboxv1beta1.Sandbox {
	sb := makeMember(name, time.Hour).Obj().sandbox
	sb.Generation = 1 // no one changed its spec since it was created
	sb.Status.Conditions = conds
	return sb
}
