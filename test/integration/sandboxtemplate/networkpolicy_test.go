package sandboxtemplate

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandboxtemplate"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestSecureDefault creates a Managed template without rules: it gets the secure-default
// NetworkPolicy, controlled by the template, exactly as API.md describes it.
func TestSecureDefault(t *testing.T) {
	t.Parallel()
	ns := startController(t, nil)
	env.Create(t, testutil.MakeTemplate("python", ns).Obj())

	np := waitForPolicy(t, ns, "python", secureDefault("python", defaultRouter, defaultDNS))
	if len(np.OwnerReferences) != 1 {
		t.Errorf("NetworkPolicy owner references %v; want only the template", np.OwnerReferences)
	}
	env.WaitForEvent(t, ns, "SandboxTemplate", "python", corev1.EventTypeNormal, sandboxtemplate.EventNetworkPolicyCreated, np.Name)
}

// TestRouterFromConfiguration: the router and cluster DNS peers of the secure default come from
// networkPolicy.router and networkPolicy.clusterDNS of the controller configuration.
func TestRouterFromConfiguration(t *testing.T) {
	t.Parallel()
	router := configv1alpha1.PeerSelector{Namespace: "edge", PodLabels: map[string]string{"app": "gateway", "tier": "front"}}
	dns := configv1alpha1.PeerSelector{Namespace: "dns-system", PodLabels: map[string]string{"app": "coredns"}}
	ns := startController(t, func(cfg *configv1alpha1.ControllerConfiguration) {
		cfg.NetworkPolicy.Router, cfg.NetworkPolicy.ClusterDNS = router, dns
	})
	env.Create(t, testutil.MakeTemplate("python", ns).Obj())
	waitForPolicy(t, ns, "python", secureDefault("python", router, dns))
}

// TestUserRules: a template's rules replace the secure default, follow the template's changes,
// and an empty rule list denies its direction; removing the rules brings the default back.
func TestUserRules(t *testing.T) {
	t.Parallel()
	ns := startController(t, nil)
	ingress := []networkingv1.NetworkPolicyIngressRule{{
		From:  []networkingv1.NetworkPolicyPeer{{PodSelector: labelSelector("app", "client")}},
		Ports: []networkingv1.NetworkPolicyPort{{Port: port(8080)}},
	}}
	egress := []networkingv1.NetworkPolicyEgressRule{{
		To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.20.0.0/16"}}},
	}}
	// The API server stores a port without a protocol as TCP.
	storedIngress := []networkingv1.NetworkPolicyIngressRule{{
		From:  ingress[0].From,
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: protocol(corev1.ProtocolTCP), Port: port(8080)}},
	}}
	env.Create(t, testutil.MakeTemplate("custom", ns).Rules(ingress, egress).Obj())

	t.Log("Rules: the policy holds them, with the controller's selector and policy types")
	waitForPolicy(t, ns, "custom", policySpec("custom", storedIngress, egress))

	t.Log("Egress emptied: egress denied")
	tpl := template(ns, "custom")
	framework.Update(t, env, tpl, func(tpl *extv1beta1.SandboxTemplate) { tpl.Spec.NetworkPolicy.Egress = nil })
	waitForPolicy(t, ns, "custom", policySpec("custom", storedIngress, nil))

	t.Log("Both lists empty: everything denied")
	framework.Update(t, env, tpl, func(tpl *extv1beta1.SandboxTemplate) { tpl.Spec.NetworkPolicy = &extv1beta1.NetworkPolicySpec{} })
	waitForPolicy(t, ns, "custom", policySpec("custom", nil, nil))

	t.Log("Rules removed: the secure default")
	framework.Update(t, env, tpl, func(tpl *extv1beta1.SandboxTemplate) { tpl.Spec.NetworkPolicy = nil })
	waitForPolicy(t, ns, "custom", secureDefault("custom", defaultRouter, defaultDNS))
}

// TestUnmanaged: switching a template to Unmanaged deletes the policy it controls; switching back
// creates it again. A template created Unmanaged gets none.
func TestUnmanaged(t *testing.T) {
	t.Parallel()
	ns := startController(t, nil)
	env.Create(t, testutil.MakeTemplate("managed", ns).Obj())
	env.Create(t, testutil.MakeTemplate("never", ns).Unmanaged().Obj())
	np := waitForPolicy(t, ns, "managed", secureDefault("managed", defaultRouter, defaultDNS))

	t.Log("Unmanaged: the policy is deleted")
	tpl := template(ns, "managed")
	framework.Update(t, env, tpl, func(tpl *extv1beta1.SandboxTemplate) {
		tpl.Spec.NetworkPolicyManagement = extv1beta1.NetworkPolicyManagementUnmanaged
	})
	env.WaitGone(t, policyOf(ns, "managed"))
	env.WaitForEvent(t, ns, "SandboxTemplate", "managed", corev1.EventTypeNormal, sandboxtemplate.EventNetworkPolicyDeleted, np.Name)

	t.Log("Managed again: a new policy")
	framework.Update(t, env, tpl, func(tpl *extv1beta1.SandboxTemplate) {
		tpl.Spec.NetworkPolicyManagement = extv1beta1.NetworkPolicyManagementManaged
	})
	if again := waitForPolicy(t, ns, "managed", secureDefault("managed", defaultRouter, defaultDNS)); again.UID == np.UID {
		t.Errorf("NetworkPolicy %s has the deleted policy's UID %s", again.Name, np.UID)
	}

	// The "managed" template was reconciled after "never" was created, with one worker, but
	// that says nothing about order: watch for a while.
	framework.Consistently(t, quiet, func() (bool, string) {
		found, err := env.Get(t, policyOf(ns, "never"))
		return !found && err == nil, fmt.Sprintf("NetworkPolicy of the Unmanaged template: found %v, err %v", found, err)
	})
}

// TestForeignPolicyNeverTouched puts a NetworkPolicy the template does not control where the
// template's would go: while Managed the template reports it with a Warning event and neither
// changes nor adopts it; when Unmanaged it does not delete it.
func TestForeignPolicyNeverTouched(t *testing.T) {
	t.Parallel()
	cases := map[string]func(t *testing.T, ns string) *networkingv1.NetworkPolicy{
		// Not labelled: invisible to the controller's cache, seen only when creating fails.
		"unlabelled, no owner": func(_ *testing.T, ns string) *networkingv1.NetworkPolicy {
			np := policyOf(ns, "tpl")
			np.Spec = networkingv1.NetworkPolicySpec{PodSelector: *labelSelector("app", "admin")}
			return np
		},
		// Labelled like the template's, controlled by something else: in the cache.
		"labelled, controlled by another object": func(t *testing.T, ns string) *networkingv1.NetworkPolicy {
			owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
			env.Create(t, owner)
			np := policyOf(ns, "tpl")
			np.Labels = map[string]string{sandboxv1beta1.SandboxTemplateRefHashLabel: sandboxv1beta1.NameHash("tpl")}
			np.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, corev1.SchemeGroupVersion.WithKind("ConfigMap"))}
			np.Spec = networkingv1.NetworkPolicySpec{PodSelector: *labelSelector("app", "admin")}
			return np
		},
	}
	for name, foreign := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := startController(t, nil)
			np := foreign(t, ns)
			env.Create(t, np)
			want := np.DeepCopy()
			untouched := func() (bool, string) {
				got := policyOf(ns, "tpl")
				if found, err := env.Get(t, got); !found || err != nil {
					return false, fmt.Sprintf("the foreign NetworkPolicy is gone (found %v, err %v)", found, err)
				}
				return got.ResourceVersion == want.ResourceVersion && got.UID == want.UID,
					fmt.Sprintf("the foreign NetworkPolicy changed: %s", cmp.Diff(want, got))
			}

			env.Create(t, testutil.MakeTemplate("tpl", ns).Obj())
			env.WaitForEvent(t, ns, "SandboxTemplate", "tpl", corev1.EventTypeWarning, sandboxtemplate.EventNetworkPolicyConflict,
				fmt.Sprintf("NetworkPolicy %s already exists", np.Name))
			framework.Consistently(t, quiet, untouched)

			framework.Update(t, env, template(ns, "tpl"), func(tpl *extv1beta1.SandboxTemplate) {
				tpl.Spec.NetworkPolicyManagement = extv1beta1.NetworkPolicyManagementUnmanaged
			})
			framework.Consistently(t, quiet, untouched)
		})
	}
}

// TestDriftRepaired changes the template's policy behind the controller's back: a widened spec
// and a removed label (which takes it out of the controller's cache) are both patched back.
func TestDriftRepaired(t *testing.T) {
	t.Parallel()
	ns := startController(t, nil)
	env.Create(t, testutil.MakeTemplate("tpl", ns).Obj())
	want := secureDefault("tpl", defaultRouter, defaultDNS)
	np := waitForPolicy(t, ns, "tpl", want)

	t.Log("Spec drift: an extra selector key (unconfining the sandboxes), an allow-all ingress rule, egress dropped")
	framework.Update(t, env, np, func(np *networkingv1.NetworkPolicy) {
		np.Spec.PodSelector.MatchLabels["extra"] = "x"
		np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{})
		np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		np.Spec.Egress = nil
	})
	repaired := waitForPolicy(t, ns, "tpl", want)
	if repaired.UID != np.UID {
		t.Errorf("NetworkPolicy was replaced (uid %s, was %s); want it patched", repaired.UID, np.UID)
	}
	env.WaitForEvent(t, ns, "SandboxTemplate", "tpl", corev1.EventTypeNormal, sandboxtemplate.EventNetworkPolicyRepaired, np.Name)

	t.Log("Label removed and spec changed: the policy leaves the cache and is still repaired")
	framework.Update(t, env, np, func(np *networkingv1.NetworkPolicy) {
		delete(np.Labels, sandboxv1beta1.SandboxTemplateRefHashLabel)
		np.Labels["other"] = "kept"
		np.Spec.Ingress = nil
	})
	repaired = waitForPolicy(t, ns, "tpl", want)
	if repaired.UID != np.UID || repaired.Labels["other"] != "kept" {
		t.Errorf("NetworkPolicy uid %s (was %s), labels %v; want the same policy, its other labels kept", repaired.UID, np.UID, repaired.Labels)
	}
}

// TestTemplateDeletion: the policy carries the owner reference the garbage collector follows to
// delete it with its template. A template recreated under the same name before the collector
// ran leaves the old template's policy alone, and gets its own once that one is gone.
func TestTemplateDeletion(t *testing.T) {
	t.Parallel()
	ns := startController(t, nil)
	env.Create(t, testutil.MakeTemplate("tpl", ns).Obj())
	old := template(ns, "tpl")
	framework.WaitForObject(t, env, old, nil)
	np := waitForPolicy(t, ns, "tpl", secureDefault("tpl", defaultRouter, defaultDNS))

	if err := env.Client.Delete(t.Context(), old); err != nil {
		t.Fatalf("Deleting SandboxTemplate tpl: %v", err)
	}
	env.WaitGone(t, template(ns, "tpl"))
	// No garbage collector here: the reference it would follow must still be there.
	framework.Consistently(t, quiet, func() (bool, string) {
		got := policyOf(ns, "tpl")
		if found, err := env.Get(t, got); !found || err != nil {
			return false, fmt.Sprintf("NetworkPolicy found %v, err %v", found, err)
		}
		ok, msg := env.IsControlledBy(got, old)
		return ok && got.ResourceVersion == np.ResourceVersion, msg
	})

	t.Log("Recreated before garbage collection: the old policy is reported, not taken over")
	env.Create(t, testutil.MakeTemplate("tpl", ns).Obj())
	env.WaitForEvent(t, ns, "SandboxTemplate", "tpl", corev1.EventTypeWarning, sandboxtemplate.EventNetworkPolicyConflict, string(old.UID))
	got := policyOf(ns, "tpl")
	if found, err := env.Get(t, got); !found || err != nil || got.ResourceVersion != np.ResourceVersion {
		t.Fatalf("The old template's NetworkPolicy changed or went: found %v, err %v, resourceVersion %s (was %s)",
			found, err, got.ResourceVersion, np.ResourceVersion)
	}

	t.Log("The garbage collector's part: the old policy is deleted, and the new template gets its own")
	if err := env.Client.Delete(t.Context(), np); err != nil {
		t.Fatalf("Deleting NetworkPolicy %s: %v", np.Name, err)
	}
	if fresh := waitForPolicy(t, ns, "tpl", secureDefault("tpl", defaultRouter, defaultDNS)); fresh.UID == np.UID {
		t.Errorf("NetworkPolicy %s still has the old UID", fresh.Name)
	}
}

// TestTemplateLabel: the template is labelled with the hash of its name, as its sandboxes are,
// and the label comes back when removed.
func TestTemplateLabel(t *testing.T) {
	t.Parallel()
	ns := startController(t, nil)
	env.Create(t, testutil.MakeTemplate("python-3", ns).Unmanaged().Obj())
	hash := sandboxv1beta1.NameHash("python-3")
	labelled := func(tpl *extv1beta1.SandboxTemplate) (bool, string) {
		return tpl.Labels[sandboxv1beta1.SandboxTemplateRefHashLabel] == hash,
			fmt.Sprintf("labels %v; want %s=%s", tpl.Labels, sandboxv1beta1.SandboxTemplateRefHashLabel, hash)
	}
	tpl := framework.WaitForObject(t, env, template(ns, "python-3"), labelled)

	framework.Update(t, env, tpl, func(tpl *extv1beta1.SandboxTemplate) {
		delete(tpl.Labels, sandboxv1beta1.SandboxTemplateRefHashLabel)
		tpl.Labels["team"] = "ml"
	})
	tpl = framework.WaitForObject(t, env, template(ns, "python-3"), labelled)
	if tpl.Labels["team"] != "ml" {
		t.Errorf("Template labels %v; want the user's team=ml kept", tpl.Labels)
	}
}
