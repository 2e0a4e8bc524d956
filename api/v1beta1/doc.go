// Package v1beta1 holds the Sandbox API (agents.x-k8s.io/v1beta1): one pod with a stable name and
// hostname, optional persistent volumes, and a lifecycle (create, suspend, resume, expire, delete).
// The types are wire-compatible with kubernetes-sigs/agent-sandbox; kubox-only fields are optional
// and marked as such in their documentation.
//
// +kubebuilder:object:generate=true
// +groupName=agents.x-k8s.io
package v1beta1
