package e2b

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestOnTimeoutPauseNeverDropsTheFilesystem: E2B's lifecycle {onTimeout: 'pause', autoResume}
// (the SDK sends autoPause, autoPauseMemory and autoResume: {enabled}) pauses a sandbox when its
// timeout passes instead of killing it, keeping its files. kubox's timeout pause is the idle
// policy's suspend with the memory kept, so before it answers a sandbox, create proves, as the
// caller, that the sandbox's files can be kept (a Filesystem SandboxSnapshot of it, as pause
// takes). Here no kubox-node can take one, so each create answers 400 naming the controller's
// reason and what to configure, and leaves no sandbox and no snapshot behind: no sandbox is
// given a timeout pause that would drop /tmp. What kubox cannot do at all (a filesystem-only
// timeout pause; autoResume without a pause) is refused naming what kubox offers.
func TestOnTimeoutPauseNeverDropsTheFilesystem(t *testing.T) {
	f := setup(t)
	env.Grant(t, f.ns, user, "e2b-snapshots", snapshotRules()...)
	before := f.claimCount(t)
	for name, tc := range map[string]struct {
		body map[string]any
		want []string
	}{
		"onTimeout pause, autoResume": {body: map[string]any{"autoPause": true, "autoResume": map[string]any{"enabled": true}},
			want: []string{extv1beta1.SnapshotReasonCheckpointFailed, "runsc"}},
		"onTimeout pause": {body: map[string]any{"autoPause": true},
			want: []string{extv1beta1.SnapshotReasonCheckpointFailed, "runsc"}},
		"onTimeout pause, autoResume false": {body: map[string]any{"autoPause": true, "autoResume": map[string]any{"enabled": false}},
			want: []string{extv1beta1.SnapshotReasonCheckpointFailed, "runsc"}},
		"onTimeout pause keepMemory false": {body: map[string]any{"autoPause": true, "autoPauseMemory": false},
			want: []string{"keepMemory", "pause({keepMemory: false})"}},
		"autoResume without a pause": {body: map[string]any{"autoResume": map[string]any{"enabled": true}},
			want: []string{"onTimeout"}},
	} {
		body := map[string]any{"templateID": pool, "timeout": 300}
		for k, v := range tc.body {
			body[k] = v
		}
		var e struct {
			Message string `json:"message"`
		}
		code := f.apiRaw(t, http.MethodPost, "/sandboxes", body, &e)
		if code != http.StatusBadRequest {
			t.Errorf("%s: create answered %d %q; want 400", name, code, e.Message)
		}
		for _, w := range tc.want {
			if !strings.Contains(e.Message, w) {
				t.Errorf("%s: create's refusal %q does not name %q", name, e.Message, w)
			}
		}
	}
	waitNoClaimsBeyond(t, f, before)
	if live := f.liveSnapshots(t); len(live) != 0 {
		t.Errorf("the refused creates left SandboxSnapshots %v", live)
	}
}

// waitNoClaimsBeyond waits until the fixture's namespace has no more live SandboxClaims than
// before: a refused create deletes the claim it made.
func waitNoClaimsBeyond(t *testing.T, f *fixture, before int) {
	t.Helper()
	framework.WaitFor(t, framework.DefaultTimeout, func() (bool, string) {
		list := &extv1beta1.SandboxClaimList{}
		if err := env.Client.List(t.Context(), list, client.InNamespace(f.ns)); err != nil {
			return false, err.Error()
		}
		live := 0
		for _, cl := range list.Items {
			if cl.DeletionTimestamp == nil {
				live++
			}
		}
		return live <= before, fmt.Sprintf("%d live SandboxClaims after the refused creates; want %d", live, before)
	})
}

// pausingClaim creates, as an administrator, the SandboxClaim E2B's create makes for a sandbox
// with onTimeout pause (no node here lets create prove the files can be kept): no shutdownTime,
// the idle policy of the timeout, and the on-timeout annotation. It waits until it is Ready.
func (f *fixture) pausingClaim(t *testing.T, autoResume bool) *extv1beta1.SandboxClaim {
	t.Helper()
	wake := sandboxv1beta1.WakePolicyManual
	if autoResume {
		wake = sandboxv1beta1.WakePolicyOnRequest
	}
	cl := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, GenerateName: "e2b-",
		Annotations: map[string]string{"e2b.kubox.dev/on-timeout": "pause"}},
		Spec: extv1beta1.SandboxClaimSpec{WarmPoolRef: &extv1beta1.SandboxWarmPoolReference{Name: pool},
			IdlePolicy: &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: 5 * time.Minute},
				RunningProcesses: sandboxv1beta1.IdleProcessPolicyIgnore, Wake: wake}}}
	env.Create(t, cl)
	framework.WaitFor(t, framework.DefaultTimeout, func() (bool, string) {
		got := framework.Read[extv1beta1.SandboxClaim](t, env, f.ns, cl.Name)
		return meta.IsStatusConditionTrue(got.Status.Conditions, extv1beta1.ClaimConditionReady), "claim " + cl.Name + " not Ready yet"
	})
	return framework.Read[extv1beta1.SandboxClaim](t, env, f.ns, cl.Name)
}

// TestTimeoutOfASandboxThatPausesOnTimeout: a sandbox with onTimeout pause is never given a
// shutdownTime, which would delete it and its files: setTimeout and connect set its idle
// policy's suspendAfter, counted from now; getInfo says its lifecycle and when it pauses. Paused
// (as its idle policy suspends it), a request to its envd resumes it with autoResume; without
// autoResume the request is refused and the sandbox stays paused until connect resumes it.
func TestTimeoutOfASandboxThatPausesOnTimeout(t *testing.T) {
	f := setup(t)
	for name, autoResume := range map[string]bool{"autoResume": true, "no autoResume": false} {
		cl := f.pausingClaim(t, autoResume)
		id := cl.Name
		before := time.Now()
		if code := f.api(t, f.apiKey, http.MethodPost, "/sandboxes/"+id+"/timeout", map[string]int{"timeout": 3600}, nil); code != http.StatusNoContent {
			t.Fatalf("%s: setTimeout answered %d, not 204", name, code)
		}
		checkPausesAfter(t, f.ns, id, before, time.Hour)
		var d struct {
			detail
			Lifecycle *struct {
				OnTimeout  string `json:"onTimeout"`
				AutoResume bool   `json:"autoResume"`
			} `json:"lifecycle"`
		}
		if code := f.api(t, f.apiKey, http.MethodGet, "/sandboxes/"+id, nil, &d); code != http.StatusOK || d.Lifecycle == nil ||
			d.Lifecycle.OnTimeout != "pause" || d.Lifecycle.AutoResume != autoResume {
			t.Errorf("%s: getInfo answered %d, lifecycle %+v; want onTimeout pause, autoResume %v", name, code, d.Lifecycle, autoResume)
		}
		if end, err := time.Parse(time.RFC3339, d.EndAt); err != nil || end.Before(before.Add(time.Hour-2*time.Second)) || end.After(time.Now().Add(time.Hour+2*time.Second)) {
			t.Errorf("%s: getInfo's endAt is %q; want the timeout pause's time, an hour from the setTimeout", name, d.EndAt)
		}

		suspendSandbox(t, f.ns, cl.Status.Sandbox.Name) // as its idle policy does at the timeout
		code := f.envdStatus(t, id, d.EnvdAccessToken)
		sb := framework.Read[sandboxv1beta1.Sandbox](t, env, f.ns, cl.Status.Sandbox.Name)
		switch {
		case autoResume && (code != http.StatusOK || sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended):
			t.Errorf("%s: a request to the paused sandbox answered %d, Sandbox %s; want it resumed and answered", name, code, sb.Spec.OperatingMode)
		case !autoResume && (code == http.StatusOK || sb.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeSuspended):
			t.Errorf("%s: a request to the paused sandbox answered %d, Sandbox %s; want it refused and the sandbox paused until connect", name, code, sb.Spec.OperatingMode)
		}
		before = time.Now()
		var resumed sandbox
		if code := f.api(t, f.apiKey, http.MethodPost, "/sandboxes/"+id+"/connect", map[string]int{"timeout": 600}, &resumed); code != http.StatusOK && code != http.StatusCreated {
			t.Fatalf("%s: connect answered %d", name, code)
		}
		checkPausesAfter(t, f.ns, id, before, 10*time.Minute)
		if code := f.envdStatus(t, id, resumed.EnvdAccessToken); code != http.StatusOK {
			t.Errorf("%s: after connect envd answered %d, not 200", name, code)
		}
	}
}

// checkPausesAfter checks that E2B sandbox id has no shutdownTime and that its Sandbox pauses
// timeout after its last activity, set at or after before.
func checkPausesAfter(t *testing.T, ns, id string, before time.Time, timeout time.Duration) {
	t.Helper()
	cl := framework.Read[extv1beta1.SandboxClaim](t, env, ns, id)
	if lc := cl.Spec.Lifecycle; lc != nil && lc.ShutdownTime != nil {
		t.Errorf("SandboxClaim %s has shutdownTime %s: its timeout would delete it, and its files, instead of pausing it", id, lc.ShutdownTime)
	}
	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, cl.Status.Sandbox.Name)
	if p := sb.Spec.IdlePolicy; p == nil || p.SuspendAfter.Duration != timeout {
		t.Errorf("Sandbox %s's idlePolicy is %+v; want suspendAfter %s", sb.Name, p, timeout)
	}
	last, err := time.Parse(time.RFC3339, sb.Annotations[sandboxv1beta1.LastActivityAnnotation])
	if err != nil || last.Before(before.Truncate(time.Second)) {
		t.Errorf("Sandbox %s's last activity is %q; want the timeout counted from %s", sb.Name, sb.Annotations[sandboxv1beta1.LastActivityAnnotation], before)
	}
}

// TestPauseSnapshotCannotBeDeletedUnderItsSandbox: a paused sandbox, and one resumed from a
// pause, keep the pause's Filesystem SandboxSnapshot in spec.snapshotRef: the next Pod of the
// sandbox (a resume whose memory was not kept, a restart) starts on its files, and the next
// pause replaces and deletes it. E2B's deleteSnapshot of its name (it is not listed, but its name
// is the sandbox's own with -pause-) would leave the sandbox naming a snapshot that is gone: its
// next Pod could not start, and a fork or snapshot of it would be refused as holding unknown
// settings. So deleteSnapshot refuses it, naming the sandbox it goes with; a snapshot of
// another sandbox's pause (a label a tenant wrote) is no shield: it is deleted as any snapshot.
func TestPauseSnapshotCannotBeDeletedUnderItsSandbox(t *testing.T) {
	f := setup(t)
	env.Grant(t, f.ns, user, "e2b-snapshots", snapshotRules()...)
	sb := f.create(t, map[string]any{"templateID": pool, "timeout": 300})
	sandboxName := f.sandboxOf(t, sb.SandboxID).Name
	pauseSnap := sb.SandboxID + "-pause-abcde"
	readySnapshot(t, f.ns, pauseSnap, pool, sb.SandboxID, nil)
	label := func(name, of string) {
		s := &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name}}
		patch := []byte(`{"metadata":{"labels":{"e2b.kubox.dev/pause-of":"` + of + `"}}}`)
		if err := env.Client.Patch(t.Context(), s, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
	label(pauseSnap, sb.SandboxID)
	// As E2B's pause leaves it (and the resume after it): spec.snapshotRef on the pause's snapshot.
	s := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: sandboxName}}
	if err := env.Client.Patch(t.Context(), s, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"snapshotRef":{"name":"`+pauseSnap+`"}}}`))); err != nil {
		t.Fatal(err)
	}
	var e struct {
		Message string `json:"message"`
	}
	if code := f.apiRaw(t, http.MethodDelete, "/templates/"+pauseSnap, nil, &e); code != http.StatusConflict || !strings.Contains(e.Message, sb.SandboxID) {
		t.Errorf("deleteSnapshot of the pause snapshot under sandbox %s answered %d %q; want 409 naming the sandbox", sb.SandboxID, code, e.Message)
	}
	if live := f.liveSnapshots(t); len(live) != 1 {
		t.Errorf("SandboxSnapshots after the refused delete: %v; want %s kept", live, pauseSnap)
	}
	// A pause label on a snapshot no sandbox names (a tenant's, or one a later pause replaced).
	readySnapshot(t, f.ns, "mine", pool, sb.SandboxID, nil)
	label("mine", sb.SandboxID)
	if code := f.apiRaw(t, http.MethodDelete, "/templates/mine", nil, nil); code != http.StatusNoContent {
		t.Errorf("deleteSnapshot of a snapshot no sandbox starts from answered %d, not 204", code)
	}
}

// TestConnectNeverShortensTheTimeout: E2B's connect of a running sandbox updates its timeout
// only when the new one is later, and Sandbox.connect(id) of the SDKs sends none: a reconnect
// must not make a sandbox with an hour left expire in E2B's default 15 s (and take its files and
// every token of it along).
func TestConnectNeverShortensTheTimeout(t *testing.T) {
	f := setup(t)
	before := time.Now()
	sb := f.create(t, map[string]any{"templateID": pool, "timeout": 3600})
	for name, body := range map[string]any{"no timeout": nil, "a shorter timeout": map[string]int{"timeout": 60}} {
		if code := f.api(t, f.apiKey, http.MethodPost, "/v2/sandboxes/"+sb.SandboxID+"/connect", body, nil); code != http.StatusOK {
			t.Fatalf("%s: connect answered %d, not 200", name, code)
		}
		checkShutdown(t, framework.Read[extv1beta1.SandboxClaim](t, env, f.ns, sb.SandboxID), before, time.Hour)
	}
	before = time.Now()
	if code := f.api(t, f.apiKey, http.MethodPost, "/v2/sandboxes/"+sb.SandboxID+"/connect", map[string]int{"timeout": 7200}, nil); code != http.StatusOK {
		t.Fatalf("connect with a longer timeout answered %d, not 200", code)
	}
	checkShutdown(t, framework.Read[extv1beta1.SandboxClaim](t, env, f.ns, sb.SandboxID), before, 2*time.Hour)
}
