package sandboxsnapshot

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCopyNodes: status.nodes keeps the nodes recorded so far and adds those of the Pods
// restored from the snapshot, each once and sorted, without the nodes that are gone, and never
// more than the API's MaxItems (those recorded first).
func TestCopyNodes(t *testing.T) {
	many := make([]string, maxNodes)
	for i := range many {
		many[i] = fmt.Sprintf("n%02d", i)
	}
	cases := map[string]struct {
		recorded, restored []string
		gone               map[string]bool
		want               []string
	}{
		"the node that took it":        {recorded: []string{"a"}, want: []string{"a"}},
		"a node that fetched a copy":   {recorded: []string{"b"}, restored: []string{"a"}, want: []string{"a", "b"}},
		"several Pods on one node":     {recorded: []string{"a"}, restored: []string{"c", "c", "a"}, want: []string{"a", "c"}},
		"a node whose Pod went stays":  {recorded: []string{"a", "c"}, want: []string{"a", "c"}},
		"a node that is gone":          {recorded: []string{"a", "b"}, restored: []string{"c"}, gone: map[string]bool{"a": true, "c": true}, want: []string{"b"}},
		"every node gone":              {recorded: []string{"a"}, gone: map[string]bool{"a": true}},
		"no more than MaxItems":        {recorded: many, restored: []string{"zz"}, want: many},
		"an unbound Pod names no node": {recorded: []string{"a"}, restored: []string{""}, want: []string{"a"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, copyNodes(tc.recorded, tc.restored, tc.gone)); diff != "" {
				t.Errorf("status.nodes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRecheckCopies: a Ready snapshot is looked at again by copiesRecheck at the latest, sooner
// when its retention needs it.
func TestRecheckCopies(t *testing.T) {
	cases := map[string]struct{ next, want time.Duration }{
		"no maxAge":        {next: 0, want: copiesRecheck},
		"a maxAge sooner":  {next: time.Minute, want: time.Minute},
		"a maxAge later":   {next: 24 * time.Hour, want: copiesRecheck},
		"a maxAge exactly": {next: copiesRecheck, want: copiesRecheck},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := recheckCopies(tc.next); got != tc.want {
				t.Errorf("recheckCopies(%s) = %s, want %s", tc.next, got, tc.want)
			}
		})
	}
}
