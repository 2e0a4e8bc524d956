package e2b

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// TestE2BPauseOnTimeout: E2B's lifecycle options, as the stock SDK sends them, become kubox's
// idle policy (the timeout, at least the idle policy's 30 s; running processes ignored; wake on
// request only with autoResume), and what kubox cannot honour is refused naming what it offers.
func TestE2BPauseOnTimeout(t *testing.T) {
	resume := func(on bool) *struct {
		Enabled bool `json:"enabled"`
	} {
		return &struct {
			Enabled bool `json:"enabled"`
		}{Enabled: on}
	}
	for name, tc := range map[string]struct {
		req     e2bNewSandbox
		timeout time.Duration
		want    *sandboxv1beta1.IdlePolicy
		refusal string // a part of the 400's message
	}{
		"onTimeout kill (the default)": {req: e2bNewSandbox{}},
		"autoResume false alone":       {req: e2bNewSandbox{AutoResume: resume(false)}},
		"onTimeout pause, autoResume": {req: e2bNewSandbox{AutoPause: true, AutoResume: resume(true)}, timeout: 5 * time.Minute,
			want: &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: 5 * time.Minute},
				RunningProcesses: sandboxv1beta1.IdleProcessPolicyIgnore, Wake: sandboxv1beta1.WakePolicyOnRequest}},
		"onTimeout pause, keepMemory true": {req: e2bNewSandbox{AutoPause: true, AutoPauseMemory: ptr.To(true)}, timeout: time.Hour,
			want: &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: time.Hour},
				RunningProcesses: sandboxv1beta1.IdleProcessPolicyIgnore, Wake: sandboxv1beta1.WakePolicyManual}},
		"onTimeout pause, a timeout under 30 s": {req: e2bNewSandbox{AutoPause: true, AutoResume: resume(false)}, timeout: 5 * time.Second,
			want: &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: 30 * time.Second},
				RunningProcesses: sandboxv1beta1.IdleProcessPolicyIgnore, Wake: sandboxv1beta1.WakePolicyManual}},
		"autoResume without a pause":      {req: e2bNewSandbox{AutoResume: resume(true)}, refusal: "onTimeout 'pause'"},
		"a filesystem-only timeout pause": {req: e2bNewSandbox{AutoPause: true, AutoPauseMemory: ptr.To(false)}, refusal: "pause({keepMemory: false})"},
	} {
		t.Run(name, func(t *testing.T) {
			lc, herr := e2bPauseOnTimeout(&tc.req)
			if tc.refusal != "" {
				if herr == nil || herr.Code != http.StatusBadRequest || !strings.Contains(herr.Msg, tc.refusal) {
					t.Fatalf("refusal = %v; want 400 naming %q", herr, tc.refusal)
				}
				return
			}
			if herr != nil {
				t.Fatalf("refused: %v", herr)
			}
			var got *sandboxv1beta1.IdlePolicy
			if lc != nil {
				got = e2bIdlePolicy(tc.timeout, lc.AutoResume)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("idle policy (-want +got):\n%s", diff)
			}
		})
	}
}
