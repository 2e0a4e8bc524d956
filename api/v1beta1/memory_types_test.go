package v1beta1

import (
	"strings"
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

func TestForkOf(t *testing.T) {
	src := &Sandbox{}
	src.Namespace, src.Name = "team-a", "py"
	src.Labels = map[string]string{ClaimUIDLabel: "claim-uid"}
	src.Spec.OperatingMode = SandboxOperatingModeSuspended
	src.Spec.SuspendPolicy = &SuspendPolicy{KeepMemory: true}
	src.Status.Memory = &MemoryStatus{Snapshot: "own"}
	f := ForkOf(src, "snap")
	if f.Namespace != "team-a" || f.Name != "" || f.GenerateName != "py-fork-" || len(f.Labels) != 1 || f.Labels[ForkOfLabel] != "py" {
		t.Errorf("fork metadata %+v; want generateName py-fork- and only the fork-of label (not the source's claim)", f.ObjectMeta)
	}
	if f.Spec.OperatingMode != SandboxOperatingModeRunning || f.Spec.SnapshotRef == nil || f.Spec.SnapshotRef.Name != "snap" ||
		f.Spec.SuspendPolicy == nil || f.Status.Memory != nil {
		t.Errorf("fork spec %+v, status %+v; want running from snap, with the source's suspend policy and no status", f.Spec, f.Status)
	}
	f.Spec.SuspendPolicy.KeepMemory = false
	if !src.Spec.SuspendPolicy.KeepMemory {
		t.Error("the fork's spec shares memory with the source's")
	}
	long := &Sandbox{}
	long.Name = "a" + strings.Repeat("b", 62)
	if p := ForkOf(long, "snap").GenerateName; len(p) != 58 || p[0] != 'a' || !strings.HasSuffix(p, "-fork-") {
		t.Errorf("generateName of a 63-character source %q (%d); want 58 characters starting as the source does, ending -fork-", p, len(p))
	}
}
