package usage

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	controllerusage "github.com/kubox-dev/kubox/internal/controller/usage"
	"github.com/kubox-dev/kubox/internal/objstore"
	"github.com/kubox-dev/kubox/internal/testutil/s3server"
	"github.com/kubox-dev/kubox/internal/usage"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestRecordInBucketAfterDeletion: a Sandbox that was Ready and is then deleted has its usage
// record in the bucket, with its principal, and no finalizer was ever added to it.
func TestRecordInBucketAfterDeletion(t *testing.T) {
	srv := s3server.Start(t)
	ns := env.NewNamespace(t)
	sink, err := usage.NewS3(objstore.Config{Endpoint: srv.Endpoint, Bucket: srv.Bucket, Prefix: "usage", Insecure: true,
		AccessKeyIDFile: srv.AccessKeyIDFile, SecretAccessKeyFile: srv.SecretAccessKeyFile})
	if err != nil {
		t.Fatal(err)
	}
	tracker := controllerusage.NewTracker(controllerusage.Config{PrincipalLabel: "example.com/user"})
	w := controllerusage.NewWatcher(tracker, nil, sink)
	env.StartManager(t, ns, func(mgr ctrl.Manager) error { return controllerusage.Setup(mgr, w) })

	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metered", Labels: map[string]string{"example.com/user": "alice"}}}
	sb.Spec.PodTemplate.Spec.Containers = []corev1.Container{{Name: "main", Image: "busybox"}}
	env.Create(t, sb)
	meta.SetStatusCondition(&sb.Status.Conditions, metav1.Condition{Type: sandboxv1beta1.SandboxConditionReady, Status: metav1.ConditionTrue, Reason: sandboxv1beta1.SandboxReasonDependenciesReady})
	if err := env.Client.Status().Update(t.Context(), sb); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func() (bool, string) {
		st, _ := tracker.State(sb.UID)
		return st == usage.StateRunning, "the usage tracker never observed the sandbox Ready"
	})
	time.Sleep(10 * time.Millisecond) // some running time to count (checked only for > 0)
	if len(sb.Finalizers) != 0 {
		t.Errorf("sandbox has finalizers %v; usage must never hold a deletion", sb.Finalizers)
	}
	if err := env.Client.Delete(t.Context(), sb); err != nil {
		t.Fatal(err)
	}
	env.WaitGone(t, sb)

	r := oneRecord(t, srv, "usage/")
	if r.Namespace != ns || r.Name != "metered" || r.UID != string(sb.UID) || r.Principal != "alice" || r.RunningSeconds <= 0 || r.Measured != nil {
		t.Errorf("record %+v: want %s/metered, uid %s, principal alice, running seconds > 0, measured null", r, ns, sb.UID)
	}
}
