package sandboxclaim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestClaimStateTransitions(t *testing.T) {
	at := testNow.Time
	cases := map[string]struct {
		steps []func(*observed)
		want  claimState
	}{
		"a new pass is unbound":             {want: stateUnbound},
		"unbound binds":                     {steps: []func(*observed){bindTo("sb")}, want: stateBound},
		"unbound fails":                     {steps: []func(*observed){failWith("TemplateNotFound")}, want: stateFailed},
		"unbound waits":                     {steps: []func(*observed){waitFor}, want: stateWaiting},
		"bound expires":                     {steps: []func(*observed){bindTo("sb"), expireAt(at)}, want: stateExpired},
		"failed is deleted":                 {steps: []func(*observed){failWith("SandboxMissing"), deleteClaim}, want: stateDeleted},
		"waiting expires":                   {steps: []func(*observed){waitFor, expireAt(at)}, want: stateExpired},
		"bound does not fail in the pass":   {steps: []func(*observed){bindTo("sb"), failWith("AdoptionConflict")}, want: stateBound},
		"waiting does not bind in the pass": {steps: []func(*observed){waitFor, bindTo("sb")}, want: stateWaiting},
		"expired is final":                  {steps: []func(*observed){expireAt(at), deleteClaim}, want: stateExpired},
		"deleted is final":                  {steps: []func(*observed){deleteClaim, expireAt(at)}, want: stateDeleted},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obs := &observed{}
			for _, step := range tc.steps {
				step(obs)
			}
			if diff := cmp.Diff(tc.want.String(), obs.state.String()); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}

func bindTo(name string) func(*observed) {
	return func(obs *observed) { obs.bind(sandboxWith(name, nil)) }
}
func failWith(reason string) func(*observed) {
	return func(obs *observed) { obs.fail(fail(reason, "test")) }
}
func expireAt(at time.Time) func(*observed) {
	return func(obs *observed) { obs.expire(&at) }
}
func waitFor(obs *observed)     { obs.wait(time.Second) }
func deleteClaim(obs *observed) { obs.claimDeleted() }
