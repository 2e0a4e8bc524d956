package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// goClaimOption is one call of a Go SDK function that returns a ClaimSource or a ClaimOption,
// with values that set everything it can set.
type goClaimOption struct {
	src *kubox.ClaimSource
	opt kubox.ClaimOption
	// noClaim says why the option does not change the claim (it is not a claim option).
	noClaim string
}

func source(s kubox.ClaimSource) *kubox.ClaimSource { return &s }

// goClaimOptions has a call of every exported function of sdk/go/kubox that returns a
// ClaimSource or a ClaimOption; TestGoClaimOptionsAreComplete fails when the SDK gains one that
// is not here.
var goClaimOptions = map[string]goClaimOption{
	"FromPool":           {src: source(kubox.FromPool("p"))},
	"FromTemplate":       {src: source(kubox.FromTemplate("other"))},
	"WithName":           {opt: kubox.WithName("n")},
	"InNamespace":        {opt: kubox.InNamespace("elsewhere")},
	"WithTTL":            {opt: kubox.WithTTL(time.Hour)},
	"WithEnv":            {opt: kubox.WithEnv(map[string]string{"A": "1"})},
	"WithLabels":         {opt: kubox.WithLabels(map[string]string{"a": "b"})},
	"WithPodLabels":      {opt: kubox.WithPodLabels(map[string]string{"a": "b"})},
	"WithPodAnnotations": {opt: kubox.WithPodAnnotations(map[string]string{"a": "b"})},
	"WithSuspendAfter":   {opt: kubox.WithSuspendAfter(time.Minute)},
	"WithIdlePolicy": {opt: kubox.WithIdlePolicy(sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: time.Minute},
		RunningProcesses: sandboxv1beta1.IdleProcessPolicyIgnore, Wake: sandboxv1beta1.WakePolicyManual})},
	"WithEgress": {opt: kubox.WithEgress(sandboxv1beta1.EgressRestriction{AllowDomains: []string{"a.test"},
		DenyDomains: []string{"b.test"}, DenyCIDRs: []string{"192.0.2.0/24"},
		Credentials: []sandboxv1beta1.EgressCredential{{Domains: []string{"a.test"}}}})},
	"WithAllowDomains": {opt: kubox.WithAllowDomains("a.test")},
	"WithSnapshot":     {opt: kubox.WithSnapshot("s")},
	"WithProgress": {opt: kubox.WithProgress(func(*extv1beta1.SandboxClaim) {}),
		noClaim: "Claim and Connect call it while they wait"},
}

// goOnlyFields are claim paths the Go SDK can set that no claimCases case sets, each with why: a
// case must be built by every SDK, and the Python and TypeScript SDKs have no option for these.
var goOnlyFields = map[string]string{
	"spec.egress.credentials": "WithEgress takes the API's EgressRestriction whole; the Python and TypeScript SDKs offer allowDomains, denyDomains and denyCIDRs only",
}

// TestGoClaimOptionsAreComplete: goClaimOptions has every exported function of the Go SDK that
// returns a ClaimSource or a ClaimOption, so the tests below see every way it builds a claim.
func TestGoClaimOptionsAreComplete(t *testing.T) {
	declared := claimOptionFuncs(t, "../../sdk/go/kubox")
	if diff := cmp.Diff(declared, slices.Sorted(maps.Keys(goClaimOptions))); diff != "" {
		t.Errorf("the Go SDK's claim sources and options (-declared in sdk/go/kubox +goClaimOptions):\n%s\nfix: add a call of the new function to goClaimOptions in hack/vectors/claims_test.go", diff)
	}
}

// TestEveryGoClaimOptionHasACase: every Go SDK option that changes the claim is called by a case
// of claimCases, so the Python and TypeScript SDKs are checked against it.
func TestEveryGoClaimOptionHasACase(t *testing.T) {
	v, err := claimBuildVectors()
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range goClaimOptions {
		t.Run(name, func(t *testing.T) {
			changes := len(goClaimPaths(o)) > 0
			if o.noClaim != "" {
				if changes {
					t.Errorf("goClaimOptions[%q] says %q but the option changes the claim; fix: drop noClaim and add a case to claimCases", name, o.noClaim)
				}
				return
			}
			if !changes {
				t.Fatalf("goClaimOptions[%q] changes nothing of the claim built without options; fix: call it with values that set what it sets, or say why in noClaim", name)
			}
			if !slices.ContainsFunc(v.Cases, func(c ClaimCase) bool { return calls(c, name) }) {
				t.Errorf("the Go SDK's %s changes the claim (%v) but no case of claimCases calls it; fix: add a case that uses it to claimCases in hack/vectors/claims.go (and its option to the Python and TypeScript vector tests), then make vectors",
					name, goClaimPaths(o))
			}
		})
	}
}

// TestEverySettableFieldHasACase: every claim field the Go SDK can set (as deep as
// spec.<field>.<field>) is set by a case of claimCases, unless goOnlyFields says why not, so a new
// claim field an SDK can set reaches the Python and TypeScript SDKs' tests.
func TestEverySettableFieldHasACase(t *testing.T) {
	v, err := claimBuildVectors()
	if err != nil {
		t.Fatal(err)
	}
	inCases := map[string]bool{}
	for _, c := range v.Cases {
		for _, p := range objectPaths(c.Claim, "", 3) {
			inCases[p] = true
		}
	}
	settable := map[string][]string{}
	for name, o := range goClaimOptions {
		for _, p := range goClaimPaths(o) {
			settable[p] = append(settable[p], name)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(settable)) {
		why, goOnly := goOnlyFields[p]
		switch {
		case goOnly && inCases[p]:
			t.Errorf("%s is in goOnlyFields (%s) but a case sets it; fix: drop it from goOnlyFields", p, why)
		case !goOnly && !inCases[p]:
			t.Errorf("%s (SandboxClaimSpec field %q, a claimFields row) can be set by the Go SDK (%s) but no case of claimCases sets it; fix: add a case that sets it to claimCases in hack/vectors/claims.go, then make vectors",
				p, specField(p), strings.Join(slices.Sorted(slices.Values(settable[p])), ", "))
		}
	}
	for p := range goOnlyFields {
		if settable[p] == nil {
			t.Errorf("goOnlyFields has %s, which no Go SDK option sets; fix: drop it", p)
		}
	}
	for _, f := range specFields() {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(settable)), func(p string) bool { return specField(p) == f }) {
			t.Logf("SandboxClaimSpec field %q: no Go SDK option sets it", f)
		}
	}
}

// baseSource is the source of the claim an option is compared with.
var baseSource = kubox.FromTemplate("t")

// buildGoClaim builds a claim with the Go SDK from o (and baseSource when o has no source).
func buildGoClaim(o goClaimOption) map[string]any {
	src, opts := baseSource, []kubox.ClaimOption{}
	if o.src != nil {
		src = *o.src
	}
	if o.opt != nil {
		opts = append(opts, o.opt)
	}
	return jsonObject(kubox.BuildClaim("default", src, now, opts...))
}

// goClaimPaths are the claim's paths (to depth three: spec.egress.allowDomains) whose value o
// changes from the claim built without options.
func goClaimPaths(o goClaimOption) []string {
	base, got := buildGoClaim(goClaimOption{}), buildGoClaim(o)
	var out []string
	for _, p := range slices.Concat(objectPaths(got, "", 3), objectPaths(base, "", 3)) {
		if !slices.Contains(out, p) && !reflect.DeepEqual(lookup(got, p), lookup(base, p)) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// objectPaths are the dotted paths of obj's values, descending into objects up to depth.
func objectPaths(obj map[string]any, prefix string, depth int) []string {
	var out []string
	for k, v := range obj {
		p := strings.TrimPrefix(prefix+"."+k, ".")
		if m, ok := v.(map[string]any); ok && depth > 1 && p != "metadata.labels" && p != "metadata.annotations" {
			out = append(out, objectPaths(m, p, depth-1)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// lookup returns obj's value at the dotted path p, or nil.
func lookup(obj map[string]any, p string) any {
	var v any = obj
	for _, k := range strings.Split(p, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// specField is the SandboxClaimSpec field of path p ("spec.egress.allowDomains": "egress"), or "".
func specField(p string) string {
	parts := strings.Split(p, ".")
	if len(parts) < 2 || parts[0] != "spec" {
		return ""
	}
	return parts[1]
}

// specFields are SandboxClaimSpec's json field names, the rows of claimFields.
func specFields() []string {
	var out []string
	st := reflect.TypeOf(extv1beta1.SandboxClaimSpec{})
	for i := range st.NumField() {
		out = append(out, strings.Split(st.Field(i).Tag.Get("json"), ",")[0])
	}
	return out
}

// calls reports whether case c calls the Go SDK's function name.
func calls(c ClaimCase, name string) bool {
	return slices.ContainsFunc(c.Go, func(call string) bool { return strings.HasPrefix(call, name+"(") })
}

// claimOptionFuncs returns the exported functions of the package in dir (test files aside) that
// return one ClaimSource or ClaimOption, sorted.
func claimOptionFuncs(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || fn.Type.Results == nil || len(fn.Type.Results.List) != 1 {
				continue
			}
			if id, ok := fn.Type.Results.List[0].Type.(*ast.Ident); ok && (id.Name == "ClaimSource" || id.Name == "ClaimOption") {
				out = append(out, fn.Name.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}
