package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReplaceTable(t *testing.T) {
	pkgs := []pkg{{dir: "internal/a/", synopsis: "Package a does one thing:"}, {dir: "internal/b/", synopsis: "Package b has a | pipe."}}
	cases := map[string]struct {
		doc     string
		want    string
		wantErr string
	}{
		"the table between the markers is replaced, the rest kept": {
			doc: "intro\n" + begin + "\nold rows\n" + end + "\nafter\n",
			want: "intro\n" + begin + "\n\n| package | its one job (its doc comment) |\n|---|---|\n" +
				"| `internal/a/` | Package a does one thing. |\n| `internal/b/` | Package b has a \\| pipe. |\n\n" + end + "\nafter\n",
		},
		"no markers is an error saying what to add": {doc: "intro\n", wantErr: "no package table markers"},
		"markers out of order are an error":         {doc: end + "\n" + begin + "\n", wantErr: "no package table markers"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := replaceTable([]byte(tc.doc), pkgs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("replaceTable() error = %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("replaceTable() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
