package sandboxes

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/egress"
)

func TestPolicy(t *testing.T) {
	got, err := Policy(&sandboxv1beta1.EgressPolicy{AllowDomains: []string{"a.test"}, DenyDomains: []string{"*.b.test"},
		AllowCIDRs: []string{"10.1.2.3/8"}, DenyCIDRs: []string{"2001:db8::/32"}, Ports: []int32{443, 8443}})
	if err != nil {
		t.Fatal(err)
	}
	want := &egress.Policy{AllowDomains: []string{"a.test"}, DenyDomains: []string{"*.b.test"},
		AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, DenyCIDRs: []netip.Prefix{netip.MustParsePrefix("2001:db8::/32")},
		Ports: []int{443, 8443}}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("Policy (-want +got):\n%s", diff)
	}
	if _, err := Policy(&sandboxv1beta1.EgressPolicy{DenyCIDRs: []string{"nonsense"}}); err == nil {
		t.Error("Policy accepted a CIDR that is not one")
	}
}

// TestForget: a deleted Sandbox's credentials and CA key leave memory, also when the informer
// only learns of the deletion late.
func TestForget(t *testing.T) {
	s := &Source{built: map[types.UID]*entry{"a": {}, "b": {}}}
	a, b := &sandboxv1beta1.Sandbox{}, &sandboxv1beta1.Sandbox{}
	a.UID, b.UID = "a", "b"
	s.forget(a)
	s.forget(cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: b})
	if len(s.built) != 0 {
		t.Errorf("views left after the deletions: %v", s.built)
	}
}
