package cli

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestAPIFix: the fix named for a failed Node patch is the RBAC rule only when the API server
// said Forbidden; a Pod that cannot reach the API server is told that, not to change its RBAC.
func TestAPIFix(t *testing.T) {
	cases := map[string]struct {
		err     error
		want    string
		mustNot string
	}{
		"forbidden": {
			err:     apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("no")),
			want:    "ClusterRole must allow patching nodes/status (config/node/rbac.yaml)",
			mustNot: "reach the API server",
		},
		"connection refused": {
			err:     errors.New(`Patch "https://127.0.0.1:16443/api/v1/nodes/n1": dial tcp 127.0.0.1:16443: connect: connection refused`),
			want:    "reach the API server",
			mustNot: "ClusterRole",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := apiFix(tc.err, "nodes/status")
			if !strings.Contains(got, tc.want) || strings.Contains(got, tc.mustNot) {
				t.Errorf("apiFix(%v) = %q, want it to contain %q and not %q", tc.err, got, tc.want, tc.mustNot)
			}
		})
	}
}
