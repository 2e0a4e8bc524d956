package sandboxtemplate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// TestEgressThroughProxy: a template with spec.egress may reach cluster DNS and kubox-egress,
// plus its own egress rules, never the secure default's public internet; ingress is unchanged.
func TestEgressThroughProxy(t *testing.T) {
	settings := defaultSettings()
	proxyRule := networkingv1.NetworkPolicyEgressRule{
		To:    []networkingv1.NetworkPolicyPeer{podsIn(settings.EgressProxy.PeerSelector)},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: proto(corev1.ProtocolTCP), Port: port(3128)}},
	}
	dnsRule := secureDefaultEgress(settings.ClusterDNS)[0]
	db := networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.9.0.5/32"}}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: proto(corev1.ProtocolTCP), Port: port(5432)}}}
	cases := map[string]struct {
		rules       *extv1beta1.NetworkPolicySpec
		wantEgress  []networkingv1.NetworkPolicyEgressRule
		wantIngress []networkingv1.NetworkPolicyIngressRule
	}{
		"secure default":  {wantEgress: []networkingv1.NetworkPolicyEgressRule{dnsRule, proxyRule}, wantIngress: secureDefaultIngress(settings.Router)},
		"own egress rule": {rules: &extv1beta1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{db}}, wantEgress: []networkingv1.NetworkPolicyEgressRule{dnsRule, proxyRule, db}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tpl := &extv1beta1.SandboxTemplate{}
			tpl.Name = "agent"
			tpl.Spec.NetworkPolicy = tc.rules
			tpl.Spec.Egress = &sandboxv1beta1.EgressPolicy{AllowDomains: []string{"pypi.org"}}
			spec := networkPolicySpec(tpl, settings)
			if diff := cmp.Diff(tc.wantEgress, spec.Egress); diff != "" {
				t.Errorf("egress (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantIngress, spec.Ingress); diff != "" {
				t.Errorf("ingress (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEgressThroughProxyOnTheNode: with kubox-egress outside the Pod network (the local node's
// host process), the policy opens the URL's port at the configured addresses instead of Pods.
func TestEgressThroughProxyOnTheNode(t *testing.T) {
	settings := defaultSettings()
	settings.EgressProxy.URL = "http://10.77.0.1:3130"
	settings.EgressProxy.CIDRs = []string{"10.77.0.1/32"}
	tpl := &extv1beta1.SandboxTemplate{}
	tpl.Spec.Egress = &sandboxv1beta1.EgressPolicy{AllowDomains: []string{"pypi.org"}}
	want := networkingv1.NetworkPolicyEgressRule{
		To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.77.0.1/32"}}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: proto(corev1.ProtocolTCP), Port: port(3130)}},
	}
	spec := networkPolicySpec(tpl, settings)
	if len(spec.Egress) != 2 {
		t.Fatalf("egress rules %v, want cluster DNS and kubox-egress", spec.Egress)
	}
	if diff := cmp.Diff(want, spec.Egress[1]); diff != "" {
		t.Errorf("kubox-egress rule (-want +got):\n%s", diff)
	}
}
