package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// fields splits a table's lines into their cells.
func fields(table string) [][]string {
	var out [][]string
	for _, l := range strings.Split(strings.TrimSpace(table), "\n") {
		out = append(out, strings.Fields(l))
	}
	return out
}

func TestClaimGetAndDelete(t *testing.T) {
	f := setup(t)
	env.Create(t, f.template("python").EnvVarsInjectionPolicy(extv1beta1.EnvVarsInjectionPolicyAllowed).Obj())

	r := f.mustRun(t, "claim", "--template", "python", "--name", "my-box", "--ttl", "1h", "--env", "MODE=test",
		"--label", "team=ml", "-o", "json")
	var list struct {
		Items []json.RawMessage
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Items) != 2 {
		t.Fatalf("kubox claim -o json printed %d items (%v), want the claim and its sandbox:\n%s", len(list.Items), err, r.stdout)
	}
	claim := &extv1beta1.SandboxClaim{}
	sb := &sandboxv1beta1.Sandbox{}
	if err := json.Unmarshal(list.Items[0], claim); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(list.Items[1], sb); err != nil {
		t.Fatal(err)
	}
	if claim.Kind != "SandboxClaim" || claim.Name != "my-box" || claim.Labels["team"] != "ml" ||
		claim.Spec.SandboxTemplateRef == nil || claim.Spec.SandboxTemplateRef.Name != "python" ||
		len(claim.Spec.Env) != 1 || claim.Spec.Env[0] != (extv1beta1.EnvVar{Name: "MODE", Value: "test"}) {
		t.Errorf("printed claim %s %s labels %v spec %+v; want SandboxClaim my-box, team=ml, template python, env MODE=test",
			claim.Kind, claim.Name, claim.Labels, claim.Spec)
	}
	if lc := claim.Spec.Lifecycle; lc == nil || lc.ShutdownTime == nil || time.Until(lc.ShutdownTime.Time) < 58*time.Minute ||
		lc.ShutdownPolicy != extv1beta1.ClaimShutdownPolicyDelete {
		t.Errorf("claim lifecycle = %+v, want shutdown in about an hour with policy Delete", lc)
	}
	if sb.Kind != "Sandbox" || sb.Name != claim.Status.Sandbox.Name ||
		!meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady) {
		t.Errorf("printed sandbox %s %s (claim's sandbox %q), Ready %v; want the claim's Ready Sandbox",
			sb.Kind, sb.Name, claim.Status.Sandbox.Name, sb.Status.Conditions)
	}
	if !strings.Contains(r.stderr, "claim my-box: sandbox "+sb.Name+" is Ready") {
		t.Errorf("stderr = %q, want the progress to end with the sandbox Ready", r.stderr)
	}

	// The table of kubox get --claim and kubox ls: one row, the sandbox with its claim.
	for _, args := range [][]string{{"get", "--claim", "my-box"}, {"ls"}, {"get", sb.Name}} {
		r := f.mustRun(t, args...)
		rows := fields(r.stdout)
		if len(rows) != 2 || rows[0][0] != "NAME" || rows[1][0] != sb.Name || rows[1][1] != "my-box" ||
			rows[1][2] != "template/python" || rows[1][3] != "True" || rows[1][len(rows[1])-2] != "in" {
			t.Errorf("kubox %s printed:\n%s\nwant one row: sandbox %s, claim my-box, template/python, True, a pod IP, expiring in about 1h",
				strings.Join(args, " "), r.stdout, sb.Name)
		}
	}
	r = f.mustRun(t, "ls", "-A")
	if rows := fields(r.stdout); rows[0][0] != "NAMESPACE" || !strings.Contains(r.stdout, f.ns+" ") {
		t.Errorf("kubox ls -A printed:\n%s\nwant a NAMESPACE column with %s", r.stdout, f.ns)
	}
	r = f.mustRun(t, "get", "--claim", "my-box", "-o", "yaml")
	if !strings.HasPrefix(r.stdout, "apiVersion: extensions.agents.x-k8s.io/v1beta1\nkind: SandboxClaim\n") {
		t.Errorf("kubox get --claim my-box -o yaml printed:\n%s\nwant the claim itself", r.stdout)
	}

	// A claimed sandbox is not deleted behind its claim's back; the claim is.
	r = f.run(t, "delete", sb.Name)
	if r.code != 1 || !strings.Contains(r.stderr, "belongs to claim my-box: release the claim with kubox delete --claim my-box") {
		t.Errorf("kubox delete %s exited %d with %q; want 1 and the claim to delete instead", sb.Name, r.code, r.stderr)
	}
	r = f.mustRun(t, "delete", "--claim", "my-box")
	if r.stdout != "claim my-box deleted\n" {
		t.Errorf("kubox delete --claim my-box printed %q", r.stdout)
	}
	env.WaitGone(t, claim)
	r = f.run(t, "get", "--claim", "my-box")
	if r.code != 1 || !strings.Contains(r.stderr, `claim "my-box" not found in namespace `+f.ns) {
		t.Errorf("kubox get of a deleted claim exited %d with %q; want 1 and not found", r.code, r.stderr)
	}
}

func TestClaimFromMissingPoolFailsAndIsDeleted(t *testing.T) {
	f := setup(t)
	r := f.run(t, "claim", "--pool", "nope", "--name", "doomed")
	if r.code != 1 {
		t.Fatalf("kubox claim --pool nope exited %d; want 1\nstderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"claim doomed", "WarmPoolNotFound", `create SandboxWarmPool "nope"`, "the claim was deleted"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if r.stdout != "" {
		t.Errorf("stdout = %q, want nothing", r.stdout)
	}
	env.WaitGone(t, &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "doomed"}})
}

func TestClaimWithoutWaiting(t *testing.T) {
	f := setup(t)
	f.kubelet.SetFate(func(*corev1.Pod) framework.Fate { return framework.LeavePending })
	env.Create(t, f.template("python").Obj())
	r := f.mustRun(t, "claim", "--template", "python", "--name", "quick", "--wait=false")
	rows := fields(r.stdout)
	if len(rows) != 2 || rows[1][0] != "quick" || rows[1][1] != "<none>" || rows[1][2] != "template/python" {
		t.Errorf("kubox claim --wait=false printed:\n%s\nwant the claim without a sandbox yet", r.stdout)
	}
	framework.WaitForObject(t, env, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "quick"}},
		func(sb *sandboxv1beta1.Sandbox) (bool, string) {
			return meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady) != nil, "the sandbox has no Ready condition"
		})
	r = f.mustRun(t, "ls")
	if rows := fields(r.stdout); len(rows) != 2 || rows[1][1] != "quick" || !strings.Contains(r.stdout, "False (") {
		t.Errorf("kubox ls printed:\n%s\nwant the pending sandbox's READY with its reason", r.stdout)
	}
}

func TestSuspendAndResume(t *testing.T) {
	f := setup(t)
	env.Create(t, f.template("python").Obj())
	f.mustRun(t, "claim", "--template", "python", "--name", "sleepy")
	claim := framework.Read[extv1beta1.SandboxClaim](t, env, f.ns, "sleepy")
	sbName := claim.Status.Sandbox.Name

	r := f.mustRun(t, "suspend", "--claim", "sleepy")
	if r.stdout != "sandbox "+sbName+" suspended\n" {
		t.Errorf("kubox suspend printed %q", r.stdout)
	}
	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, f.ns, sbName)
	if sb.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeSuspended ||
		!meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionSuspended) {
		t.Errorf("after kubox suspend: operatingMode %s, conditions %+v; want Suspended and Suspended=True", sb.Spec.OperatingMode, sb.Status.Conditions)
	}
	if found, err := env.Get(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: sbName}}); err != nil || found {
		t.Errorf("the Pod of the suspended sandbox exists (%v, %v); kubox suspend must wait until it is gone", found, err)
	}
	r = f.mustRun(t, "ls")
	if !strings.Contains(r.stdout, "False (SandboxSuspended)") {
		t.Errorf("kubox ls printed:\n%s\nwant the sandbox not Ready because it is suspended", r.stdout)
	}

	r = f.mustRun(t, "resume", sbName)
	if r.stdout != "sandbox "+sbName+" resumed\n" {
		t.Errorf("kubox resume printed %q", r.stdout)
	}
	sb = framework.Read[sandboxv1beta1.Sandbox](t, env, f.ns, sbName)
	if !meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady) {
		t.Errorf("after kubox resume: conditions %+v; want Ready", sb.Status.Conditions)
	}
}

// TestSuspendKeepMemoryFailsWithTheReason: kubox suspend --keep-memory against a controller that
// cannot reach kubox-node (none here) suspends the sandbox and fails naming why the memory was not
// kept.
func TestSuspendKeepMemoryFailsWithTheReason(t *testing.T) {
	f := setup(t)
	sb := f.sandbox(t, "forgetful")
	framework.WaitForObject(t, env, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: sb.Name}}, nil)
	r := f.run(t, "suspend", "forgetful", "--keep-memory")
	if r.code != 1 || !strings.Contains(r.stderr, "sandbox forgetful is suspended without its memory") ||
		!strings.Contains(r.stderr, "controllers.sandbox.memory.tokenFile") {
		t.Errorf("kubox suspend --keep-memory exited %d with:\n%s\nwant 1 and the controller's reason", r.code, r.stderr)
	}
	got := framework.Read[sandboxv1beta1.Sandbox](t, env, f.ns, "forgetful")
	if got.Spec.SuspendPolicy == nil || !got.Spec.SuspendPolicy.KeepMemory ||
		!meta.IsStatusConditionTrue(got.Status.Conditions, sandboxv1beta1.SandboxConditionSuspended) {
		t.Errorf("after kubox suspend --keep-memory: suspendPolicy %+v, conditions %+v; want keepMemory and Suspended=True",
			got.Spec.SuspendPolicy, got.Status.Conditions)
	}
}

func TestResumeTimesOutWithTheReason(t *testing.T) {
	f := setup(t)
	sb := f.sandbox(t, "stuck")
	framework.WaitForObject(t, env, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: sb.Name}}, nil)
	f.mustRun(t, "suspend", "stuck")
	f.kubelet.SetFate(func(*corev1.Pod) framework.Fate { return framework.LeavePending })
	r := f.run(t, "resume", "stuck", "--ready-timeout", "2s")
	if r.code != 1 || !strings.Contains(r.stderr, "sandbox stuck in namespace "+f.ns+" is still not Ready") ||
		!strings.Contains(r.stderr, "--ready-timeout") {
		t.Errorf("kubox resume of a sandbox that never starts exited %d with:\n%s\nwant 1, the state and the fix", r.code, r.stderr)
	}
}

// TestLifecycleOfAnExpiredSandboxFailsAtOnce: kubox suspend and resume of an expired sandbox,
// which takes no operatingMode, fail with the reason and what to do, by the API's rule
// (SandboxSuspension, SandboxReadiness), instead of waiting out --ready-timeout.
func TestLifecycleOfAnExpiredSandboxFailsAtOnce(t *testing.T) {
	f := setup(t)
	sb := testutil.MakeSandbox("gone", f.ns).ShutdownAt(time.Now().Add(-time.Minute)).
		ShutdownPolicy(sandboxv1beta1.ShutdownPolicyRetain).Obj()
	sb.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(f.agentPort)), CompatibilityPort: ptr.To[int32](0)}
	env.Create(t, sb)
	framework.WaitForObject(t, env, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "gone"}},
		func(sb *sandboxv1beta1.Sandbox) (bool, string) {
			r := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
			return r != nil && r.Reason == sandboxv1beta1.SandboxReasonExpired, "the sandbox has not expired yet"
		})
	for _, cmd := range []string{"suspend", "resume"} {
		r := f.run(t, cmd, "gone")
		if r.code != 1 || !strings.Contains(r.stderr, "sandbox gone in namespace "+f.ns) ||
			!strings.Contains(r.stderr, "SandboxExpired") || !strings.Contains(r.stderr, "kubox claim") ||
			strings.Contains(r.stderr, "is still") {
			t.Errorf("kubox %s of an expired sandbox exited %d with:\n%s\nwant 1 at once, naming the sandbox, SandboxExpired and the fix", cmd, r.code, r.stderr)
		}
	}
}

func TestGetUnknownNamesSaysWhatToDo(t *testing.T) {
	f := setup(t)
	for _, args := range [][]string{{"get", "ghost"}, {"suspend", "ghost"}, {"exec", "ghost", "--", "true"}, {"cp", "./x", "ghost:/x"}} {
		r := f.run(t, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "ghost") || !strings.Contains(r.stderr, "not found") ||
			!strings.Contains(r.stderr, "--claim") {
			t.Errorf("kubox %s exited %d with %q; want 1, naming ghost, not found, and the --claim hint", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	r := f.run(t, "delete", "--claim", "ghost", "also-ghost")
	if r.code != 1 || !strings.Contains(r.stderr, `claim "ghost" not found`) || !strings.Contains(r.stderr, `claim "also-ghost" not found`) {
		t.Errorf("kubox delete of two unknown claims exited %d with %q; want both reported", r.code, r.stderr)
	}
	r = f.mustRun(t, "ls")
	if r.stdout != "" || !strings.Contains(r.stderr, "No sandboxes or claims in namespace "+f.ns) {
		t.Errorf("kubox ls of an empty namespace printed %q / %q", r.stdout, r.stderr)
	}
}

// TestSnapshotAndForkFailWithTheReason: kubox snapshot and kubox fork against a controller that
// cannot reach kubox-node (none here) fail naming why, and fork starts no sandbox; fork refuses a
// count below 1 before it touches anything.
// TestClaimFromASnapshot: --snapshot reaches the claim's sandbox, which waits for the snapshot
// (here one that does not exist) and says so, through the CLI, the SDK and both controllers.
func TestClaimFromASnapshot(t *testing.T) {
	f := setup(t)
	env.Create(t, f.template("python").ClaimPolicy(extv1beta1.ClaimPolicy{SnapshotRefPolicy: extv1beta1.SnapshotRefPolicyAllowed}).Obj())
	f.mustRun(t, "claim", "--template", "python", "--name", "restored", "--snapshot", "numpy-loaded", "--wait=false")
	framework.WaitForObject(t, env, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "restored"}},
		func(sb *sandboxv1beta1.Sandbox) (bool, string) {
			c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
			ok := sb.Spec.SnapshotRef != nil && sb.Spec.SnapshotRef.Name == "numpy-loaded" && c != nil &&
				c.Reason == sandboxv1beta1.SandboxReasonSnapshotNotReady && strings.Contains(c.Message, "numpy-loaded")
			return ok, fmt.Sprintf("snapshotRef %+v, Ready %+v; want numpy-loaded and SnapshotNotReady naming it", sb.Spec.SnapshotRef, c)
		})
}

func TestSnapshotAndForkFailWithTheReason(t *testing.T) {
	f := setup(t)
	sb := f.sandbox(t, "origin")
	framework.WaitForObject(t, env, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: sb.Name}}, nil)
	for _, args := range [][]string{{"snapshot", "origin"}, {"fork", "origin", "--count", "2"}} {
		r := f.run(t, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "the snapshot could not be taken") || !strings.Contains(r.stderr, "controllers.sandbox.memory.tokenFile") {
			t.Errorf("kubox %s exited %d with:\n%s\nwant 1 and the controller's reason", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := f.run(t, "fork", "origin", "--count", "0"); r.code != 1 || !strings.Contains(r.stderr, "--count is 0") {
		t.Errorf("kubox fork --count 0 exited %d with %q; want 1 and the fix", r.code, r.stderr)
	}
	sbs := &sandboxv1beta1.SandboxList{}
	if err := env.Client.List(t.Context(), sbs, client.InNamespace(f.ns), client.HasLabels{sandboxv1beta1.ForkOfLabel}); err != nil || len(sbs.Items) != 0 {
		t.Errorf("forks after failed snapshots: %d, %v; want none", len(sbs.Items), err)
	}
}
