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
	// cel names, each by the start of its message, the CEL rules of the CRD (x-kubernetes-validations)
	// on the field or, for a rule on the whole spec, reading it. TestClaimFieldsNameTheirCELRules
	// fails when this list and the generated CRD disagree.
	cel []string
	// policies names the ValidatingAdmissionPolicies (config/admission) that check the field on
	// claims. TestClaimFieldsNameTheirAdmissionPolicies fails when this list and config disagree.
	policies []string
}

// claimFields has one row per SandboxClaimSpec field, in declaration order.
// TestClaimFieldsCoverSpec fails when a field has no row: a new field must say whether a warm
// member can serve it, and what is checked against the template, before it can ship.
var claimFields = []claimField{
	{name: "warmPoolRef", warm: fitsAnyMember, later: "CEL: exactly one of warmPoolRef and sandboxTemplateRef; resolveSource",
		cel: []string{"exactly one of spec.warmPoolRef and spec.sandboxTemplateRef", "warmPoolRef.name must be"}},
	{name: "sandboxTemplateRef", warm: fitsAnyMember, later: "CEL: exactly one of warmPoolRef and sandboxTemplateRef; resolveSource",
		cel: []string{"exactly one of spec.warmPoolRef and spec.sandboxTemplateRef", "sandboxTemplateRef.name must be"}},
	{name: "lifecycle", warm: fitsAnyMember, later: "the CRD's schema (enum, minimum) and the claim's expiry handling (lifecycle.go)"},
	{name: "additionalPodMetadata", warm: fitsAnyMember,
		cel: []string{"additionalPodMetadata.annotations keys must be qualified names", "additionalPodMetadata.annotations must not use reserved keys",
			"additionalPodMetadata.labels keys must be qualified names", "additionalPodMetadata.labels must not use reserved keys"},
		policies: []string{"kubox-claim-restore-annotations"},
		validate: func(s *extv1beta1.SandboxClaimSpec, tpl *extv1beta1.SandboxTemplate, d metadataDomains) *failure {
			return validateAdditionalPodMetadata(s.AdditionalPodMetadata, tpl, d)
		}},
	{name: "env", warm: fitsByAgent,
		cel: []string{"env[].containerName must be a container name", "env[].name must be unique", "env[].name must consist of printable"},
		fitsWarm: func(s *extv1beta1.SandboxClaimSpec, tpl *extv1beta1.SandboxTemplate) bool {
			return envFitsWarm(s.Env, tpl)
		},
		later: "mergeEnv, when the cold sandbox is built (envVarsInjectionPolicy)"},
	{name: "volumeClaimTemplates", warm: needsCold,
		cel: []string{"volumeClaimTemplates[].metadata.name is required", "volumeClaimTemplates[].metadata.name must be unique",
			"volumeClaimTemplates[].spec.dataSource must not", "volumeClaimTemplates[].spec.dataSourceRef must not",
			"volumeClaimTemplates[].spec.selector must not", "volumeClaimTemplates[].spec.volumeAttributesClassName must not",
			"volumeClaimTemplates[].spec.volumeName must not"},
		fitsWarm: func(s *extv1beta1.SandboxClaimSpec, _ *extv1beta1.SandboxTemplate) bool {
			return len(s.VolumeClaimTemplates) == 0
		},
		later: "validateClaimVolumes, when the cold sandbox is built"},
	{name: "secretFiles", warm: fitsByAgent,
		cel:      []string{"secretFiles[].mountPath must be an absolute", "secretFiles[].mountPath must be unique"},
		policies: []string{"kubox-claim-secret-files"},
		validate: func(s *extv1beta1.SandboxClaimSpec, tpl *extv1beta1.SandboxTemplate, _ metadataDomains) *failure {
			return validateSecretFiles(s.SecretFiles, tpl)
		}},
	{name: "idlePolicy", warm: fitsAnyMember, later: "CEL", cel: []string{"idlePolicy.suspendAfter must be between"}},
	{name: "egress", warm: fitsConditional,
		cel: []string{"egress.credentials[].domains must each be covered", "egress.credentials[].header must not be",
			"egress.denyCIDRs must be CIDRs"},
		policies: []string{"kubox-egress-credentials"},
		fitsWarm: func(s *extv1beta1.SandboxClaimSpec, tpl *extv1beta1.SandboxTemplate) bool {
			return egressFitsWarm(s.Egress, tpl)
		},
		validate: func(s *extv1beta1.SandboxClaimSpec, tpl *extv1beta1.SandboxTemplate, _ metadataDomains) *failure {
			return validateEgress(s.Egress, tpl)
		}},
	{name: "snapshotRef", warm: fitsConditional, policies: []string{"kubox-snapshot-ref"},
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
