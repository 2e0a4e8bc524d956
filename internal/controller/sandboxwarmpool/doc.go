// Package sandboxwarmpool implements the SandboxWarmPool controller: it keeps a pool's ready,
// unclaimed members built from its template's current blueprint.
//
// A pool keeps spec.replicas ready, unclaimed Sandboxes (its members) built from the
// SandboxTemplate that spec.sandboxTemplateRef names, so that a SandboxClaim gets a running
// sandbox in milliseconds instead of waiting for a Pod to start.
//
// Membership is ownership: a pool's members are the Sandboxes whose controller owner reference is
// the pool. It creates them with generateName <pool>-, the template's blueprint with kubox's secure
// defaults, and the labels claims and NetworkPolicies select them by (warm-pool-sandbox,
// sandbox-template-ref-hash, sandbox-template-hash, launch-type=warm, created-by=controller). A
// claim binds a member by replacing that owner reference with its own in one optimistically locked
// patch; from then on the sandbox is the claim's, and the pool never touches it again: it only sees
// one member fewer and creates a replacement. Deleting the pool deletes its unclaimed members
// through their owner references. Unowned Sandboxes labelled as the pool's members (left behind by
// a pool deleted with orphan propagation) are adopted; Sandboxes another controller owns are
// ignored.
//
// Each pass observes the members from the informer cache (the controller-UID index), and acts only
// when every create and delete of earlier passes has been observed (package inflight), so a
// burst of claims never makes the pool create more members than it needs. It then plans, as a pure
// function of what it observed:
//   - members not Ready for longer than the readiness grace period are replaced, except those whose
//     Pod cannot be scheduled: replacing them would only churn, so they are held and reported
//     (Ready=False/MembersUnschedulable and a Warning event) and looked at again every
//     unschedulable recheck interval (readinessgraceperiod.go);
//   - members built from an older template (their sandbox-template-hash label differs from the
//     hash of the current blueprint) are kept (OnReplenish), deleted at once (Recreate) or replaced
//     within maxSurge and maxUnavailable (RollingUpdate) (updatestrategy.go);
//   - missing members are created and excess ones deleted, not-ready first, then stale, then newest
//     (replicas.go).
//
// Refill yields to claims (refill.go): each member a claim takes re-arms a hold of replenishDelay
// on its pool, during which the pool creates nothing, so a claim's two writes do not queue in the
// API server behind the writes of refilling the members just taken; when the hold runs out the
// whole deficit is created in one batch. A hold lasts at most five delays, and at most one once
// the pool has no Ready member. maxRefillRate, when set, paces creations with a per-pool token
// bucket. Creates and deletes go out in parallel slow-start batches (1, 2, 4, ...) that stop at
// the first error; a pass creates at most maxBatchSize members. Deletes carry the member's UID and
// resourceVersion as preconditions, so a member a claim bound in the meantime is never deleted.
// Timers (RequeueAfter) bring the pool back when a grace period or a progress deadline ends; there
// is no polling. The status (replicas, readyReplicas, updatedReplicas, selector for the scale
// subresource, observedGeneration, and the Ready and Progressing conditions) is computed from the
// observation (status.go) and written once per pass with optimistic concurrency (package status),
// after which the pass's events are emitted.
//
// # Why no server-side apply
//
// Members are created under a name the pool draws itself (<pool>- and five random characters,
// as generateName would give, so that the pod-name annotation comes with the creation). Creating
// must fail when the name is taken (the pool then draws another), where an apply would take over
// the Sandbox already there. After creation the pool never writes a member's spec (a member whose spec changed
// is deleted and replaced); the one other write, adopting an orphaned member, is a merge patch at
// the member's resourceVersion, so two controllers racing to adopt cannot both win, which an apply
// without that precondition would allow.
package sandboxwarmpool
