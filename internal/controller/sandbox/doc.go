// Package sandbox implements the Sandbox controller: it keeps each Sandbox's one Pod, Service and
// volumes, and its suspend, resume, expiry and status.
//
// For every Sandbox it owns, through controller owner references, one Pod and optionally one
// headless Service, both named like the Sandbox, and one PersistentVolumeClaim per volume claim
// template, named <template>-<sandbox>. The Pod is created from spec.podTemplate and never
// updated afterwards except for its labels and annotations; suspending deletes it and resuming
// creates it again with the same name and volumes. At spec.shutdownTime the Pod and Service are
// deleted and spec.shutdownPolicy decides whether the Sandbox stays (Ready=False/SandboxExpired)
// or goes. Pre-existing objects are adopted only when unowned and labelled adoptable (or carrying
// the Sandbox's name-hash label); objects controlled by anything else are never touched.
//
// Each pass observes the children, acts on them, computes the status as a pure function of what
// it observed (status.go) and writes it once with optimistic concurrency (package status), after
// which it emits the pass's events.
//
// With usage metering on (WithUsage), the status a pass writes also carries status.usage, the
// sandbox's figures from usage metering's Tracker, renewed only at a suspend and at most once
// every summary interval while it runs (usage.go), so it rides on the pass's one write.
//
// # Why no server-side apply
//
// STYLE.md prefers server-side apply for objects kubox fully owns. The Sandbox's children do not
// use it, each for a reason:
//   - Pod, Service, PersistentVolumeClaim, agent-token Secret: they are created with Create, whose
//     AlreadyExists is what sends a name clash through the adoption rules (adoption.go): an object
//     that someone else made is adopted only when unowned and labelled adoptable, and is never
//     written otherwise. An apply is create-or-update, and would write into that object.
//   - Pod labels and annotations: the one change after creation is one merge patch of the keys
//     that differ, skipped while the cache lags behind the last one (package inflight). An apply
//     would also be one write, but the keys were set by Create, an Update-type managed-fields
//     entry the apply does not own: dropping a propagated key would need forced ownership, which
//     also takes the keys that users and other tools add to the Pod, and which the merge patch
//     leaves alone.
//   - Service drift: repaired by one merge patch only when the selector, the ports or the labels
//     differ, the same single write an apply would make; reclaiming fields another manager
//     changed would need forced ownership, which is what the patch does already.
//   - PersistentVolumeClaims are never updated (the templates are immutable); the agent-token
//     Secret is updated, rarely (a rotated key), with its resourceVersion, so a concurrent change
//     is never overwritten blindly.
package sandbox
