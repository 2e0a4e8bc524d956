package sandbox

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

func TestTransitionEvents(t *testing.T) {
	st := func(conds ...metav1.Condition) *sandboxv1beta1.SandboxStatus {
		return &sandboxv1beta1.SandboxStatus{Conditions: conds}
	}
	c := func(typ string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: typ + " " + reason}
	}
	const ready, suspended, finished = sandboxv1beta1.SandboxConditionReady, sandboxv1beta1.SandboxConditionSuspended,
		sandboxv1beta1.SandboxConditionFinished
	cases := map[string]struct {
		before, after *sandboxv1beta1.SandboxStatus
		want          []string // reason/type of each event
	}{
		"nothing changes":   {before: st(c(ready, "True", "DependenciesReady")), after: st(c(ready, "True", "DependenciesReady"))},
		"first status":      {before: st(), after: st(c(ready, "False", "DependenciesNotReady"))},
		"becomes ready":     {before: st(c(ready, "False", "DependenciesNotReady")), after: st(c(ready, "True", "DependenciesReady")), want: []string{"SandboxReady/Normal"}},
		"ready on creation": {before: st(), after: st(c(ready, "True", "DependenciesReady")), want: []string{"SandboxReady/Normal"}},
		"suspended": {before: st(c(suspended, "False", "PodTerminating")), after: st(c(suspended, "True", "PodTerminated")),
			want: []string{"SandboxSuspended/Normal"}},
		"pod succeeded": {before: st(c(ready, "True", "DependenciesReady")),
			after: st(c(ready, "False", "PodSucceeded"), c(finished, "True", "PodSucceeded")), want: []string{"PodSucceeded/Normal"}},
		"pod failed": {before: st(), after: st(c(finished, "True", "PodFailed")), want: []string{"PodFailed/Warning"}},
		// agent-sandbox v1.0.13: Finished stays, so its events fire on the transition to True only.
		"finished stays True across a suspend": {before: st(c(finished, "True", "PodSucceeded")),
			after: st(c(suspended, "True", "PodTerminated"), c(finished, "True", "PodSucceeded")), want: []string{"SandboxSuspended/Normal"}},
		"a later pod has not finished": {before: st(c(finished, "True", "PodFailed")), after: st(c(finished, "False", "NotFinished"))},
		"a later pod fails":            {before: st(c(finished, "False", "NotFinished")), after: st(c(finished, "True", "PodFailed")), want: []string{"PodFailed/Warning"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, e := range transitionEvents(tc.before, tc.after) {
				got = append(got, e.Reason+"/"+e.Type)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
