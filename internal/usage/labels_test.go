package usage

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBoundedCollapsesBeyondLimit(t *testing.T) {
	cases := map[string]struct {
		limit int
		in    []string
		want  []string
	}{
		"under the limit keeps values": {limit: 3, in: []string{"a", "b", "a"}, want: []string{"a", "b", "a"}},
		"beyond the limit collapses new values": {limit: 2, in: []string{"a", "b", "c", "a", "d"},
			want: []string{"a", "b", OtherLabel, "a", OtherLabel}},
		"empty is unknown and does not use a slot": {limit: 1, in: []string{"", "a", "b"},
			want: []string{UnknownLabel, "a", OtherLabel}},
		"a tenant cannot claim the other bucket's name": {limit: 5, in: []string{OtherLabel, UnknownLabel},
			want: []string{OtherLabel, UnknownLabel}},
		"over-long values collapse": {limit: 5, in: []string{strings.Repeat("x", 64)}, want: []string{OtherLabel}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := NewBounded(tc.limit)
			var got []string
			for _, v := range tc.in {
				got = append(got, b.Value(v))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBoundedAttackManyPrincipals: a tenant who sets a new principal label on every sandbox
// cannot grow the metric's series beyond the bound.
func TestBoundedAttackManyPrincipals(t *testing.T) {
	b := NewBounded(10)
	seen := map[string]bool{}
	for i := range 10000 {
		seen[b.Value("attacker-"+strings.Repeat("a", i%50)+string(rune('a'+i%26)))] = true
	}
	if len(seen) > 11 {
		t.Fatalf("%d distinct label values, want at most 11 (10 + other)", len(seen))
	}
}

func TestJSONLinesWritesOneObjectPerLine(t *testing.T) {
	var buf bytes.Buffer
	s := JSONLines{W: &buf}
	recs := []Record{{Schema: SchemaVersion, Name: "a<b"}, {Schema: SchemaVersion, Name: "c"}}
	if err := s.Write(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"name":"a<b"`) {
		t.Errorf("got %q, want two lines, the first with an unescaped name", buf.String())
	}
}
