package v1beta1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMemoryNotKept(t *testing.T) {
	kept := metav1.Condition{Type: SandboxConditionMemoryKept, Status: metav1.ConditionTrue, Message: "Checkpointed"}
	failed := metav1.Condition{Type: SandboxConditionMemoryKept, Status: metav1.ConditionFalse, Message: "not gVisor"}
	snapshot := &MemoryStatus{Snapshot: "s"}
	for name, tc := range map[string]struct {
		status SandboxStatus
		want   string
	}{
		"kept":                {SandboxStatus{Conditions: []metav1.Condition{kept}, Memory: snapshot}, ""},
		"failed":              {SandboxStatus{Conditions: []metav1.Condition{failed}}, "not gVisor"},
		"True without memory": {SandboxStatus{Conditions: []metav1.Condition{kept}}, "Checkpointed"},
		"no condition":        {SandboxStatus{}, "the controller did not say why (is it older than spec.suspendPolicy?)"},
	} {
		if got := MemoryNotKept(&Sandbox{Status: tc.status}); got != tc.want {
			t.Errorf("%s: MemoryNotKept = %q, want %q", name, got, tc.want)
		}
	}
}
