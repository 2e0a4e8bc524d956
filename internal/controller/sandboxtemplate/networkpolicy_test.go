package sandboxtemplate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// The hash of "tpl", written out so a change to NameHash (which must match agent-sandbox's) or to
// the selector shows up here.
const tplHash = "9d22159f"

func makeTemplate(name string, np *extv1beta1.NetworkPolicySpec) *extv1beta1.SandboxTemplate {
	return &extv1beta1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec:       extv1beta1.SandboxTemplateSpec{NetworkPolicy: np},
	}
}

func defaultSettings() configv1alpha1.NetworkPolicySettings {
	cfg := &configv1alpha1.ControllerConfiguration{}
	configv1alpha1.SetDefaults(cfg)
	return cfg.NetworkPolicy
}

func proto(p corev1.Protocol) *corev1.Protocol { return &p }

func port(p int32) *intstr.IntOrString { v := intstr.FromInt32(p); return &v }

func selector(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

// wantPublicInternet is the secure default's internet peer, written out range by range.
var wantPublicInternet = []networkingv1.NetworkPolicyPeer{
	{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{
		"0.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"168.63.129.16/32", "192.0.0.0/24", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
	}}},
	{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: []string{
		"::/96", "64:ff9b::/96", "64:ff9b:1::/48", "2001::/32", "2002::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
	}}},
}

func wantSpec(ingress []networkingv1.NetworkPolicyIngressRule, egress []networkingv1.NetworkPolicyEgressRule) networkingv1.NetworkPolicySpec {
	return networkingv1.NetworkPolicySpec{
		PodSelector: *selector(sandboxv1beta1.SandboxTemplateRefHashLabel, tplHash),
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		Ingress:     ingress,
		Egress:      egress,
	}
}

func TestNetworkPolicySpec(t *testing.T) {
	custom := configv1alpha1.NetworkPolicySettings{
		Router:     configv1alpha1.PeerSelector{Namespace: "edge", PodLabels: map[string]string{"app": "gw", "tier": "front"}},
		ClusterDNS: configv1alpha1.PeerSelector{Namespace: "dns", PodLabels: map[string]string{"app": "coredns"}},
	}
	userIngress := []networkingv1.NetworkPolicyIngressRule{{
		From:  []networkingv1.NetworkPolicyPeer{{PodSelector: selector("app", "client")}},
		Ports: []networkingv1.NetworkPolicyPort{{Port: port(8080)}, {Protocol: proto(corev1.ProtocolUDP), Port: port(9000)}},
	}}
	userEgress := []networkingv1.NetworkPolicyEgressRule{{
		To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.1.0.0/16"}}},
	}}
	cases := map[string]struct {
		np       *extv1beta1.NetworkPolicySpec
		settings configv1alpha1.NetworkPolicySettings
		want     networkingv1.NetworkPolicySpec
	}{
		"no rules: secure default, router and DNS from the default configuration": {
			settings: defaultSettings(),
			want: wantSpec(
				[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: selector("kubernetes.io/metadata.name", "kubox-system"),
					PodSelector:       selector("app.kubernetes.io/name", "kubox-router"),
				}}}},
				[]networkingv1.NetworkPolicyEgressRule{
					{
						To: []networkingv1.NetworkPolicyPeer{{
							NamespaceSelector: selector("kubernetes.io/metadata.name", "kube-system"),
							PodSelector:       selector("k8s-app", "kube-dns"),
						}},
						Ports: []networkingv1.NetworkPolicyPort{
							{Protocol: proto(corev1.ProtocolUDP), Port: port(53)},
							{Protocol: proto(corev1.ProtocolTCP), Port: port(53)},
						},
					},
					{To: wantPublicInternet},
				}),
		},
		"no rules: secure default, router and DNS from a custom configuration": {
			settings: custom,
			want: wantSpec(
				[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: selector("kubernetes.io/metadata.name", "edge"),
					PodSelector:       selector("app", "gw", "tier", "front"),
				}}}},
				[]networkingv1.NetworkPolicyEgressRule{
					{
						To: []networkingv1.NetworkPolicyPeer{{
							NamespaceSelector: selector("kubernetes.io/metadata.name", "dns"),
							PodSelector:       selector("app", "coredns"),
						}},
						Ports: []networkingv1.NetworkPolicyPort{
							{Protocol: proto(corev1.ProtocolUDP), Port: port(53)},
							{Protocol: proto(corev1.ProtocolTCP), Port: port(53)},
						},
					},
					{To: wantPublicInternet},
				}),
		},
		"user rules replace the default; unset protocols become TCP as the API server stores them": {
			np:       &extv1beta1.NetworkPolicySpec{Ingress: userIngress, Egress: userEgress},
			settings: custom,
			want: wantSpec([]networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: selector("app", "client")}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: proto(corev1.ProtocolTCP), Port: port(8080)}, {Protocol: proto(corev1.ProtocolUDP), Port: port(9000)}},
			}}, userEgress),
		},
		"ingress rules only: egress denied": {
			np:       &extv1beta1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{}}},
			settings: defaultSettings(),
			want:     wantSpec([]networkingv1.NetworkPolicyIngressRule{{}}, nil),
		},
		"empty lists: both directions denied": {
			np:       &extv1beta1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{}, Egress: []networkingv1.NetworkPolicyEgressRule{}},
			settings: defaultSettings(),
			want:     wantSpec([]networkingv1.NetworkPolicyIngressRule{}, []networkingv1.NetworkPolicyEgressRule{}),
		},
		"no lists: both directions denied": {
			np:       &extv1beta1.NetworkPolicySpec{},
			settings: defaultSettings(),
			want:     wantSpec(nil, nil),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tpl := makeTemplate("tpl", tc.np)
			before := tpl.DeepCopy()
			got := networkPolicySpec(tpl, tc.settings)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("networkPolicySpec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tpl); diff != "" {
				t.Errorf("networkPolicySpec changed the template (-before +after):\n%s", diff)
			}
		})
	}
}

// TestSecureDefaultSharesNothing changes one built policy in every place a shared pointer or map
// could hide, and checks that the next one built, and the settings, are unchanged.
func TestSecureDefaultSharesNothing(t *testing.T) {
	settings := defaultSettings()
	tpl := makeTemplate("tpl", nil)
	first := networkPolicySpec(tpl, settings)
	want := networkPolicySpec(tpl, settings)

	first.Ingress[0].From[0].PodSelector.MatchLabels["x"] = "y"
	first.Egress[0].Ports[0].Port.IntVal = 5353
	*first.Egress[0].Ports[1].Protocol = corev1.ProtocolSCTP
	first.Egress[1].To[0].IPBlock.Except[0] = "1.2.3.4/32"
	first.Egress[1].To[1].IPBlock.CIDR = "2001:db8::/32"

	if diff := cmp.Diff(want, networkPolicySpec(tpl, settings)); diff != "" {
		t.Errorf("A policy built after changing an earlier one differs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(defaultSettings(), settings); diff != "" {
		t.Errorf("The settings changed (-want +got):\n%s", diff)
	}
}

func TestBuildNetworkPolicy(t *testing.T) {
	scheme := runtime.NewScheme()
	utilruntime.Must(extv1beta1.AddToScheme(scheme))
	r := NewReconciler(nil, nil, scheme, nil, defaultSettings())
	tpl := makeTemplate("tpl", &extv1beta1.NetworkPolicySpec{})

	got, err := r.buildNetworkPolicy(tpl)
	if err != nil {
		t.Fatalf("buildNetworkPolicy: %v", err)
	}
	want := metav1.ObjectMeta{
		Name:      "tpl-network-policy",
		Namespace: "ns",
		Labels:    map[string]string{sandboxv1beta1.SandboxTemplateRefHashLabel: tplHash},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "extensions.agents.x-k8s.io/v1beta1", Kind: "SandboxTemplate", Name: "tpl", UID: "uid-tpl",
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}},
	}
	if diff := cmp.Diff(want, got.ObjectMeta); diff != "" {
		t.Errorf("NetworkPolicy metadata (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantSpec(nil, nil), got.Spec); diff != "" {
		t.Errorf("NetworkPolicy spec (-want +got):\n%s", diff)
	}
}

func TestNetworkPolicyCacheSelectsLabelledPolicies(t *testing.T) {
	sel := NetworkPolicyCache().Label
	cases := map[string]struct {
		labels labels.Set
		want   bool
	}{
		"the template's label":       {labels.Set{sandboxv1beta1.SandboxTemplateRefHashLabel: tplHash}, true},
		"another template's label":   {labels.Set{sandboxv1beta1.SandboxTemplateRefHashLabel: "00000000", "a": "b"}, true},
		"a sandbox's name-hash only": {labels.Set{sandboxv1beta1.SandboxNameHashLabel: tplHash}, false},
		"no labels":                  {nil, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := sel.Matches(tc.labels); got != tc.want {
				t.Errorf("Selector %v matches %v = %v; want %v", sel, tc.labels, got, tc.want)
			}
		})
	}
}

// TestDeleteNetworkPolicyNeedsTheTemplatesKind: a controller reference that carries the
// template's UID under another kind (anyone creating the policy can write one) does not make the
// policy the template's, so an Unmanaged template leaves it alone.
func TestDeleteNetworkPolicyNeedsTheTemplatesKind(t *testing.T) {
	cases := map[string]struct {
		apiVersion, kind string
		wantDeleted      bool
	}{
		"the template's":             {apiVersion: "extensions.agents.x-k8s.io/v1beta1", kind: "SandboxTemplate", wantDeleted: true},
		"its UID under another kind": {apiVersion: "v1", kind: "ConfigMap"},
		"its kind in another group":  {apiVersion: "example.com/v1", kind: "SandboxTemplate"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			utilruntime.Must(networkingv1.AddToScheme(scheme))
			utilruntime.Must(extv1beta1.AddToScheme(scheme))
			tpl := makeTemplate("tpl", nil)
			np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "tpl-network-policy", Namespace: "ns",
				OwnerReferences: []metav1.OwnerReference{{APIVersion: tc.apiVersion, Kind: tc.kind, Name: "tpl", UID: tpl.UID,
					Controller: ptr.To(true)}}}}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(np).Build()
			r := NewReconciler(c, c, scheme, events.NewFakeRecorder(10), defaultSettings())
			if err := r.deleteNetworkPolicy(t.Context(), tpl); err != nil {
				t.Fatalf("deleteNetworkPolicy: %v", err)
			}
			err := c.Get(t.Context(), client.ObjectKeyFromObject(np), &networkingv1.NetworkPolicy{})
			if deleted := apierrors.IsNotFound(err); deleted != tc.wantDeleted {
				t.Errorf("NetworkPolicy deleted = %v (get: %v); want %v", deleted, err, tc.wantDeleted)
			}
		})
	}
}
