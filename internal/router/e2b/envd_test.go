package e2b

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubox-dev/kubox/api/contract"
)

// TestSandboxCredentials: what a request for a sandbox host is authorized by, and what of the
// caller's credentials is left on it. The traffic access token (@e2b/code-interpreter's context
// calls) stands in for X-Access-Token only where that is absent, and neither is forwarded.
func TestSandboxCredentials(t *testing.T) {
	for name, tc := range map[string]struct {
		in   map[string]string
		want http.Header
	}{
		"envd access token": {
			in:   map[string]string{contract.E2BAccessTokenHeader: "claim", "Authorization": "Basic dXNlcjo="},
			want: http.Header{"Authorization": {"Bearer claim"}},
		},
		"traffic access token alone": {
			in:   map[string]string{contract.E2BTrafficAccessTokenHeader: "claim"},
			want: http.Header{"Authorization": {"Bearer claim"}},
		},
		"envd access token wins over the traffic one": {
			in:   map[string]string{contract.E2BAccessTokenHeader: "mine", contract.E2BTrafficAccessTokenHeader: "other"},
			want: http.Header{"Authorization": {"Bearer mine"}},
		},
		"traffic access token over a bearer token": {
			in:   map[string]string{contract.E2BTrafficAccessTokenHeader: "claim", "Authorization": "Bearer kube"},
			want: http.Header{"Authorization": {"Bearer claim"}},
		},
		"an empty traffic access token is no credential": {
			in:   map[string]string{contract.E2BTrafficAccessTokenHeader: "", "Authorization": "Bearer kube"},
			want: http.Header{"Authorization": {"Bearer kube"}},
		},
		"Basic user header alone": {
			in:   map[string]string{"Authorization": "Basic dXNlcjo="},
			want: http.Header{},
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/contexts", nil)
			for k, v := range tc.in {
				r.Header.Set(k, v)
			}
			credentials(r)
			if diff := cmp.Diff(tc.want, r.Header); diff != "" {
				t.Errorf("headers after credentials (-want +got):\n%s", diff)
			}
		})
	}
}
