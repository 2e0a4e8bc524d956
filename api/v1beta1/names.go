package v1beta1

import (
	"fmt"
	"hash/fnv"
)

// Label keys shared with agent-sandbox. Values are computed exactly as agent-sandbox computes them.
const (
	// SandboxNameHashLabel is set on a sandbox's Pod, Service and PVCs to NameHash(sandbox name).
	SandboxNameHashLabel = "agents.x-k8s.io/sandbox-name-hash"
	// WarmPoolSandboxLabel marks a Sandbox and its Pod as members of a warm pool (NameHash of the pool).
	WarmPoolSandboxLabel = "agents.x-k8s.io/warm-pool-sandbox"
	// SafeToEvictAnnotation set to "true" on a warm pool's unclaimed Pods (a Sandbox with
	// WarmPoolSandboxLabel) lets the cluster autoscaler evict them; it goes when a claim takes the
	// sandbox, unless its pod template sets it.
	SafeToEvictAnnotation = "cluster-autoscaler.kubernetes.io/safe-to-evict"
	// SandboxTemplateRefHashLabel is NameHash of the template a sandbox was built from.
	SandboxTemplateRefHashLabel = "agents.x-k8s.io/sandbox-template-ref-hash"
	// SandboxTemplateHashLabel is the staleness hash of the blueprint a pool member was built from.
	SandboxTemplateHashLabel = "agents.x-k8s.io/sandbox-template-hash"
	// LaunchTypeLabel says whether a claimed sandbox came from a pool ("warm") or was created ("cold").
	LaunchTypeLabel = "agents.x-k8s.io/launch-type"
	// CreatedByLabel names the kind of client that created an object.
	CreatedByLabel = "agents.x-k8s.io/created-by"
	// ClaimUIDLabel is the UID of the claim that owns a sandbox.
	ClaimUIDLabel = "agents.x-k8s.io/claim-uid"
	// AdoptableLabel set to "true" lets the Sandbox controller adopt a pre-existing unowned Pod,
	// Service or PVC.
	AdoptableLabel = "agents.x-k8s.io/adoptable"
)

// Annotation keys shared with agent-sandbox.
const (
	// PodNameAnnotation on a Sandbox names the Pod that backs it.
	PodNameAnnotation = "agents.x-k8s.io/pod-name"
	// SandboxTemplateRefAnnotation on a Sandbox names the template it was built from.
	SandboxTemplateRefAnnotation = "agents.x-k8s.io/sandbox-template-ref"
	// PropagatedLabelsAnnotation on a Pod lists (sorted, comma-separated) the label keys copied from
	// the sandbox's podTemplate, so keys removed from the template can be removed from the Pod.
	PropagatedLabelsAnnotation = "agents.x-k8s.io/propagated-labels"
	// PropagatedAnnotationsAnnotation is PropagatedLabelsAnnotation for annotations.
	PropagatedAnnotationsAnnotation = "agents.x-k8s.io/propagated-annotations"
	// TraceContextAnnotation carries a W3C trace context as JSON ({"traceparent": ...}).
	TraceContextAnnotation = "opentelemetry.io/trace-context"
)

// kubox's own keys.
const (
	// SandboxNameLabel is set on a sandbox's Pod to the full sandbox name. The headless Service
	// selects by it, because a 32-bit name hash can collide within a namespace.
	SandboxNameLabel = "kubox.dev/sandbox-name"
	// ForkOfLabel is on a Sandbox forked from another (the kubox SDKs' and CLI's fork): the source
	// Sandbox's name. kubox addition.
	ForkOfLabel = "kubox.dev/fork-of"
)

// Reserved key prefixes: keys under them in a user's podTemplate.metadata are ignored.
const (
	// AgentsPrefix is the prefix of agent-sandbox's own label and annotation keys.
	AgentsPrefix = "agents.x-k8s.io/"
	// ExtensionsPrefix is the prefix of the extensions group's keys.
	ExtensionsPrefix = "extensions.agents.x-k8s.io/"
)

// NameHash returns the FNV-1a 32-bit hash of name as 8 lowercase hex digits, the value of
// SandboxNameHashLabel and the other *-hash labels.
func NameHash(name string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name)) // hash.Hash never returns an error
	return fmt.Sprintf("%08x", h.Sum32())
}

// PVCName is the name of the PersistentVolumeClaim made from volume claim template vct for sandbox.
func PVCName(vct, sandbox string) string {
	return vct + "-" + sandbox
}
