// Package sandboxtemplate implements the SandboxTemplate controller: it labels each template with
// its name hash and keeps the NetworkPolicy that confines the template's Pods.
//
// A SandboxTemplate has no status; the controller keeps two things for it. It labels the template
// itself with agents.x-k8s.io/sandbox-template-ref-hash, the name hash that the template's
// sandboxes and their Pods carry too. And, while spec.networkPolicyManagement is Managed, it keeps
// one NetworkPolicy named <template>-network-policy, controlled by the template, that selects the
// template's Pods by that label and confines them in both directions: with spec.networkPolicy's
// rules when set (an empty list denies that direction), otherwise with a secure default that lets
// in only the sandbox router and lets out only cluster DNS and the public internet (no private,
// shared, link-local, loopback or cloud metadata addresses). The router's and the DNS servers'
// namespace and labels come from the controller configuration (networkPolicy.router and
// networkPolicy.clusterDNS).
//
// Drift of that NetworkPolicy is patched back to exactly what the template asks for. When the
// template becomes Unmanaged the controller deletes the NetworkPolicy it controls; a
// NetworkPolicy with that name that it does not control is never changed or deleted: while the
// template is Managed it is reported with a Warning event instead. Deleting the template leaves
// the NetworkPolicy to the garbage collector, through its owner reference.
//
// # Why no server-side apply
//
// The NetworkPolicy is created with Create: AlreadyExists is how the controller learns of a
// policy with that name it does not control, which it must never write, and an apply would write
// into it. Drift is repaired by one merge patch that replaces the whole spec at the policy's
// resourceVersion: rules someone added must go, and an apply would keep every field owned by
// another manager (an added podSelector label would leave sandboxes unconfined) unless forced.
// The template's own label is set by a merge patch, once.
package sandboxtemplate
