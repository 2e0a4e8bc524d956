package usage

import (
	"bufio"
	"encoding/json"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/internal/testutil/s3server"
	"github.com/kubox-dev/kubox/internal/usage"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// principalLabel is in the claims' default allowed label domain, so a claim can set it.
const principalLabel = "sandbox.users.io/principal"

// withUsageToBucket turns usage on in the controller's configuration, its records going to srv
// under prefix, as an operator's config file would.
func withUsageToBucket(srv *s3server.Server, prefix string, mutate ...func(*configv1alpha1.UsageSettings)) func(*configv1alpha1.ControllerConfiguration) {
	return func(c *configv1alpha1.ControllerConfiguration) {
		c.Usage.Enabled = ptr.To(true)
		c.Usage.PrincipalLabel = principalLabel
		c.Usage.Sinks = configv1alpha1.UsageSinks{Stdout: ptr.To(false), S3: &configv1alpha1.ObjectStore{
			Endpoint: srv.Endpoint, Bucket: srv.Bucket, Prefix: prefix, Insecure: true,
			AccessKeyIDFile: srv.AccessKeyIDFile, SecretAccessKeyFile: srv.SecretAccessKeyFile}}
		for _, m := range mutate {
			m(&c.Usage)
		}
	}
}

// TestControllerWritesRecordOverLifecycle: kubox-controller, configured with a usage S3 sink,
// meters a sandbox that runs, is suspended, resumes and is deleted, and writes its record to the
// bucket: one wake, running and suspended time both counted.
func TestControllerWritesRecordOverLifecycle(t *testing.T) {
	srv := s3server.Start(t)
	ns := env.NewNamespace(t)
	env.StartKubox(t, ns, withUsageToBucket(srv, "usage"))
	env.StartKubelet(t, ns)

	sb := testutil.MakeSandbox("metered", ns).Obj()
	sb.Labels = map[string]string{principalLabel: "alice"}
	env.Create(t, sb)
	waitFor(t, ns, "metered", "Ready", sandboxv1beta1.SandboxConditionReady)
	time.Sleep(20 * time.Millisecond) // running time to count (checked only for > 0)

	setMode(t, ns, "metered", sandboxv1beta1.SandboxOperatingModeSuspended)
	waitFor(t, ns, "metered", "Suspended", sandboxv1beta1.SandboxConditionSuspended)
	time.Sleep(20 * time.Millisecond) // suspended time to count
	setMode(t, ns, "metered", sandboxv1beta1.SandboxOperatingModeRunning)
	waitFor(t, ns, "metered", "Ready again", sandboxv1beta1.SandboxConditionReady)

	if err := env.Client.Delete(t.Context(), sb); err != nil {
		t.Fatal(err)
	}
	env.WaitGone(t, sb)
	r := oneRecord(t, srv, "usage/")
	if r.Namespace != ns || r.Name != "metered" || r.UID != string(sb.UID) || r.Principal != "alice" {
		t.Errorf("record %+v: want sandbox %s/metered, uid %s, principal alice", r, ns, sb.UID)
	}
	if r.Wakes != 1 || r.RunningSeconds <= 0 || r.SuspendedSeconds <= 0 || r.Measured != nil {
		t.Errorf("record %+v: want 1 wake, running and suspended seconds > 0, measured null", r)
	}
}

// TestRecordNamesTemplateAndClaim: a sandbox made for a claim from a template has the template's
// and the claim's names on its record, and the principal the claim's pod labels name.
func TestRecordNamesTemplateAndClaim(t *testing.T) {
	srv := s3server.Start(t)
	ns := env.NewNamespace(t)
	env.StartKubox(t, ns, withUsageToBucket(srv, "usage"))
	env.StartKubelet(t, ns)

	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	claim := testutil.MakeClaim("job-1", ns).Template("python").PodLabel(principalLabel, "bob").Obj()
	env.Create(t, claim)
	waitFor(t, ns, "job-1", "Ready", sandboxv1beta1.SandboxConditionReady)
	// The test's API server runs no garbage collector: the claim goes first (so nothing makes it a
	// new sandbox), then its sandbox.
	if err := env.Client.Delete(t.Context(), claim); err != nil {
		t.Fatal(err)
	}
	env.WaitGone(t, claim)
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "job-1"}}
	if err := env.Client.Delete(t.Context(), sb); err != nil {
		t.Fatal(err)
	}
	env.WaitGone(t, sb)
	r := oneRecord(t, srv, "usage/")
	if r.Template != "python" || r.Claim != "job-1" || r.Principal != "bob" || r.RunningSeconds <= 0 {
		t.Errorf("record %+v: want template python, claim job-1, principal bob, running seconds > 0", r)
	}
}

// waitFor waits until the Sandbox's condition cond is True.
func waitFor(t *testing.T, ns, name, what, cond string) {
	t.Helper()
	framework.Eventually(t, func() (bool, string) {
		sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if found, err := env.Get(t, sb); !found || err != nil {
			return false, "sandbox " + name + " not found"
		}
		return meta.IsStatusConditionTrue(sb.Status.Conditions, cond), "sandbox " + name + " not " + what
	})
}

func setMode(t *testing.T, ns, name string, mode sandboxv1beta1.SandboxOperatingMode) {
	t.Helper()
	framework.Eventually(t, func() (bool, string) {
		sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if _, err := env.Get(t, sb); err != nil {
			return false, err.Error()
		}
		sb.Spec.OperatingMode = mode
		if err := env.Client.Update(t.Context(), sb); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// oneRecord waits for records under prefix in srv's bucket and returns the only one.
func oneRecord(t *testing.T, srv *s3server.Server, prefix string) usage.Record {
	t.Helper()
	var got []usage.Record
	framework.Eventually(t, func() (bool, string) {
		got = readRecords(t, srv, prefix)
		return len(got) > 0, "no usage record in the bucket"
	})
	if len(got) != 1 {
		t.Fatalf("%d records in the bucket, want 1: %+v", len(got), got)
	}
	return got[0]
}

func readRecords(t *testing.T, srv *s3server.Server, prefix string) []usage.Record {
	t.Helper()
	var got []usage.Record
	for obj := range srv.Client.ListObjects(t.Context(), srv.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		o, err := srv.Client.GetObject(t.Context(), srv.Bucket, obj.Key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(o)
		for sc.Scan() {
			var r usage.Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("object %s: %v", obj.Key, err)
			}
			got = append(got, r)
		}
		_ = o.Close()
	}
	return got
}
