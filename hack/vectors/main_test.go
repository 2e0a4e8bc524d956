package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestVectorsAreCurrent: the committed vector file is what api/ and the Go SDK generate now, so
// the Python and TypeScript SDKs are tested against the rules as they are.
func TestVectorsAreCurrent(t *testing.T) {
	want, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", Path))
	if err != nil {
		t.Fatalf("reading the vectors: %v; run make vectors", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s is stale; run make vectors and commit it (-generated +committed):\n%s", Path, diff)
	}
}

// TestReasonListsAreComplete: the readiness vectors cover every reason of the claim's and the
// Sandbox's Ready condition, as declared in the const blocks that conditions.go documents as
// such, so a reason added there enters the vectors (and its rule is decided) here.
func TestReasonListsAreComplete(t *testing.T) {
	cases := map[string]struct {
		file, block string
		listed      []string
	}{
		"claim":   {"../../api/extensions/v1beta1/conditions.go", "Reasons of a SandboxClaim's Ready condition", claimReadyReasons},
		"sandbox": {"../../api/v1beta1/conditions.go", "Reasons of the Ready condition", sandboxReadyReasons},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			declared := constBlockValues(t, tc.file, tc.block)
			if len(declared) == 0 {
				t.Fatalf("%s has no const block documented %q", tc.file, tc.block)
			}
			if diff := cmp.Diff(sorted(declared), sorted(tc.listed)); diff != "" {
				t.Errorf("the reasons of %s (-declared +listed in hack/vectors):\n%s", tc.file, diff)
			}
		})
	}
}

// constBlockValues returns the string values of the const block of file whose doc comment starts
// with doc.
func constBlockValues(t *testing.T, file, doc string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST || g.Doc == nil || !strings.HasPrefix(g.Doc.Text(), doc) {
			continue
		}
		for _, spec := range g.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					out = append(out, s)
				}
			}
		}
	}
	return out
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
