package sandboxclaim

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

func TestValidateAdditionalPodMetadata(t *testing.T) {
	configured := metadataDomains{labels: []string{"sandbox.users.io", "example.com"}, annotations: []string{"sandbox.users.io", "example.com"}}
	md := func(labels, annotations map[string]string) extv1beta1.AdditionalPodMetadata {
		return extv1beta1.AdditionalPodMetadata{Labels: labels, Annotations: annotations}
	}
	istio := extv1beta1.ClaimPolicy{AllowedAnnotationDomains: []string{"sidecar.istio.io"}, AllowedLabelDomains: []string{"team.example.org"}}
	cases := map[string]struct {
		md          extv1beta1.AdditionalPodMetadata
		policy      *extv1beta1.ClaimPolicy // the template's claimPolicy
		configured  *metadataDomains        // the controller's; nil: configured above
		wantMessage string                  // "" means valid; otherwise a substring of the InvalidMetadata message
	}{
		"nothing is valid": {},
		"labels in allowed domains and subdomains, and the template's own values, are valid": {
			md: md(map[string]string{"sandbox.users.io/user": "u1", "eu.example.com/zone": "z", "sandbox.users.io/team": "a"},
				map[string]string{"example.com/owner": "ops", "sandbox.users.io/note": "yes", extv1beta1.SafeToEvictAnnotation: "false"}),
		},
		"safe-to-evict is allowed with no annotation domain at all": {
			md: md(nil, map[string]string{extv1beta1.SafeToEvictAnnotation: "true"}), configured: &metadataDomains{},
		},
		"a runtime's dotted annotation without a slash is rejected": {
			md: md(nil, map[string]string{"io.kubernetes.cri-o.userns-mode": "auto"}), wantMessage: "key io.kubernetes.cri-o.userns-mode is not in an annotation domain allowed for SandboxTemplate python (allowed: sandbox.users.io, example.com)",
		},
		"kata's and gVisor's dotted annotations without a slash are rejected": {
			md:          md(nil, map[string]string{"io.katacontainers.config.hypervisor.kernel_params": "x", "dev.gvisor.spec.mount.x.share": "shared"}),
			wantMessage: "key dev.gvisor.spec.mount.x.share is not in an annotation domain",
		},
		"annotations without a domain (the end user's, as agent-sandbox allows) are valid": {
			md: md(nil, map[string]string{"owner": "alice", "note": "run 7", "Team_ID": "a-1"}), configured: &metadataDomains{},
		},
		"a label without a domain is still rejected when the same key is fine as an annotation": {
			md: md(map[string]string{"owner": "alice"}, map[string]string{"owner": "alice"}), wantMessage: "additionalPodMetadata.labels key owner",
		},
		"a multus network annotation is rejected by default": {
			md: md(nil, map[string]string{"k8s.v1.cni.cncf.io/networks": "other/net"}), wantMessage: "spec.claimPolicy.allowedAnnotationDomains",
		},
		"a Calico IP pool annotation is rejected by default": {
			md: md(nil, map[string]string{"cni.projectcalico.org/ipv4pools": `["other"]`}), wantMessage: "key cni.projectcalico.org/ipv4pools",
		},
		"an Istio annotation is rejected by default": {
			md: md(nil, map[string]string{"sidecar.istio.io/inject": "false"}), wantMessage: "key sidecar.istio.io/inject",
		},
		"with no domain configured, the message says none": {
			md: md(nil, map[string]string{"example.com/x": "1"}), configured: &metadataDomains{}, wantMessage: "(none)",
		},
		"the template's claimPolicy adds annotation and label domains": {
			md:     md(map[string]string{"team.example.org/x": "1"}, map[string]string{"sidecar.istio.io/inject": "false", "example.com/y": "2"}),
			policy: &istio,
		},
		"the template's claimPolicy names its domains in the message": {
			md: md(nil, map[string]string{"k8s.v1.cni.cncf.io/networks": "x"}), policy: &istio,
			wantMessage: "(allowed: sandbox.users.io, example.com, sidecar.istio.io)",
		},
		"a domain the template allows for annotations is not one for labels": {
			md: md(map[string]string{"sidecar.istio.io/x": "1"}, nil), policy: &istio, wantMessage: "spec.claimPolicy.allowedLabelDomains",
		},
		"a label without a domain is rejected": {
			md: md(map[string]string{"app": "sandbox-router"}, nil), wantMessage: "key app is not in a label domain allowed for SandboxTemplate python",
		},
		"a label in another domain is rejected": {
			md: md(map[string]string{"evil.io/x": "1"}, nil), wantMessage: "key evil.io/x is not in a label domain allowed",
		},
		"a domain that merely ends like an allowed one is rejected": {
			md: md(map[string]string{"notexample.com/x": "1"}, nil), wantMessage: "key notexample.com/x",
		},
		"a reserved label is rejected": {
			md: md(map[string]string{"agents.x-k8s.io/claim-uid": "x"}, nil), wantMessage: "agents.x-k8s.io/claim-uid is reserved",
		},
		"a label overriding the template's value is rejected": {
			md: md(map[string]string{"sandbox.users.io/team": "b"}, nil), wantMessage: `would override the value "a"`,
		},
		"an annotation overriding the template's value is rejected": {
			md: md(nil, map[string]string{"example.com/owner": "me"}), wantMessage: `would override the value "ops"`,
		},
		"a reserved annotation is rejected": {
			md: md(nil, map[string]string{"kubernetes.io/x": "1"}), wantMessage: "kubernetes.io/x is reserved",
		},
		"the first offending key, in order, is named": {
			md: md(map[string]string{"z.io/b": "1", "a.io/a": "1"}, nil), wantMessage: "key a.io/a",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tw := makeTemplate().PodLabel("sandbox.users.io/team", "a").PodAnnotation("example.com/owner", "ops")
			if tc.policy != nil {
				tw = tw.ClaimPolicy(*tc.policy)
			}
			domains := configured
			if tc.configured != nil {
				domains = *tc.configured
			}
			f := validateAdditionalPodMetadata(tc.md, tw.Obj(), domains)
			switch {
			case tc.wantMessage == "" && f != nil:
				t.Errorf("validateAdditionalPodMetadata() = %v; want valid", f)
			case tc.wantMessage != "" && (f == nil || f.reason != "InvalidMetadata" || !strings.Contains(f.message, tc.wantMessage)):
				t.Errorf("validateAdditionalPodMetadata() = %v; want InvalidMetadata containing %q", f, tc.wantMessage)
			}
		})
	}
}

func TestWithAdditionalPodMetadata(t *testing.T) {
	tpl := sandboxv1beta1.PodMetadata{Labels: map[string]string{"a": "1"}}
	got := withAdditionalPodMetadata(tpl, extv1beta1.AdditionalPodMetadata{
		Labels: map[string]string{"b": "2"}, Annotations: map[string]string{"c": "3"},
	})
	want := sandboxv1beta1.PodMetadata{Labels: map[string]string{"a": "1", "b": "2"}, Annotations: map[string]string{"c": "3"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("withAdditionalPodMetadata() mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"a": "1"}, tpl.Labels); diff != "" {
		t.Errorf("the template's labels were changed (-want +got):\n%s", diff)
	}
}
