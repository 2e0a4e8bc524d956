package v1beta1

import (
	"strings"

	utilrand "k8s.io/apimachinery/pkg/util/rand"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// Annotation keys of the extensions shared with agent-sandbox. The label keys that sandboxes built
// by the extensions carry (warm-pool-sandbox, sandbox-template-ref-hash, launch-type, ...) are in
// api/v1beta1, next to the Sandbox's own.
const (
	// SandboxNameAnnotation on a claim names the warm sandbox it is binding or has bound. It is
	// written, with optimistic concurrency, before the sandbox is taken from its pool.
	SandboxNameAnnotation = "agents.x-k8s.io/sandbox-name"
	// DeprecatedSandboxNameLabel is the label form of SandboxNameAnnotation that older
	// agent-sandbox releases wrote on claims; it is read and moved to the annotation.
	DeprecatedSandboxNameLabel = "agents.x-k8s.io/sandbox-name"
	// ControllerFirstObservedAtAnnotation on a claim is when the controller first saw it
	// (RFC 3339 with nanoseconds), the start of the controller latency metric.
	ControllerFirstObservedAtAnnotation = "agents.x-k8s.io/controller-first-observed-at"
	// ClientFirstRequestedAtAnnotation on a claim is when the client SDK first asked for it
	// (RFC 3339 with nanoseconds), the start of the client latency metric.
	ClientFirstRequestedAtAnnotation = "agents.x-k8s.io/client-first-requested-at"
	// ClaimFirstReadyAtAnnotation on a claim is when it first became Ready; it keeps the latency
	// metrics from being observed twice.
	ClaimFirstReadyAtAnnotation = "agents.x-k8s.io/claim-first-ready-at"
	// SafeToEvictAnnotation is sandboxv1beta1.SafeToEvictAnnotation, which the Sandbox
	// controller sets on a warm pool's unclaimed Pods. It is the one annotation under
	// kubernetes.io a claim's additionalPodMetadata may set.
	SafeToEvictAnnotation = sandboxv1beta1.SafeToEvictAnnotation
)

// Values of sandboxv1beta1.LaunchTypeLabel.
const (
	// LaunchTypeWarm: the claim's sandbox was taken ready from a warm pool.
	LaunchTypeWarm = "warm"
	// LaunchTypeCold: the claim's sandbox was created for it.
	LaunchTypeCold = "cold"
)

// Values of sandboxv1beta1.CreatedByLabel.
const (
	// CreatedByGoClient: created through agent-sandbox's Go client.
	CreatedByGoClient = "go-client"
	// CreatedByPythonClient: created through agent-sandbox's Python client.
	CreatedByPythonClient = "python-client"
	// CreatedByTypeScriptClient: created through kubox's TypeScript SDK (@kubox/sdk). kubox
	// addition: agent-sandbox's metrics count it as unknown.
	CreatedByTypeScriptClient = "typescript-client"
	// CreatedByController: created by a controller (a pool member or a claim's sandbox).
	CreatedByController = "controller"
	// CreatedByUnknown: any other client.
	CreatedByUnknown = "unknown"
)

// networkPolicySuffix ends the name of a template's NetworkPolicy.
const networkPolicySuffix = "-network-policy"

// MaxManagedTemplateNameLength is the longest name a SandboxTemplate may have while its
// NetworkPolicy is managed: NetworkPolicyName must stay within the 253 characters of an object
// name. The CRD enforces it.
const MaxManagedTemplateNameLength = 253 - len(networkPolicySuffix)

// NetworkPolicyName is the name of the NetworkPolicy the controller keeps for template.
func NetworkPolicyName(template string) string {
	return template + networkPolicySuffix
}

// WarmPoolMemberGenerateName is the metadata.generateName of pool's members.
func WarmPoolMemberGenerateName(pool string) string {
	return pool + "-"
}

// WarmPoolMemberName returns a new name for a member of pool: its generateName, cut as the API
// server cuts one, and five random characters, as the API server would append them. The pool
// names its members itself so that it knows, when it creates one, the name of the member's Pod
// (the Pod is named after its Sandbox) and sets the pod-name annotation in the same write.
func WarmPoolMemberName(pool string) string {
	const random, maxName = 5, 63
	prefix := WarmPoolMemberGenerateName(pool)
	if len(prefix) > maxName-random {
		prefix = prefix[:maxName-random]
	}
	return prefix + utilrand.String(random)
}

// WarmPoolSelector is the label selector, as a string, that matches pool's members: the pool's
// status.selector, which its scale subresource reports.
func WarmPoolSelector(pool string) string {
	return sandboxv1beta1.WarmPoolSandboxLabel + "=" + sandboxv1beta1.NameHash(pool)
}

// reservedDomains are the key prefixes, with their subdomains, that a claim's
// additionalPodMetadata may not use. extensions.agents.x-k8s.io is a subdomain of the first.
var reservedDomains = []string{"agents.x-k8s.io", "kubernetes.io", "k8s.io"}

// IsReservedClaimLabelKey reports whether key, as a label in a claim's additionalPodMetadata, is
// reserved: its prefix is agents.x-k8s.io, kubernetes.io, k8s.io or a subdomain of one. The CRD
// rejects such claims; this is the same rule for code that reads claims.
func IsReservedClaimLabelKey(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, d := range reservedDomains {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			return true
		}
	}
	return false
}

// IsReservedClaimAnnotationKey reports whether key, as an annotation in a claim's
// additionalPodMetadata, is reserved: as for labels, except SafeToEvictAnnotation.
func IsReservedClaimAnnotationKey(key string) bool {
	return key != SafeToEvictAnnotation && IsReservedClaimLabelKey(key)
}

// IsEndUserAnnotationKey reports whether an annotation key is the end user's: a bare name, with no
// domain prefix and no dot (owner, note). Kubernetes gives such keys no meaning and no network
// plugin, mesh or container runtime acts on them, so a claim may set them on its Pod as
// agent-sandbox lets it. A dotted name without a slash is not one: container runtimes read such
// reverse-DNS names (io.kubernetes.cri-o.*, io.katacontainers.*, dev.gvisor.*).
func IsEndUserAnnotationKey(key string) bool {
	return key != "" && !strings.ContainsAny(key, "/.")
}

// LaunchedWarm reports whether a claimed sandbox with these labels was taken from a warm pool
// (launch-type warm) rather than created for its claim.
func LaunchedWarm(labels map[string]string) bool {
	return labels[sandboxv1beta1.LaunchTypeLabel] == LaunchTypeWarm
}
