package sandboxclaim

import (
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

// warmFit says how a warm member can serve a claim that sets a field.
type warmFit string

const (
	// fitsAnyMember: the field never keeps a claim from a warm member.
	fitsAnyMember warmFit = "any warm member"
	// fitsByAgent: a warm member fits when its agent can deliver the field (fitsWarm decides).
	fitsByAgent warmFit = "delivered to a warm member by the agent"
	// fitsConditional: a warm member fits when the template already covers the field (fitsWarm decides).
	fitsConditional warmFit = "warm when the template covers it"
	// needsCold: a claim that sets the field is always served by a sandbox created cold.
	needsCold warmFit = "needs a sandbox created cold"
)

// claimField is one row of claimFields: what the controller checks for one SandboxClaimSpec field.
type claimField struct {
	// name is the field's json name in SandboxClaimSpec.
	name string
	// warm is how a warm member can serve a claim that sets the field.
	warm warmFit
	// fitsWarm reports whether a warm member of tpl's pool can serve spec's value of the field.
	// nil means the answer is fixed by warm: true for fitsAnyMember, false for needsCold when set.
	fitsWarm func(spec *extv1beta1.SandboxClaimSpec, tpl *extv1beta1.SandboxTemplate) bool
	// validate checks the field against the template before any sandbox is chosen. nil: the CRD's
	// CEL rules and admission policies are the whole check, or it is checked where the cold
	// sandbox is built (see later).
	validate func(spec *extv1beta1.SandboxClaimSpec, tpl *extv1beta1.SandboxTemplate, domains metadataDomains) *failure
	// later names where the field is checked when it is not checked by validate.
	later string
}

// claimFields has one row per SandboxClaimSpec field, in declaration order.
// TestClaimFieldsCoverSpec fails when a field has no row: a new field must say whether a warm
// member can serve it, and what is checked against the template, before it can ship.
var claimFields = []claimField{
	{name: "warmPoolRef", warm: fitsAnyMember, later: "CEL: exactly one of warmPoolRef and sandboxTemplateRef; resolveSource"},
	{name: "sandboxTemplateRef", warm: fitsAnyMember, later: "CEL: exactly one of warmPoolRef and sandboxTemplateRef; resolveSource"},
	{name: "lifecycle", warm: fitsAnyMember, later: "CEL and the claim's expiry handling"},
	{name: "additionalPodMetadata", warm: fitsAnyMember,
		validate: func(s *extv1beta1.SandboxClaimSpec, tpl *extv1beta1.SandboxTemplate, d metadataDomains) *failure {
			return validateAdditionalPodMetadata(s.AdditionalPodMetadata, tpl, d)
		}},
	{name: "env", warm: fitsByAgent,
		fitsWarm: func(s *extv1beta1.SandboxClaimSpec, tpl *extv1beta1.SandboxTemplate) bool {
			return envFitsWarm(s.Env, tpl)
		},
		later: "mergeEnv, when the cold sandbox is built (envVarsInjectionPolicy)"},
	{name: "volumeClaimTemplates", warm: needsCold,
		fitsWarm: func(s *extv1beta1.SandboxClaimSpec, _ *extv1beta1.SandboxTemplate) bool {
			return len(s.VolumeClaimTemplates) == 0
		},
		later: "validateClaimVolumes, when the cold sandbox is built"},
	{name: "secretFiles", warm: fitsByAgent,
		validate: func(s *extv1beta1.SandboxClaimSpec, tpl *extv1beta1.SandboxTemplate, _ metadataDomains) *failure {
			return validateSecretFiles(s.SecretFiles, tpl)
		}},
	{name: "idlePolicy", warm: fitsAnyMember, later: "CEL"},
	{name: "egress", warm: fitsConditional,
		fitsWarm: func(s *extv1beta1.SandboxClaimSpec, tpl *extv1beta1.SandboxTemplate) bool {
			return egressFitsWarm(s.Egress, tpl)
		},
		validate: func(s *extv1beta1.SandboxClaimSpec, tpl *extv1beta1.SandboxTemplate, _ metadataDomains) *failure {
			return validateEgress(s.Egress, tpl)
		}},
	{name: "snapshotRef", warm: fitsConditional,
		fitsWarm: func(s *extv1beta1.SandboxClaimSpec, tpl *extv1beta1.SandboxTemplate) bool {
			return snapshotFitsWarm(s.SnapshotRef, tpl)
		},
		validate: func(s *extv1beta1.SandboxClaimSpec, tpl *extv1beta1.SandboxTemplate, _ metadataDomains) *failure {
			return validateSnapshotRef(s.SnapshotRef, tpl)
		}},
}

// validateClaimFields runs each row's check against the template, in field order, and returns
// the first failure.
func validateClaimFields(spec *extv1beta1.SandboxClaimSpec, tpl *extv1beta1.SandboxTemplate, domains metadataDomains) *failure {
	for _, f := range claimFields {
		if f.validate == nil {
			continue
		}
		if fl := f.validate(spec, tpl, domains); fl != nil {
			return fl
		}
	}
	return nil
}

// claimFitsWarm reports whether a warm member of tpl's pool can serve the claim: every row must fit.
func claimFitsWarm(spec *extv1beta1.SandboxClaimSpec, tpl *extv1beta1.SandboxTemplate) bool {
	for _, f := range claimFields {
		if f.fitsWarm != nil && !f.fitsWarm(spec, tpl) {
			return false
		}
	}
	return true
}
