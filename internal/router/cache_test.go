package router

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// TestTrimClaimKeepsWhatTakesSettingsReads: the router's cache keeps of a claim exactly what
// api/'s rule reads (SandboxClaimSpec.SettingsInputs), so the router's "does this claim take
// settings" is the rule's answer, never a hand-kept copy of its fields.
func TestTrimClaimKeepsWhatTakesSettingsReads(t *testing.T) {
	secret := extv1beta1.SecretFile{SecretName: "tok", MountPath: "/run/kubox/secrets"}
	cases := map[string]struct {
		spec extv1beta1.SandboxClaimSpec
	}{
		"nothing":           {},
		"env only":          {spec: extv1beta1.SandboxClaimSpec{Env: []extv1beta1.EnvVar{{Name: "A", Value: "secret-value"}}}},
		"secret files only": {spec: extv1beta1.SandboxClaimSpec{SecretFiles: []extv1beta1.SecretFile{secret}}},
		"both": {spec: extv1beta1.SandboxClaimSpec{Env: []extv1beta1.EnvVar{{Name: "A", Value: "v"}, {Name: "B"}},
			SecretFiles: []extv1beta1.SecretFile{secret}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			claim := &extv1beta1.SandboxClaim{Spec: tc.spec}
			out, err := trimClaim(claim)
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*extv1beta1.SandboxClaim).Spec
			if diff := cmp.Diff(tc.spec.SettingsInputs(), got); diff != "" {
				t.Errorf("trimClaim kept other than SettingsInputs (-want +got):\n%s", diff)
			}
			for _, warm := range []bool{false, true} {
				if want, got := tc.spec.TakesSettings(warm), got.TakesSettings(warm); got != want {
					t.Errorf("TakesSettings(warm=%v) of the cached claim = %v, of the claim %v", warm, got, want)
				}
			}
			for _, e := range got.Env {
				if e.Value != "" {
					t.Errorf("the cache holds the value of env %s", e.Name)
				}
			}
		})
	}
}

// TestCachedClaimTakesSettingsAsTheRule: for a claim and its sandbox as the router's cache holds
// them (trimmed), "does this claim take settings" answers what it answers for the objects the API
// server holds; a warm sandbox whose claim sets env only must still be waited for after a wake.
func TestCachedClaimTakesSettingsAsTheRule(t *testing.T) {
	env := extv1beta1.SandboxClaimSpec{Env: []extv1beta1.EnvVar{{Name: "TOKEN", Value: "v"}}}
	cases := map[string]struct {
		labels map[string]string
		spec   extv1beta1.SandboxClaimSpec
	}{
		"warm, env only": {labels: map[string]string{sandboxv1beta1.LaunchTypeLabel: extv1beta1.LaunchTypeWarm}, spec: env},
		"cold, env only": {labels: map[string]string{sandboxv1beta1.LaunchTypeLabel: "cold"}, spec: env},
		"no label":       {spec: env},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb := &sandboxv1beta1.Sandbox{}
			sb.Labels = tc.labels
			claim := &extv1beta1.SandboxClaim{Spec: tc.spec}
			want := claim.Spec.TakesSettings(extv1beta1.LaunchedWarm(sb.Labels))
			cachedSb, _ := trimSandbox(sb)
			cachedClaim, _ := trimClaim(claim)
			got := cachedClaim.(*extv1beta1.SandboxClaim).Spec.TakesSettings(extv1beta1.LaunchedWarm(cachedSb.(*sandboxv1beta1.Sandbox).Labels))
			if got != want {
				t.Errorf("TakesSettings on the cached claim and sandbox = %v; on the API server's objects %v", got, want)
			}
		})
	}
}
