// Package v1beta1 holds the extensions API (extensions.agents.x-k8s.io/v1beta1) built on top of
// Sandboxes: SandboxTemplate (a reusable sandbox blueprint with a network policy and rules for
// what claims may add), SandboxWarmPool (a set of ready, unclaimed sandboxes built from a
// template) and SandboxClaim (a request for a sandbox, served from a warm pool or started cold).
// The types are wire-compatible with kubernetes-sigs/agent-sandbox; kubox-only fields are
// optional and marked as such in their documentation.
//
// +kubebuilder:object:generate=true
// +groupName=extensions.agents.x-k8s.io
package v1beta1
