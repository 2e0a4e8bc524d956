// Package wake is kubox-router's lifecycle: the only code in the router that writes a Sandbox's
// or SandboxClaim's lifecycle to the Kubernetes API, and the one way the router waits for the
// cache to show a lifecycle change.
//
//   - Writer builds every lifecycle patch the router sends: the resume of a suspended sandbox a
//     request wakes and the kubox.dev/last-activity annotation (with the router's own client and
//     field manager), and, for E2B's control API, operatingMode and a claim's shutdownTime (with
//     the caller's client, so the caller's RBAC decides).
//   - Waker resumes a suspended sandbox once however many requests wait for it, and holds them
//     until it is Ready for the resumed generation, its Pod is in the cache and its claim's
//     settings are in that Pod (SandboxClaimSpec.TakesSettings); Tracker keeps last-activity
//     fresh at a bounded cost.
//   - Events turns the informer cache's events into wake-ups: every wait (a wake, E2B's create,
//     pause, resume and kill) looks at the cache again when an object it depends on changed, and
//     never on a timer.
//
// It imports nothing of the router's root package: reads of the cache and the checks that need
// it are passed in as functions.
package wake
