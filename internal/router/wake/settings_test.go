package wake

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/httperr"
)

// TestWakeWaitsUntilServing: a woken sandbox that is Ready but cannot serve yet (its claim's
// settings are not in the new Pod) holds the requests until a change of its claim says it can.
func TestWakeWaitsUntilServing(t *testing.T) {
	f := newFakeSandboxes()
	w := newTestWaker(t, f, time.Minute)
	var serving atomic.Bool
	w.Serving = func(context.Context, *sandboxv1beta1.Sandbox) (bool, *httperr.Error) { return serving.Load(), nil }
	done := waitAll(t.Context(), w, f, 3)
	<-f.resumed
	f.setReady(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "10.0.0.7")
	w.Events.Notify(box)
	select {
	case errs := <-done:
		t.Fatalf("the waits ended before the claim's settings were in the Pod: %v", errs)
	case <-time.After(100 * time.Millisecond):
	}
	serving.Store(true)
	boundTo := func(sandbox string) *extv1beta1.SandboxClaim {
		c := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim-of-" + sandbox}}
		c.Status.Sandbox.Name = sandbox
		return c
	}
	w.Events.NotifyObject(boundTo("other")) // another sandbox's claim changed: no look
	w.Events.NotifyObject(boundTo("box"))   // its claim changed: a look, which finds it serving
	for i, herr := range <-done {
		if herr != nil {
			t.Errorf("request %d: %v", i, herr)
		}
	}
}

// TestSettingsOutcome: when the claim's Ready says its settings are in the woken Pod.
func TestSettingsOutcome(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	sandbox := func(warm bool, readySince time.Time) *sandboxv1beta1.Sandbox {
		sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "box"}}
		if warm {
			sb.Labels = map[string]string{sandboxv1beta1.LaunchTypeLabel: extv1beta1.LaunchTypeWarm}
		}
		sb.Status.Conditions = []metav1.Condition{{Type: sandboxv1beta1.SandboxConditionReady, Status: metav1.ConditionTrue,
			Reason: sandboxv1beta1.SandboxReasonDependenciesReady, LastTransitionTime: metav1.NewTime(readySince)}}
		return sb
	}
	claim := func(env, files bool, status metav1.ConditionStatus, reason string, since time.Time) *extv1beta1.SandboxClaim {
		c := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
		if env {
			c.Spec.Env = []extv1beta1.EnvVar{{Name: "TOKEN"}}
		}
		if files {
			c.Spec.SecretFiles = []extv1beta1.SecretFile{{SecretName: "api", MountPath: "/run/secrets/api"}}
		}
		c.Status.Conditions = []metav1.Condition{{Type: extv1beta1.ClaimConditionReady, Status: status, Reason: reason,
			Message: "m", LastTransitionTime: metav1.NewTime(since)}}
		return c
	}
	before, after := t0.Add(-10*time.Minute), t0.Add(time.Second)
	for _, tc := range []struct {
		name    string
		sb      *sandboxv1beta1.Sandbox
		claim   *extv1beta1.SandboxClaim
		serving bool
		err     string
	}{
		{"no settings: nothing to wait for", sandbox(true, t0), claim(false, false, metav1.ConditionFalse, "Suspended", before), true, ""},
		{"env of a cold sandbox is in its Pod spec", sandbox(false, t0), claim(true, false, metav1.ConditionFalse, "Suspended", before), true, ""},
		{"claim still Ready from before the suspend", sandbox(true, t0), claim(true, false, metav1.ConditionTrue, "DependenciesReady", before), false, ""},
		{"claim not Ready yet", sandbox(true, t0), claim(true, true, metav1.ConditionFalse, "Suspended", before), false, ""},
		{"settings being delivered", sandbox(true, t0), claim(true, true, metav1.ConditionFalse, extv1beta1.ClaimReasonSettingsPending, after), false, ""},
		{"claim Ready after the sandbox", sandbox(true, t0), claim(true, true, metav1.ConditionTrue, "DependenciesReady", after), true, ""},
		{"claim Ready in the same second", sandbox(false, t0), claim(false, true, metav1.ConditionTrue, "DependenciesReady", t0), true, ""},
		{"a Secret the claim cannot read", sandbox(true, t0), claim(false, true, metav1.ConditionFalse, extv1beta1.ClaimReasonSecretFilesRejected, before), false, "SandboxClaim c cannot take its settings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, herr := SettingsOutcome(tc.sb, tc.claim)
			if ok != tc.serving {
				t.Errorf("serving = %v, want %v", ok, tc.serving)
			}
			switch {
			case tc.err == "" && herr != nil:
				t.Errorf("error %v, want none", herr)
			case tc.err != "" && (herr == nil || herr.Code != http.StatusServiceUnavailable || !strings.Contains(herr.Msg, tc.err)):
				t.Errorf("error %+v, want 503 containing %q", herr, tc.err)
			}
		})
	}
}
