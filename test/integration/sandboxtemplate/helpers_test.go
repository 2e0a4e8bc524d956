package sandboxtemplate

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// quiet is how long a test watches for something that must not happen. A short window makes such
// a check weaker, never flaky.
const quiet = time.Second

// startController creates a namespace for t and starts every controller watching it, set up as
// kubox-controller sets them up, with the default configuration changed by configure (if any).
func startController(t *testing.T, configure func(*configv1alpha1.ControllerConfiguration)) string {
	t.Helper()
	ns := env.NewNamespace(t)
	env.StartKubox(t, ns, configure)
	return ns
}

func template(ns, name string) *extv1beta1.SandboxTemplate {
	return &extv1beta1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// policyOf is an empty NetworkPolicy named like template's.
func policyOf(ns, template string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: extv1beta1.NetworkPolicyName(template)}}
}

// waitForPolicy waits until the template's NetworkPolicy exists, is controlled by the template
// (whose current UID it reads) and has spec want and the template's label, and returns it.
func waitForPolicy(t *testing.T, ns, tplName string, want networkingv1.NetworkPolicySpec) *networkingv1.NetworkPolicy {
	t.Helper()
	tpl := template(ns, tplName)
	return framework.WaitForObject(t, env, policyOf(ns, tplName), func(np *networkingv1.NetworkPolicy) (bool, string) {
		if found, err := env.Get(t, tpl); !found || err != nil {
			return false, fmt.Sprintf("SandboxTemplate %s not readable (found %v, err %v)", tplName, found, err)
		}
		if ok, msg := env.IsControlledBy(np, tpl); !ok {
			return false, msg
		}
		if got := np.Labels[sandboxv1beta1.SandboxTemplateRefHashLabel]; got != sandboxv1beta1.NameHash(tplName) {
			return false, fmt.Sprintf("label %s=%q; want %q", sandboxv1beta1.SandboxTemplateRefHashLabel, got, sandboxv1beta1.NameHash(tplName))
		}
		if diff := cmp.Diff(want, np.Spec); diff != "" {
			return false, fmt.Sprintf("spec (-want +got):\n%s", diff)
		}
		return true, ""
	})
}

// The expected policies, written out from API.md rather than taken from the controller.

func labelSelector(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func protocol(p corev1.Protocol) *corev1.Protocol { return &p }

func port(p int32) *intstr.IntOrString { v := intstr.FromInt32(p); return &v }

// policySpec is a template's policy: its pods, both directions, the given rules.
func policySpec(tplName string, ingress []networkingv1.NetworkPolicyIngressRule, egress []networkingv1.NetworkPolicyEgressRule) networkingv1.NetworkPolicySpec {
	return networkingv1.NetworkPolicySpec{
		PodSelector: *labelSelector(sandboxv1beta1.SandboxTemplateRefHashLabel, sandboxv1beta1.NameHash(tplName)),
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		Ingress:     ingress,
		Egress:      egress,
	}
}

// secureDefault is the policy of a template without rules: ingress from the router only; egress
// to cluster DNS on port 53 and to public addresses.
func secureDefault(tplName string, router, dns configv1alpha1.PeerSelector) networkingv1.NetworkPolicySpec {
	peer := func(p configv1alpha1.PeerSelector) networkingv1.NetworkPolicyPeer {
		return networkingv1.NetworkPolicyPeer{
			NamespaceSelector: labelSelector("kubernetes.io/metadata.name", p.Namespace),
			PodSelector:       &metav1.LabelSelector{MatchLabels: p.PodLabels},
		}
	}
	return policySpec(tplName,
		[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{peer(router)}}},
		[]networkingv1.NetworkPolicyEgressRule{
			{
				To: []networkingv1.NetworkPolicyPeer{peer(dns)},
				Ports: []networkingv1.NetworkPolicyPort{
					{Protocol: protocol(corev1.ProtocolUDP), Port: port(53)},
					{Protocol: protocol(corev1.ProtocolTCP), Port: port(53)},
				},
			},
			{To: []networkingv1.NetworkPolicyPeer{
				{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{
					"0.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
					"168.63.129.16/32", "192.0.0.0/24", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
				}}},
				{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: []string{
					"::/96", "64:ff9b::/96", "64:ff9b:1::/48", "2001::/32", "2002::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
				}}},
			}},
		})
}

// defaultRouter and defaultDNS are the peers of the default configuration.
var (
	defaultRouter = configv1alpha1.PeerSelector{Namespace: "kubox-system", PodLabels: map[string]string{"app.kubernetes.io/name": "kubox-router"}}
	defaultDNS    = configv1alpha1.PeerSelector{Namespace: "kube-system", PodLabels: map[string]string{"k8s-app": "kube-dns"}}
)
