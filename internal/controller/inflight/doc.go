// Package inflight is the controllers' memory of what they did and their informer cache does not
// show yet. A reconciler reads from a cache that lags behind the API server, so a pass that runs
// right after another sees the world as it was before the other's writes, and would act on it
// again. None of this memory is needed for correctness, which rests on the API server
// (optimistically locked writes, owner references, preconditions); it saves duplicate writes,
// conflicts and over-creation while the cache catches up, and a restarted controller, whose cache
// starts from a fresh list, does without it.
//
// Every type here is a Store underneath and shares its discipline: one mutex per store, so each
// method is one atomic step and safe for concurrent use by workers and event handlers; every entry
// stamped with when it was last touched, on the controller's injected clock; entries that can go
// stale expire (after a type-specific time, an informer event can be lost when a watch re-lists,
// and no controller may wait for it forever), and a store past a size bound sweeps its expired
// entries; Forget drops everything about an object that is gone.
//
// Which one applies:
//   - Versions, the cache lag after our own write to an object: it remembers the resourceVersion a
//     write replaced, and while the cache still shows that version the pass is skipped (the newer
//     version's event is on its way). The Sandbox controller uses it for the Pods whose metadata it
//     patches and the Sandboxes it annotates and writes the status of, the SandboxClaim controller
//     for the claims whose status it writes.
//   - Expectations, expected creations and deletions of children: a reconciler that creates or
//     deletes N children from a count (the warm pool) acts only when the cache shows every child it
//     created or deleted before, so a burst of events never makes it over-create. This is
//     Kubernetes' UIDTrackingControllerExpectations.
//   - Reservations, objects a worker of this process is taking: the SandboxClaim controller's
//     workers reserve the warm-pool member they bind, so two workers never try the same one, and a
//     member bound or lost to a conflict is skipped until the cache shows its next version.
//   - Store itself, for the rest of what a controller keeps per object between passes: the claim
//     controller's sandbox it just bound or created (waited for while recent), its latency
//     timeline, and its memo of template hashes.
package inflight
