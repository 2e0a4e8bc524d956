package v1beta1

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// SnapshotSourceClaim is the SandboxClaim whose own settings a SandboxSnapshot's sandbox held.
// kubox addition.
type SnapshotSourceClaim struct {
	// name of the claim; empty when it is not known (the snapshot the sandbox started from was
	// gone when this one was taken).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// uid of the claim; empty when it is not known.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	UID string `json:"uid,omitempty"`

	// env is true when the claim set spec.env: its values are in the memory of the sandbox's
	// processes, which a Full snapshot holds.
	// +optional
	Env bool `json:"env,omitempty"`

	// secretFiles is true when the claim set spec.secretFiles: their contents are files in the
	// sandbox, which snapshots of both types hold.
	// +optional
	SecretFiles bool `json:"secretFiles,omitempty"`
}

// ClaimSettingsHeld lists the settings of status.sourceClaim that a sandbox started from s gets:
// spec.env from a Full snapshot (in its processes' memory), spec.secretFiles from either type (in
// its files). Empty when s holds no claim's settings.
func (s *SandboxSnapshot) ClaimSettingsHeld() []string {
	c := s.Status.SourceClaim
	if c == nil {
		return nil
	}
	var held []string
	if c.Env && !s.FilesystemOnly() {
		held = append(held, "spec.env")
	}
	if c.SecretFiles {
		held = append(held, "spec.secretFiles")
	}
	return held
}

// ClaimSettingsRefusal says why a Sandbox may not start from s, or "" when it may. claimUID is
// the claim the Sandbox serves ("" for none) and poolMember whether it is an unclaimed warm pool
// member, which serves whichever claim takes it. A snapshot that holds a claim's settings
// (ClaimSettingsHeld) serves that claim only, and Sandboxes of no claim (forks, made by whoever
// may use the snapshot); so a restore never hands one claim's env, secret files or what its
// sandbox made of them to another claim. The message names the snapshot, the claim and the fix.
func ClaimSettingsRefusal(s *SandboxSnapshot, claimUID types.UID, poolMember bool) string {
	held := s.ClaimSettingsHeld()
	src := s.Status.SourceClaim
	if len(held) == 0 || !poolMember && (claimUID == "" || string(claimUID) == src.UID) {
		return ""
	}
	whose := "an unknown SandboxClaim (the snapshot its sandbox started from was gone)"
	if src.Name != "" {
		whose = "SandboxClaim " + src.Name
	}
	who := "this Sandbox's claim"
	if poolMember {
		who = "whichever claim takes this warm pool member"
	}
	alt := ""
	if !slices.Contains(held, "spec.secretFiles") {
		alt = ", or take a Filesystem snapshot (it holds no process memory)"
	}
	return fmt.Sprintf("SandboxSnapshot %s holds the %s of %s, which a restore would hand to %s: snapshot a sandbox that serves "+
		"no claim with spec.env or spec.secretFiles (such as a warm pool member before it is claimed)%s, and name that snapshot instead",
		s.Name, strings.Join(held, " and "), whose, who, alt)
}
