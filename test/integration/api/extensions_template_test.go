package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

// Messages of the SandboxTemplate CRD's CEL rules.
const msgTemplateName = "metadata.name must be at most 238 characters while spec.networkPolicyManagement is Managed"

// agentSandboxTemplateManifest is a SandboxTemplate as agent-sandbox's documentation writes one.
const agentSandboxTemplateManifest = `
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata:
  name: python-runtime-template
spec:
  podTemplate:
    metadata:
      labels:
        app: python-runtime
    spec:
      containers:
      - name: python-runtime
        image: registry.invalid/python-runtime-sandbox:latest-main
        ports:
        - containerPort: 8888
  networkPolicy:
    ingress:
    - from:
      - podSelector:
          matchLabels:
            app: sandbox-router
    egress: []
`

// templateDefaulted is the part of a SandboxTemplate's spec the API server defaults.
type templateDefaulted struct {
	NetworkPolicyManagement    extv1beta1.NetworkPolicyManagement
	EnvVarsInjectionPolicy     extv1beta1.EnvVarsInjectionPolicy
	VolumeClaimTemplatesPolicy extv1beta1.VolumeClaimTemplatesPolicy
}

func templateDefaultedOf(tpl *extv1beta1.SandboxTemplate) templateDefaulted {
	return templateDefaulted{
		NetworkPolicyManagement:    tpl.Spec.NetworkPolicyManagement,
		EnvVarsInjectionPolicy:     tpl.Spec.EnvVarsInjectionPolicy,
		VolumeClaimTemplatesPolicy: tpl.Spec.VolumeClaimTemplatesPolicy,
	}
}

func TestSandboxTemplateDefaults(t *testing.T) {
	ns := env.NewNamespace(t)
	cases := map[string]struct {
		template *testutil.TemplateWrapper
		want     templateDefaulted
	}{
		"unset fields": {
			template: testutil.MakeTemplate("unset", ns),
			want: templateDefaulted{
				NetworkPolicyManagement:    extv1beta1.NetworkPolicyManagementManaged,
				EnvVarsInjectionPolicy:     extv1beta1.EnvVarsInjectionPolicyDisallowed,
				VolumeClaimTemplatesPolicy: extv1beta1.VolumeClaimTemplatesPolicyDisallowed,
			},
		},
		"set fields are kept": {
			template: testutil.MakeTemplate("set", ns).NetworkPolicyManagement(extv1beta1.NetworkPolicyManagementUnmanaged).
				EnvVarsInjectionPolicy(extv1beta1.EnvVarsInjectionPolicyOverrides).
				VolumeClaimTemplatesPolicy(extv1beta1.VolumeClaimTemplatesPolicyAllowed),
			want: templateDefaulted{
				NetworkPolicyManagement:    extv1beta1.NetworkPolicyManagementUnmanaged,
				EnvVarsInjectionPolicy:     extv1beta1.EnvVarsInjectionPolicyOverrides,
				VolumeClaimTemplatesPolicy: extv1beta1.VolumeClaimTemplatesPolicyAllowed,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			tpl := tc.template.Obj()
			if err := env.Client.Create(ctx, tpl); err != nil {
				t.Fatalf("Creating template: %v", err)
			}
			got := &extv1beta1.SandboxTemplate{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tpl), got); err != nil {
				t.Fatalf("Reading template back: %v", err)
			}
			if diff := cmp.Diff(tc.want, templateDefaultedOf(got)); diff != "" {
				t.Errorf("Defaulted fields as stored (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAgentSandboxTemplateManifest(t *testing.T) {
	ns := env.NewNamespace(t)
	ctx := t.Context()
	if err := env.Client.Create(ctx, fromYAML(t, ns, agentSandboxTemplateManifest)); err != nil {
		t.Fatalf("Creating agent-sandbox's SandboxTemplate: %v", err)
	}
	got := &extv1beta1.SandboxTemplate{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "python-runtime-template"}, got); err != nil {
		t.Fatalf("Reading it back: %v", err)
	}
	want := templateDefaulted{
		NetworkPolicyManagement:    extv1beta1.NetworkPolicyManagementManaged,
		EnvVarsInjectionPolicy:     extv1beta1.EnvVarsInjectionPolicyDisallowed,
		VolumeClaimTemplatesPolicy: extv1beta1.VolumeClaimTemplatesPolicyDisallowed,
	}
	if diff := cmp.Diff(want, templateDefaultedOf(got)); diff != "" {
		t.Errorf("Defaulted fields (-want +got):\n%s", diff)
	}
	// An empty egress list (deny all egress) and an absent one mean the same, and the policy is
	// kept: it is the presence of networkPolicy that replaces the secure default.
	if got.Spec.NetworkPolicy == nil || len(got.Spec.NetworkPolicy.Ingress) != 1 || len(got.Spec.NetworkPolicy.Egress) != 0 {
		t.Errorf("networkPolicy = %+v; want one ingress rule and no egress rule", got.Spec.NetworkPolicy)
	}
}

func TestSandboxTemplateCreateValidation(t *testing.T) {
	ns := env.NewNamespace(t)
	longName := func(n int) string { return "t" + strings.Repeat("a", n-1) }
	cases := map[string]struct {
		obj      client.Object
		wantErrs []string // empty: the object is accepted
	}{
		"managed, name of 238 characters": {
			obj: testutil.MakeTemplate(longName(238), ns).Obj(),
		},
		"managed, name of 239 characters": {
			obj:      testutil.MakeTemplate(longName(239), ns).Obj(),
			wantErrs: []string{msgTemplateName},
		},
		"unmanaged, name of 253 characters": {
			obj: testutil.MakeTemplate(longName(253), ns).NetworkPolicyManagement(extv1beta1.NetworkPolicyManagementUnmanaged).Obj(),
		},
		"name with dots": {
			obj: testutil.MakeTemplate("python.v2", ns).Obj(),
		},
		"network policy rules": {
			obj: testutil.MakeTemplate("rules", ns).NetworkPolicy(&extv1beta1.NetworkPolicySpec{
				Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
					PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "router"}},
				}}}},
				Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{
					IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/8"}},
				}}}},
			}).Obj(),
		},
		"65 ingress rules": {
			obj: testutil.MakeTemplate("many-rules", ns).NetworkPolicy(&extv1beta1.NetworkPolicySpec{
				Ingress: make([]networkingv1.NetworkPolicyIngressRule, 65),
			}).Obj(),
			wantErrs: []string{"spec.networkPolicy.ingress", "must have at most 64 items"},
		},
		"unknown networkPolicyManagement": {
			obj:      testutil.MakeTemplate("np-auto", ns).NetworkPolicyManagement("Auto").Obj(),
			wantErrs: []string{"spec.networkPolicyManagement", `Unsupported value: "Auto"`},
		},
		"unknown envVarsInjectionPolicy": {
			obj:      testutil.MakeTemplate("env-always", ns).EnvVarsInjectionPolicy("Always").Obj(),
			wantErrs: []string{"spec.envVarsInjectionPolicy", `Unsupported value: "Always"`},
		},
		"unknown volumeClaimTemplatesPolicy": {
			obj:      testutil.MakeTemplate("vct-merge", ns).VolumeClaimTemplatesPolicy("Merge").Obj(),
			wantErrs: []string{"spec.volumeClaimTemplatesPolicy", `Unsupported value: "Merge"`},
		},
		"volume claim templates with distinct names": {
			obj: testutil.MakeTemplate("vct-distinct", ns).VolumeClaimTemplate("data", "1Gi").VolumeClaimTemplate("cache", "1Gi").Obj(),
		},
		"volume claim templates with the same name": {
			obj:      testutil.MakeTemplate("vct-same", ns).VolumeClaimTemplate("data", "1Gi").VolumeClaimTemplate("data", "2Gi").Obj(),
			wantErrs: []string{"spec.volumeClaimTemplates", msgVCTUnique},
		},
		"volume claim template with an invalid name": {
			obj:      testutil.MakeTemplate("vct-invalid", ns).VolumeClaimTemplate("Data", "1Gi").Obj(),
			wantErrs: []string{"spec.volumeClaimTemplates[0]", msgVCTName},
		},
		"claimPolicy": {
			obj: testutil.MakeTemplate("claim-policy", ns).ClaimPolicy(extv1beta1.ClaimPolicy{
				AllowedLabelDomains:      []string{"team.example.com"},
				AllowedAnnotationDomains: []string{"sidecar.istio.io", "example.com"},
				AllowedStorageClassNames: []string{"standard", "fast-ssd"},
				MaxStoragePerVolume:      ptr.To(resource.MustParse("20Gi")),
			}).Obj(),
		},
		"claimPolicy annotation domain with a slash": {
			obj:      testutil.MakeTemplate("claim-policy-slash", ns).ClaimPolicy(extv1beta1.ClaimPolicy{AllowedAnnotationDomains: []string{"sidecar.istio.io/"}}).Obj(),
			wantErrs: []string{"spec.claimPolicy.allowedAnnotationDomains[0]", "should match"},
		},
		"claimPolicy label domain with uppercase letters": {
			obj:      testutil.MakeTemplate("claim-policy-upper", ns).ClaimPolicy(extv1beta1.ClaimPolicy{AllowedLabelDomains: []string{"Example.com"}}).Obj(),
			wantErrs: []string{"spec.claimPolicy.allowedLabelDomains[0]", "should match"},
		},
		"claimPolicy with the empty storage class": {
			obj:      testutil.MakeTemplate("claim-policy-empty-class", ns).ClaimPolicy(extv1beta1.ClaimPolicy{AllowedStorageClassNames: []string{""}}).Obj(),
			wantErrs: []string{"spec.claimPolicy.allowedStorageClassNames[0]"},
		},
		"claimPolicy with a domain twice": {
			obj:      testutil.MakeTemplate("claim-policy-dup", ns).ClaimPolicy(extv1beta1.ClaimPolicy{AllowedAnnotationDomains: []string{"a.io", "a.io"}}).Obj(),
			wantErrs: []string{"spec.claimPolicy.allowedAnnotationDomains[1]", "Duplicate value"},
		},
		"claimPolicy with 33 annotation domains": {
			obj:      testutil.MakeTemplate("claim-policy-many", ns).ClaimPolicy(extv1beta1.ClaimPolicy{AllowedAnnotationDomains: domains(33)}).Obj(),
			wantErrs: []string{"spec.claimPolicy.allowedAnnotationDomains", "must have at most 32 items"},
		},
		"no podTemplate": {
			obj: fromYAML(t, ns, `
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata:
  name: no-pod-template
spec:
  envVarsInjectionPolicy: Allowed
`),
			wantErrs: []string{"spec.podTemplate: Required value"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := env.Client.Create(t.Context(), tc.obj)
			checkErr(t, "Creating template "+tc.obj.GetName(), err, tc.wantErrs)
		})
	}
}

func TestSandboxTemplateUpdateValidation(t *testing.T) {
	ns := env.NewNamespace(t)
	long := "t" + strings.Repeat("a", 238) // 239 characters
	cases := map[string]struct {
		template *testutil.TemplateWrapper
		update   func(*extv1beta1.SandboxTemplate)
		wantErrs []string // empty: the update is accepted
	}{
		"managing the network policy of a template with a long name": {
			template: testutil.MakeTemplate(long, ns).NetworkPolicyManagement(extv1beta1.NetworkPolicyManagementUnmanaged),
			update: func(tpl *extv1beta1.SandboxTemplate) {
				tpl.Spec.NetworkPolicyManagement = extv1beta1.NetworkPolicyManagementManaged
			},
			wantErrs: []string{msgTemplateName},
		},
		// A template's volume claim templates, unlike a Sandbox's, may change: they apply to
		// sandboxes built afterwards.
		"changing volume claim templates": {
			template: testutil.MakeTemplate("vct-change", ns).VolumeClaimTemplate("data", "1Gi"),
			update: func(tpl *extv1beta1.SandboxTemplate) {
				tpl.Spec.VolumeClaimTemplates[0].Metadata.Name = "workspace"
			},
		},
		"changing the pod template and policies": {
			template: testutil.MakeTemplate("change", ns),
			update: func(tpl *extv1beta1.SandboxTemplate) {
				tpl.Spec.PodTemplate.Spec.Containers[0].Image = "registry.invalid/other:2"
				tpl.Spec.EnvVarsInjectionPolicy = extv1beta1.EnvVarsInjectionPolicyAllowed
				tpl.Spec.NetworkPolicy = &extv1beta1.NetworkPolicySpec{}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			tpl := tc.template.Obj()
			if err := env.Client.Create(ctx, tpl); err != nil {
				t.Fatalf("Creating template: %v", err)
			}
			tc.update(tpl)
			checkErr(t, "Updating template", env.Client.Update(ctx, tpl), tc.wantErrs)
		})
	}
}

// domains returns n distinct domains.
func domains(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("d%d.example.com", i)
	}
	return out
}
