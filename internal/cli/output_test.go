package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// fixture is a namespace with a claimed warm sandbox, a claim still waiting for its pool, an
// unclaimed pool member and a suspended sandbox of its own.
func fixture() ([]extv1beta1.SandboxClaim, []sandboxv1beta1.Sandbox) {
	claimed := testutil.MakeClaim("kubox-x7k2q", "default").WarmPool("python").ShutdownAt(now.Add(59 * time.Minute)).Obj()
	claimed.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Minute))
	claimed.Status.Sandbox.Name = "python-abcde"
	claimed.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "DependenciesReady"}}

	waiting := testutil.MakeClaim("kubox-b2c4d", "default").WarmPool("nope").Obj()
	waiting.CreationTimestamp = metav1.NewTime(now.Add(-5 * time.Second))
	waiting.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "WarmPoolNotFound"}}

	ready := testutil.MakeSandbox("python-abcde", "default").Condition(metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "DependenciesReady"}).Obj()
	ready.CreationTimestamp = metav1.NewTime(now.Add(-10 * time.Minute))
	ready.OwnerReferences = []metav1.OwnerReference{{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxClaim",
		Name: "kubox-x7k2q", Controller: ptr.To(true)}}
	ready.Status.PodIPs = []string{"10.77.0.12"}
	ready.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubox-controller"}}

	member := testutil.MakeSandbox("python-fghij", "default").Obj()
	member.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Hour))
	member.OwnerReferences = []metav1.OwnerReference{{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxWarmPool",
		Name: "python", Controller: ptr.To(true)}}
	member.Status.PodIPs = []string{"10.77.0.13"}
	member.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}

	suspended := testutil.MakeSandbox("scratch", "default").Suspended().ShutdownAt(now.Add(-time.Minute)).
		Annotation(sandboxv1beta1.SandboxTemplateRefAnnotation, "base").Condition(metav1.Condition{
		Type: "Ready", Status: metav1.ConditionFalse, Reason: "SandboxSuspended"}).Obj()
	suspended.CreationTimestamp = metav1.NewTime(now.Add(-49 * time.Hour))

	return []extv1beta1.SandboxClaim{*claimed, *waiting}, []sandboxv1beta1.Sandbox{*suspended, *member, *ready}
}

func TestLsTable(t *testing.T) {
	claims, sandboxes := fixture()
	var b bytes.Buffer
	if err := printTable(&b, lsColumns, rows(claims, sandboxes, now), false); err != nil {
		t.Fatal(err)
	}
	want := `NAME           CLAIM         POOL/TEMPLATE   READY                      POD IP       AGE    EXPIRES
<none>         kubox-b2c4d   pool/nope       False (WarmPoolNotFound)   <none>       5s     <none>
python-abcde   kubox-x7k2q   pool/python     True                       10.77.0.12   10m    in 59m
python-fghij   <none>        pool/python     True                       10.77.0.13   3h     <none>
scratch        <none>        template/base   False (SandboxSuspended)   <none>       2d1h   expired
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("kubox ls table (-want +got):\n%s", diff)
	}
}

func TestLsTableAllNamespaces(t *testing.T) {
	_, sandboxes := fixture()
	other := sandboxes[0].DeepCopy()
	other.Namespace = "aaa"
	var b bytes.Buffer
	if err := printTable(&b, lsColumns, rows(nil, append(sandboxes[:1], *other), now), true); err != nil {
		t.Fatal(err)
	}
	want := `NAMESPACE   NAME      CLAIM    POOL/TEMPLATE   READY                      POD IP   AGE    EXPIRES
aaa         scratch   <none>   template/base   False (SandboxSuspended)   <none>   2d1h   expired
default     scratch   <none>   template/base   False (SandboxSuspended)   <none>   2d1h   expired
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("kubox ls -A table (-want +got):\n%s", diff)
	}
}

func TestClaimTable(t *testing.T) {
	claims, sandboxes := fixture()
	var b bytes.Buffer
	if err := printTable(&b, claimColumns, rows(claims[:1], sandboxes[2:], now), false); err != nil {
		t.Fatal(err)
	}
	want := `CLAIM         SANDBOX        POOL/TEMPLATE   READY   AGE
kubox-x7k2q   python-abcde   pool/python     True    10m
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("kubox claim table (-want +got):\n%s", diff)
	}
}

func TestPrintObjects(t *testing.T) {
	claims, sandboxes := fixture()
	objs := []runtime.Object{&claims[0], &sandboxes[2]}
	for _, format := range []string{outputJSON, outputYAML} {
		t.Run(format, func(t *testing.T) {
			var b bytes.Buffer
			if err := printObjects(&b, format, objs, false); err != nil {
				t.Fatal(err)
			}
			var list struct {
				APIVersion, Kind string
				Items            []struct {
					APIVersion string `json:"apiVersion"`
					Kind       string
					Metadata   struct {
						Name          string
						ManagedFields []any `json:"managedFields"`
					}
				}
			}
			decode := json.Unmarshal
			if format == outputYAML {
				decode = func(b []byte, v any) error { return yaml.Unmarshal(b, v) }
			}
			if err := decode(b.Bytes(), &list); err != nil {
				t.Fatalf("output is not %s: %v\n%s", format, err, b.String())
			}
			type item struct{ APIVersion, Kind, Name string }
			var got []item
			for _, it := range list.Items {
				if it.Metadata.ManagedFields != nil {
					t.Errorf("%s %s carries managedFields", it.Kind, it.Metadata.Name)
				}
				got = append(got, item{it.APIVersion, it.Kind, it.Metadata.Name})
			}
			want := []item{
				{"extensions.agents.x-k8s.io/v1beta1", "SandboxClaim", "kubox-x7k2q"},
				{"agents.x-k8s.io/v1beta1", "Sandbox", "python-abcde"},
			}
			if list.APIVersion != "v1" || list.Kind != "List" {
				t.Errorf("list is %s %s, want v1 List", list.APIVersion, list.Kind)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			if sandboxes[2].ManagedFields == nil {
				t.Error("printing changed the object it was given")
			}
		})
	}
}

func TestPrintSingleObject(t *testing.T) {
	_, sandboxes := fixture()
	var b bytes.Buffer
	if err := printObjects(&b, outputYAML, []runtime.Object{&sandboxes[0]}, true); err != nil {
		t.Fatal(err)
	}
	got := &sandboxv1beta1.Sandbox{}
	if err := yaml.UnmarshalStrict(b.Bytes(), got); err != nil {
		t.Fatalf("kubox get NAME -o yaml is not a Sandbox: %v\n%s", err, b.String())
	}
	if got.Kind != "Sandbox" || got.Name != "scratch" || got.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeSuspended {
		t.Errorf("printed %s %s (operatingMode %s), want Sandbox scratch, Suspended", got.Kind, got.Name, got.Spec.OperatingMode)
	}
}

// TestLsTableWithIdlePolicies: the idle columns appear once a row has an idle policy, and show
// the mode, the controller's reason and the later of its time and the router's annotation.
func TestLsTableWithIdlePolicies(t *testing.T) {
	policy := &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: 10 * time.Minute}}
	awake := testutil.MakeSandbox("awake", "default").Condition(metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue}).
		Annotation(sandboxv1beta1.LastActivityAnnotation, now.Add(-2*time.Minute).Format(time.RFC3339)).Obj()
	awake.Spec.IdlePolicy = policy
	awake.Status.Idle = &sandboxv1beta1.IdleStatus{Reason: sandboxv1beta1.IdleReasonRunningProcesses,
		LastActiveTime: ptr.To(metav1.NewTime(now.Add(-5 * time.Minute)))}
	awake.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))

	asleep := testutil.MakeSandbox("asleep", "default").Suspended().
		Annotation(sandboxv1beta1.SuspendedByAnnotation, sandboxv1beta1.SuspendedByIdle).
		Condition(metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "SandboxSuspended"}).Obj()
	asleep.Spec.IdlePolicy = policy
	asleep.Status.Idle = &sandboxv1beta1.IdleStatus{Reason: sandboxv1beta1.IdleReasonSuspended,
		LastActiveTime: ptr.To(metav1.NewTime(now.Add(-3 * time.Hour)))}
	asleep.CreationTimestamp = metav1.NewTime(now.Add(-5 * time.Hour))

	fresh := testutil.MakeSandbox("fresh", "default").Obj()
	fresh.Spec.IdlePolicy = policy
	fresh.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))

	plain := testutil.MakeSandbox("plain", "default").Obj()
	plain.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))

	sandboxes := []sandboxv1beta1.Sandbox{*awake, *asleep, *fresh, *plain}
	rs := rows(nil, sandboxes, now)
	var b bytes.Buffer
	if err := printTable(&b, withIdle(lsColumns, rs), rs, false); err != nil {
		t.Fatal(err)
	}
	want := `NAME     CLAIM    POOL/TEMPLATE   READY                      POD IP   AGE   EXPIRES   MODE               IDLE               LAST ACTIVE
asleep   <none>   <none>          False (SandboxSuspended)   <none>   5h    <none>    Suspended (idle)   Suspended          3h ago
awake    <none>   <none>          True                       <none>   60m   <none>    Running            RunningProcesses   2m ago
fresh    <none>   <none>          Unknown                    <none>   60s   <none>    Running            <none>             <none>
plain    <none>   <none>          Unknown                    <none>   60s   <none>    <none>             <none>             <none>
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("kubox ls table with idle policies (-want +got):\n%s", diff)
	}
	if got := withIdle(lsColumns, rows(nil, sandboxes[3:], now)); len(got) != len(lsColumns) {
		t.Errorf("a table without idle policies has %d columns, want the usual %d", len(got), len(lsColumns))
	}
}
