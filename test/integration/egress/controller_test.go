package egress

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

const secretValue = "sk-never-in-the-sandbox"

// egressTemplate is a template whose sandboxes may reach allowed.test and api.test on ports,
// with the Secret api-key's token sent to api.test as a bearer token.
func egressTemplate(ns, name string, ports ...int32) *extv1beta1.SandboxTemplate {
	tpl := testutil.MakeTemplate(name, ns).Obj()
	tpl.Spec.Egress = &sandboxv1beta1.EgressPolicy{
		AllowDomains: []string{"allowed.test", "api.test"},
		DenyDomains:  []string{"denied.test"},
		Ports:        ports,
		Credentials:  []sandboxv1beta1.EgressCredential{credential("Authorization", "api.test")},
	}
	return tpl
}

func apiKeySecret(ns, value string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-key"}, StringData: map[string]string{"token": value + "\n"}}
}

func envOf(c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		m[e.Name] = e.Value
	}
	return m
}

// TestSandboxWiring: a claim's sandbox from a template with egress gets the proxy in every
// container's environment, its egress CA (certificate only) mounted and trusted additively, a
// CA Secret it controls, and a NetworkPolicy letting it reach only DNS and kubox-egress; the
// credential's value is nowhere in its Pod.
func TestSandboxWiring(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.StartKubox(t, ns, nil)
	env.Create(t, apiKeySecret(ns, secretValue))
	tpl := egressTemplate(ns, "agent", 443)
	tpl.Spec.PodTemplate.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox",
		Env: []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://elsewhere:1"}}}}
	env.Create(t, tpl)
	env.Create(t, testutil.MakeClaim("c", ns).Template("agent").Obj())

	sb := framework.WaitForObject(t, env, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}, nil)
	if diff := cmp.Diff(tpl.Spec.Egress, sb.Spec.Egress); diff != "" {
		t.Errorf("Sandbox spec.egress (-template +sandbox):\n%s", diff)
	}
	pod := framework.WaitForObject(t, env, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}, nil)
	proxy := contract.EgressProxyURL("kubox-system", "cluster.local")
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		e := envOf(c)
		for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
			if e[name] != proxy {
				t.Errorf("container %s: %s=%q; want %q", c.Name, name, e[name], proxy)
			}
		}
		if !strings.Contains(e["NO_PROXY"], "localhost") || !strings.Contains(e["NO_PROXY"], ".cluster.local") {
			t.Errorf("container %s: NO_PROXY=%q; want localhost and the cluster's names", c.Name, e["NO_PROXY"])
		}
		if e["NODE_EXTRA_CA_CERTS"] != contract.EgressCAFile || e[contract.EgressCAFileEnv] != contract.EgressCAFile ||
			!strings.HasPrefix(e["SSL_CERT_DIR"], contract.EgressCADir+":") {
			t.Errorf("container %s: CA variables %v; want the egress CA added to trust", c.Name, e)
		}
		for _, replacing := range []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"} {
			if v, set := e[replacing]; set {
				t.Errorf("container %s: %s=%q replaces the image's roots; pass-through domains would fail", c.Name, replacing, v)
			}
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == contract.EgressCADir && m.ReadOnly }) {
			t.Errorf("container %s mounts %v; want the egress CA read-only at %s", c.Name, c.VolumeMounts, contract.EgressCADir)
		}
	}
	i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Secret != nil && v.Secret.SecretName == sandboxv1beta1.EgressCASecretName("c")
	})
	if i < 0 {
		t.Fatalf("Pod volumes %v; want the egress CA Secret", pod.Spec.Volumes)
	}
	if items := pod.Spec.Volumes[i].Secret.Items; len(items) != 1 || items[0].Key != sandboxv1beta1.EgressCACertKey {
		t.Errorf("egress CA volume projects %v; want the certificate only, never the key", items)
	}
	b, _ := json.Marshal(pod)
	if strings.Contains(string(b), secretValue) {
		t.Errorf("the credential's value is in the sandbox's Pod")
	}

	caSecret := framework.WaitForObject(t, env, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sandboxv1beta1.EgressCASecretName("c")}}, nil)
	if ok, msg := env.IsControlledBy(caSecret, sb); !ok {
		t.Errorf("egress CA Secret: %s", msg)
	}
	if len(caSecret.Data[sandboxv1beta1.EgressCACertKey]) == 0 || len(caSecret.Data[sandboxv1beta1.EgressCAKeyKey]) == 0 {
		t.Errorf("egress CA Secret holds %d keys; want the certificate and the key", len(caSecret.Data))
	}

	framework.WaitForObject(t, env, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: extv1beta1.NetworkPolicyName("agent")}},
		func(np *networkingv1.NetworkPolicy) (bool, string) { return onlyDNSAndProxy(np.Spec.Egress) })
}

// onlyDNSAndProxy checks a policy's egress: cluster DNS on port 53, kubox-egress on its proxy
// port, and nothing else (no public-internet rule).
func onlyDNSAndProxy(rules []networkingv1.NetworkPolicyEgressRule) (bool, string) {
	if len(rules) != 2 {
		return false, fmt.Sprintf("%d egress rules %v; want DNS and the proxy only", len(rules), rules)
	}
	dns, proxy := rules[0], rules[1]
	if len(dns.To) != 1 || dns.To[0].PodSelector == nil || dns.To[0].PodSelector.MatchLabels["k8s-app"] != "kube-dns" || dns.Ports[0].Port.IntValue() != 53 {
		return false, fmt.Sprintf("first rule %v; want cluster DNS", dns)
	}
	if len(proxy.To) != 1 || proxy.To[0].IPBlock != nil || proxy.To[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != contract.EgressServiceName ||
		proxy.To[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "kubox-system" ||
		len(proxy.Ports) != 1 || proxy.Ports[0].Port.IntValue() != contract.EgressProxyPort {
		return false, fmt.Sprintf("second rule %v; want kubox-egress's pods on port %d", proxy, contract.EgressProxyPort)
	}
	return true, ""
}

// TestClaimMayOnlyNarrow: a claim allowing a domain its template does not, or setting egress on
// a template without, fails with EgressRejected naming the field; one that narrows gets the
// narrowed policy in its Sandbox, cold or warm, and a credential whose domain it no longer
// allows is dropped.
func TestClaimMayOnlyNarrow(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.StartKubox(t, ns, nil)
	env.StartKubelet(t, ns)
	env.Create(t, egressTemplate(ns, "agent", 443))
	env.Create(t, testutil.MakeTemplate("open", ns).Obj())
	env.Create(t, testutil.MakePool("pool", ns, "agent").Replicas(1).Obj())

	claim := func(name string, r *sandboxv1beta1.EgressRestriction, mutate func(*testutil.ClaimWrapper)) {
		w := testutil.MakeClaim(name, ns)
		mutate(w)
		c := w.Obj()
		c.Spec.Egress = r
		env.Create(t, c)
	}
	claim("wider", &sandboxv1beta1.EgressRestriction{AllowDomains: []string{"allowed.test", "other.test"}}, func(w *testutil.ClaimWrapper) { w.Template("agent") })
	claim("no-egress", &sandboxv1beta1.EgressRestriction{DenyDomains: []string{"x.test"}}, func(w *testutil.ClaimWrapper) { w.Template("open") })
	narrow := &sandboxv1beta1.EgressRestriction{AllowDomains: []string{"allowed.test"}, DenyCIDRs: []string{"192.0.2.0/24"}}
	claim("cold", narrow, func(w *testutil.ClaimWrapper) { w.Template("agent") })
	claim("credit-denied", &sandboxv1beta1.EgressRestriction{Credentials: []sandboxv1beta1.EgressCredential{credential("x-api-key", "denied.test")}},
		func(w *testutil.ClaimWrapper) { w.Template("agent") })

	rejected := func(name, msg string) {
		framework.WaitForObject(t, env, &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, func(c *extv1beta1.SandboxClaim) (bool, string) {
			r := meta.FindStatusCondition(c.Status.Conditions, extv1beta1.ClaimConditionReady)
			if r == nil || r.Reason != extv1beta1.ClaimReasonEgressRejected || !strings.Contains(r.Message, msg) {
				return false, fmt.Sprintf("Ready %+v; want EgressRejected with %q", r, msg)
			}
			return true, ""
		})
	}
	rejected("wider", "spec.egress.allowDomains other.test is not covered by SandboxTemplate agent's egress.allowDomains")
	rejected("no-egress", "SandboxTemplate open has no spec.egress")
	rejected("credit-denied", "spec.egress.credentials[0].domains denied.test is not among the domains the sandbox may reach")

	want := &sandboxv1beta1.EgressPolicy{AllowDomains: []string{"allowed.test"}, DenyDomains: []string{"denied.test"}, DenyCIDRs: []string{"192.0.2.0/24"}, Ports: []int32{443}}
	narrowed := func(name string) func(*sandboxv1beta1.Sandbox) (bool, string) {
		return func(sb *sandboxv1beta1.Sandbox) (bool, string) {
			if diff := cmp.Diff(want, sb.Spec.Egress); diff != "" {
				return false, fmt.Sprintf("Sandbox %s spec.egress (-want +got):\n%s", name, diff)
			}
			return true, ""
		}
	}
	framework.WaitForObject(t, env, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cold"}}, narrowed("cold"))

	t.Log("Warm: the bind patch replaces the member's egress")
	readyMember := func() {
		t.Helper()
		framework.Eventually(t, func() (bool, string) {
			var list sandboxv1beta1.SandboxList
			if err := env.Client.List(t.Context(), &list, client.InNamespace(ns), client.HasLabels{sandboxv1beta1.WarmPoolSandboxLabel}); err != nil {
				return false, err.Error()
			}
			for _, sb := range list.Items {
				if meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady) {
					return true, ""
				}
			}
			return false, "no ready pool member"
		})
	}
	readyMember()
	claim("warm", narrow, func(w *testutil.ClaimWrapper) { w.WarmPool("pool") })
	c := framework.WaitForObject(t, env, &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "warm"}}, func(c *extv1beta1.SandboxClaim) (bool, string) {
		return c.Status.Sandbox.Name != "" && c.Status.Sandbox.Name != "warm", "claim not bound to a pool member: " + c.Status.Sandbox.Name
	})
	framework.WaitForObject(t, env, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.Status.Sandbox.Name}}, narrowed(c.Status.Sandbox.Name))

	t.Log("A claim's credentials: after the template's; warm only when the member's CA covers them")
	mine := credential("x-api-key", "api.test")
	mine.SecretRef.Name = "my-key"
	other := credential("x-api-key", "allowed.test")
	want = &sandboxv1beta1.EgressPolicy{AllowDomains: []string{"allowed.test", "api.test"}, DenyDomains: []string{"denied.test"}, Ports: []int32{443},
		Credentials: []sandboxv1beta1.EgressCredential{credential("Authorization", "api.test"), mine}}
	readyMember()
	claim("warm-credit", &sandboxv1beta1.EgressRestriction{Credentials: []sandboxv1beta1.EgressCredential{mine}}, func(w *testutil.ClaimWrapper) { w.WarmPool("pool") })
	c = framework.WaitForObject(t, env, &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "warm-credit"}}, func(c *extv1beta1.SandboxClaim) (bool, string) {
		return c.Status.Sandbox.Name != "" && c.Status.Sandbox.Name != "warm-credit", "claim not bound to a pool member: " + c.Status.Sandbox.Name
	})
	framework.WaitForObject(t, env, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.Status.Sandbox.Name}}, narrowed(c.Status.Sandbox.Name))

	want = &sandboxv1beta1.EgressPolicy{AllowDomains: []string{"allowed.test", "api.test"}, DenyDomains: []string{"denied.test"}, Ports: []int32{443},
		Credentials: []sandboxv1beta1.EgressCredential{credential("Authorization", "api.test"), other}}
	readyMember() // a member is there to take, but its CA does not cover allowed.test
	claim("cold-credit", &sandboxv1beta1.EgressRestriction{Credentials: []sandboxv1beta1.EgressCredential{other}}, func(w *testutil.ClaimWrapper) { w.WarmPool("pool") })
	framework.WaitForObject(t, env, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cold-credit"}}, narrowed("cold-credit"))
	framework.WaitForObject(t, env, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sandboxv1beta1.EgressCASecretName("cold-credit")}}, func(s *corev1.Secret) (bool, string) {
		block, _ := pem.Decode(s.Data[sandboxv1beta1.EgressCACertKey])
		if block == nil {
			return false, "no PEM certificate in the CA Secret"
		}
		ca, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return false, err.Error()
		}
		return slices.Contains(ca.PermittedDNSDomains, "allowed.test"), fmt.Sprintf("CA for %v; want allowed.test, the claim's credential domain", ca.PermittedDNSDomains)
	})
}
