package sandboxclaim

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The generated SandboxClaim CRD and the admission policies, as installed (config/).
var (
	claimCRDFile   = filepath.Join("..", "..", "..", "config", "crd", "bases", "extensions.agents.x-k8s.io_sandboxclaims.yaml")
	admissionFiles = filepath.Join("..", "..", "..", "config", "admission", "*.yaml")
)

// specCheck is one check the API server runs on a SandboxClaimSpec field: a CEL rule of the CRD
// (named by its message) or a ValidatingAdmissionPolicy (named by metadata.name).
type specCheck struct {
	fields []string // the spec fields it checks
	name   string   // the CEL rule's message, or the policy's name
}

// TestClaimFieldsNameTheirCELRules: every CEL rule of the SandboxClaim CRD on a spec field is
// named by that field's claimFields row (cel), and every rule a row names is in the CRD, on that
// field. A row whose later text says CEL names at least one rule, so the table's account of where
// a field is checked is the CRD's.
func TestClaimFieldsNameTheirCELRules(t *testing.T) {
	checkRowsAgainst(t, "cel", crdRules(t), func(f claimField) []string { return f.cel }, "CEL",
		"CEL rule (x-kubernetes-validations) of "+claimCRDFile, "the start of the rule's message")
}

// TestClaimFieldsNameTheirAdmissionPolicies: every ValidatingAdmissionPolicy in config/admission
// that matches sandboxclaims and reads object.spec.<field> is named by that field's row
// (policies), and every policy a row names matches sandboxclaims and reads the field. A row whose
// later text says admission names at least one policy.
func TestClaimFieldsNameTheirAdmissionPolicies(t *testing.T) {
	checkRowsAgainst(t, "policies", claimPolicies(t), func(f claimField) []string { return f.policies }, "admission",
		"ValidatingAdmissionPolicy of "+admissionFiles, "the policy's metadata.name")
}

// checkRowsAgainst compares each row's list of named checks (attr, by named) with the checks the
// API server runs on the row's field (checks). A row whose later text has word must name one.
func checkRowsAgainst(t *testing.T, attr string, checks []specCheck, named func(claimField) []string, word, what, how string) {
	t.Helper()
	if len(checks) == 0 {
		t.Fatalf("found no %s on SandboxClaimSpec fields: the test reads the wrong file", what)
	}
	slices.SortFunc(checks, func(a, b specCheck) int { return strings.Compare(a.name, b.name) })
	for _, f := range claimFields {
		t.Run(f.name, func(t *testing.T) {
			var want []string
			for _, c := range checks {
				if slices.Contains(c.fields, f.name) {
					want = append(want, c.name)
				}
			}
			got := matchNamed(t, f.name, attr, named(f), want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("claimFields row %q does not name every %s on spec.%s (-server +row):\n%s\nfix: list each in the row's %s, by %s",
					f.name, what, f.name, diff, attr, how)
			}
			if strings.Contains(f.later, word) && len(want) == 0 {
				t.Errorf("claimFields row %q: later %q says %s checks spec.%s, but there is no %s on it; fix: correct later",
					f.name, f.later, word, f.name, what)
			}
		})
	}
}

// matchNamed resolves each of a row's names to the one check in want it starts; a name that
// starts none, or more than one, is an error. It returns the checks matched, in want's order.
func matchNamed(t *testing.T, field, attr string, names, want []string) []string {
	t.Helper()
	matched := map[string]bool{}
	for _, n := range names {
		var hits []string
		for _, w := range want {
			if strings.HasPrefix(w, n) {
				hits = append(hits, w)
			}
		}
		if len(hits) != 1 {
			t.Errorf("claimFields row %q: %s entry %q starts %d of the checks on spec.%s, not one: %q; fix: quote the start of exactly one",
				field, attr, n, len(hits), field, want)
			continue
		}
		matched[hits[0]] = true
	}
	var got []string
	for _, w := range want {
		if matched[w] {
			got = append(got, w)
		}
	}
	return got
}

// crdRules returns the CEL rules of the SandboxClaim CRD's spec: those anywhere below a field
// belong to it, those on the spec itself to the fields their rule reads (self.<field>).
func crdRules(t *testing.T) []specCheck {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	readYAML(t, claimCRDFile, &crd)
	var out []specCheck
	for _, v := range crd.Spec.Versions {
		spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
		for _, r := range spec.XValidations {
			out = append(out, specCheck{fields: fieldsRead(r.Rule, "self", spec.Properties), name: r.Message})
		}
		for field, prop := range spec.Properties {
			for _, r := range schemaRules(prop) {
				out = append(out, specCheck{fields: []string{field}, name: r.Message})
			}
		}
	}
	return out
}

// schemaRules returns the CEL rules of s and of every schema below it.
func schemaRules(s apiextensionsv1.JSONSchemaProps) apiextensionsv1.ValidationRules {
	out := slices.Clone(s.XValidations)
	for _, p := range s.Properties {
		out = append(out, schemaRules(p)...)
	}
	if s.Items != nil && s.Items.Schema != nil {
		out = append(out, schemaRules(*s.Items.Schema)...)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		out = append(out, schemaRules(*s.AdditionalProperties.Schema)...)
	}
	return out
}

// claimPolicies returns the admission policies that match sandboxclaims, each with the spec
// fields its expressions read (object.spec.<field>).
func claimPolicies(t *testing.T) []specCheck {
	t.Helper()
	files, err := filepath.Glob(admissionFiles)
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]apiextensionsv1.JSONSchemaProps{}
	for _, f := range claimFields {
		fields[f.name] = apiextensionsv1.JSONSchemaProps{}
	}
	var out []specCheck
	for _, file := range files {
		for _, p := range admissionPolicies(t, file) {
			if !matchesClaims(p) {
				continue
			}
			var exprs []string
			for _, c := range p.Spec.MatchConditions {
				exprs = append(exprs, c.Expression)
			}
			for _, v := range p.Spec.Variables {
				exprs = append(exprs, v.Expression)
			}
			for _, v := range p.Spec.Validations {
				exprs = append(exprs, v.Expression, v.MessageExpression)
			}
			out = append(out, specCheck{fields: fieldsRead(strings.Join(exprs, "\n"), "object.spec", fields), name: p.Name})
		}
	}
	return out
}

// admissionPolicies returns the ValidatingAdmissionPolicies among file's YAML documents.
func admissionPolicies(t *testing.T, file string) []admissionregistrationv1.ValidatingAdmissionPolicy {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []admissionregistrationv1.ValidatingAdmissionPolicy
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var p admissionregistrationv1.ValidatingAdmissionPolicy
		if err := yaml.Unmarshal(doc, &p); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if p.Kind == "ValidatingAdmissionPolicy" {
			out = append(out, p)
		}
	}
	return out
}

// matchesClaims reports whether the policy matches SandboxClaims.
func matchesClaims(p admissionregistrationv1.ValidatingAdmissionPolicy) bool {
	if p.Spec.MatchConstraints == nil {
		return false
	}
	for _, r := range p.Spec.MatchConstraints.ResourceRules {
		if slices.Contains(r.APIGroups, "extensions.agents.x-k8s.io") && slices.Contains(r.Resources, "sandboxclaims") {
			return true
		}
	}
	return false
}

// fieldsRead returns the fields (keys of props) that expr reads as prefix.<field>, sorted.
func fieldsRead(expr, prefix string, props map[string]apiextensionsv1.JSONSchemaProps) []string {
	re := regexp.MustCompile(`(?:^|[^A-Za-z0-9_.])` + regexp.QuoteMeta(prefix) + `\.([A-Za-z0-9_]+)`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(expr, -1) {
		if _, ok := props[m[1]]; ok && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return out
}

func readYAML(t *testing.T, file string, into any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("reading %s: %v; run make manifests", file, err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// TestFieldsRead is the matcher that ties a spec-level rule or a policy to the fields it reads.
func TestFieldsRead(t *testing.T) {
	props := map[string]apiextensionsv1.JSONSchemaProps{"warmPoolRef": {}, "sandboxTemplateRef": {}, "env": {}}
	cases := map[string]struct {
		expr, prefix string
		want         []string
	}{
		"a union":                 {"has(self.warmPoolRef) != has(self.sandboxTemplateRef)", "self", []string{"sandboxTemplateRef", "warmPoolRef"}},
		"a field read twice":      {"self.env.all(x, self.env.exists_one(y, y == x))", "self", []string{"env"}},
		"not a spec field":        {"self.metadata.name", "self", nil},
		"a longer name's prefix":  {"myself.env", "self", nil},
		"below the prefix only":   {"has(object.spec.env) && oldObject.spec.warmPoolRef", "object.spec", []string{"env"}},
		"a field of a variable":   {"variables.spec.env", "object.spec", nil},
		"no field":                {"size(variables.gained) == 0", "object.spec", nil},
		"across lines of a group": {"object.metadata.name\nobject.spec.sandboxTemplateRef", "object.spec", []string{"sandboxTemplateRef"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, fieldsRead(tc.expr, tc.prefix, props)); diff != "" {
				t.Errorf("fieldsRead(%q, %q) (-want +got):\n%s", tc.expr, tc.prefix, diff)
			}
		})
	}
}
