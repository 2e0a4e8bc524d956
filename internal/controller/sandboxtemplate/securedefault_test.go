package sandboxtemplate

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/api/contract"
)

// TestSecureDefaultExceptsTheBlockedRanges: the public internet of the secure default is
// 0.0.0.0/0 and ::/0 minus exactly contract.BlockedRanges, the list kubox-egress refuses
// (internal/egress checks its side against the same list), and each except lies inside its
// ipBlock's CIDR, as the API server requires.
func TestSecureDefaultExceptsTheBlockedRanges(t *testing.T) {
	var got []netip.Prefix
	for _, rule := range secureDefaultEgress(configv1alpha1.PeerSelector{Namespace: "kube-system"}) {
		for _, peer := range rule.To {
			if peer.IPBlock != nil {
				got = append(got, excepts(t, peer.IPBlock)...)
			}
		}
	}
	if diff := cmp.Diff(contract.BlockedRanges(), got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("the secure default's excepts (-contract +policy):\n%s", diff)
	}
}

func excepts(t *testing.T, b *networkingv1.IPBlock) []netip.Prefix {
	t.Helper()
	cidr := netip.MustParsePrefix(b.CIDR)
	var out []netip.Prefix
	for _, e := range b.Except {
		p := netip.MustParsePrefix(e)
		if p.Bits() <= cidr.Bits() || !cidr.Contains(p.Addr()) || p.String() != e {
			t.Errorf("except %s is not a canonical range strictly inside %s", e, b.CIDR)
		}
		out = append(out, p)
	}
	return out
}
