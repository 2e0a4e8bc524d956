package v1beta1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestClaimSettingsRefusal: a snapshot holding a claim's settings serves that claim and forks only;
// never a warm pool member or another claim. A Filesystem snapshot holds no env.
func TestClaimSettingsRefusal(t *testing.T) {
	snap := func(typ SnapshotType, src *SnapshotSourceClaim) *SandboxSnapshot {
		return &SandboxSnapshot{Spec: SandboxSnapshotSpec{Type: typ}, Status: SandboxSnapshotStatus{SourceClaim: src}}
	}
	alice := &SnapshotSourceClaim{Name: "alice", UID: "alice-uid", Env: true, SecretFiles: true}
	aliceEnv := &SnapshotSourceClaim{Name: "alice", UID: "alice-uid", Env: true}
	for name, tc := range map[string]struct {
		snap       *SandboxSnapshot
		claim      types.UID
		poolMember bool
		want       string // a part of the refusal; "" for none
	}{
		"no claim held, pool member":         {snap: snap(SnapshotTypeFull, nil), poolMember: true},
		"no claim held, another claim":       {snap: snap(SnapshotTypeFull, nil), claim: "bob-uid"},
		"held, a fork":                       {snap: snap(SnapshotTypeFull, alice)},
		"held, the same claim":               {snap: snap(SnapshotTypeFull, alice), claim: "alice-uid"},
		"held, a pool member":                {snap: snap(SnapshotTypeFull, alice), poolMember: true, want: "holds the spec.env and spec.secretFiles of SandboxClaim alice, which a restore would hand to whichever claim takes this warm pool member"},
		"held, another claim":                {snap: snap(SnapshotTypeFull, alice), claim: "bob-uid", want: "SandboxClaim alice, which a restore would hand to this Sandbox's claim"},
		"env only, Full: try Filesystem":     {snap: snap(SnapshotTypeFull, aliceEnv), claim: "bob-uid", want: "or take a Filesystem snapshot"},
		"env only, Filesystem: nothing held": {snap: snap(SnapshotTypeFilesystem, aliceEnv), claim: "bob-uid"},
		"files, Filesystem: held":            {snap: snap(SnapshotTypeFilesystem, alice), poolMember: true, want: "holds the spec.secretFiles of SandboxClaim alice"},
		"unknown claim":                      {snap: snap(SnapshotTypeFull, &SnapshotSourceClaim{Env: true}), claim: "bob-uid", want: "an unknown SandboxClaim"},
	} {
		t.Run(name, func(t *testing.T) {
			got := ClaimSettingsRefusal(tc.snap, tc.claim, tc.poolMember)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("ClaimSettingsRefusal() = %q, want %q", got, tc.want)
			}
		})
	}
}
