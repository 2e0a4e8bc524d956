package sandboxclaim

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

func TestBoundAnnotations(t *testing.T) {
	seen := time.Date(2026, 12, 4, 18, 0, 0, 123456789, time.UTC)
	claim := func(ann map[string]string) *extv1beta1.SandboxClaim {
		return &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: ann}}
	}
	cases := map[string]struct {
		claim   *extv1beta1.SandboxClaim
		sandbox string
		seen    time.Time
		want    string // "" means no patch
	}{
		"new bound claim": {claim: claim(nil), sandbox: "pool-abc", seen: seen,
			want: `{"metadata":{"annotations":{"agents.x-k8s.io/controller-first-observed-at":"2026-12-04T18:00:00.123456789Z","agents.x-k8s.io/sandbox-name":"pool-abc"}}}`},
		"first sight not known to this process": {claim: claim(nil), sandbox: "pool-abc",
			want: `{"metadata":{"annotations":{"agents.x-k8s.io/sandbox-name":"pool-abc"}}}`},
		"already annotated": {claim: claim(map[string]string{extv1beta1.SandboxNameAnnotation: "pool-abc",
			extv1beta1.ControllerFirstObservedAtAnnotation: "2026-01-01T00:00:00Z"}), sandbox: "pool-abc", seen: seen},
		"first sight kept, a stale sandbox name replaced": {claim: claim(map[string]string{extv1beta1.SandboxNameAnnotation: "old",
			extv1beta1.ControllerFirstObservedAtAnnotation: "2026-01-01T00:00:00Z"}), sandbox: "c", seen: seen,
			want: `{"metadata":{"annotations":{"agents.x-k8s.io/sandbox-name":"c"}}}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := string(boundAnnotations(tc.claim, tc.sandbox, tc.seen)); got != tc.want {
				t.Errorf("boundAnnotations() = %s\nwant %s", got, tc.want)
			}
		})
	}
}
