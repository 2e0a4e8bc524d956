// Package sandboxclaim implements the SandboxClaim controller: it binds a claim to a warm pool's
// member or starts a sandbox for it, and mirrors that sandbox's state and lifetime on the claim.
//
// A claim asks for a sandbox. When it names a warm pool (spec.warmPoolRef) and sets no volume
// claim templates, and no env other than what its sandbox's agent can take (below), the
// controller binds one of the pool's members that is Ready and built from the template's current
// blueprint: one merge patch of the member, carrying the resourceVersion the controller read,
// makes the claim its controller, takes it out of the pool (the warm-pool-sandbox label goes) and
// adds the claim's pod metadata and idlePolicy. Only one write at that version can win, so a
// sandbox is bound to at most one claim whatever processes race for it; a lost race moves on to
// another member. The Sandbox controller then relabels the running Pod in place (it is not
// restarted), and the pool, which no longer owns the member, creates a replacement. Candidates
// come from a cache index of ready members per pool, never from a list of the namespace.
//
// Otherwise (no ready fresh member, a claim naming a template with spec.sandboxTemplateRef, or
// env for a container other than the agent's, or volume claim templates, to merge) the
// controller creates a Sandbox named like the claim, from the template, with the claim's env,
// volume claim templates and idlePolicy merged as the template's policies allow.
//
// A claim's settings, its secretFiles and the env of a warm sandbox, reach the running sandbox
// through its kubox-agent (SettingsService, settings.go): once the sandbox is Ready the controller
// reads the Secrets from the API server (it caches none) and sends them, with the env, to the
// agent; the claim is Ready only after the agent took them (Ready=False/SettingsPending, retried
// with backoff, until then). A secretFiles path outside the template's
// claimPolicy.allowedSecretFilePaths fails the claim (SecretFilesRejected); whether the claim's
// creator may read each Secret is checked at admission (config/admission). A claim finds its sandbox by owner reference, so a controller restarted between
// binding and writing the claim's status finds the bound sandbox and never binds a second one.
// A missing pool or template, a rule the claim breaks, or a foreign Sandbox with the claim's name
// leaves the claim without a sandbox and Ready=False with a claim reason, until a watched change
// (the pool or template appearing) lets it proceed.
//
// The claim mirrors its sandbox's Ready (with the claim's generation) and Finished conditions,
// name and Pod IPs, and enforces spec.lifecycle with timers: at the earlier of shutdownTime and
// ttlSecondsAfterFinished after the sandbox finished, Retain deletes the sandbox and keeps the
// claim (Ready=False/ClaimExpired), Delete and DeleteForeground delete the claim.
//
// A warm claim costs two API writes on its way to Ready: the bind and the claim's status, with or
// without settings (the agent call is not an API write). The optional writes — agent-sandbox's
// observability annotations and the Events — yield to the claims (yield.go): they are queued and
// sent only when no claim waits for the controller, so on a saturated API server they never sit
// ahead of a claim's bind or status write.
// Latency bookkeeping stays in memory (no first-observed or first-ready annotations), and is
// exported as agent-sandbox's claim metrics and kubox_claim_phase_seconds. Each pass is an
// OpenTelemetry span continuing the claim's opentelemetry.io/trace-context, when it has one.
//
// Each pass moves the claim through explicit states (state.go: Unbound, Waiting, Bound, Failed,
// Expired, Deleted), computes the status from them and writes it once (package status); events go
// out only once that write succeeded. What the controller remembers between passes (reservations
// of members, the sandbox just bound, the version of its last status write, latency timelines,
// template hashes) is in-memory only (package inflight).
//
// # Why no server-side apply
//
// The Sandboxes a claim binds or creates are written with a merge patch and a create, because an
// apply would cost the claim path a write or its exclusion:
//   - The bind: it must remove the pool's owner reference and the warm-pool-sandbox label, fields
//     the pool's field manager owns. An apply removes only fields its own manager applied before,
//     so it could not take the member out of the pool in one write; and the bind's exclusion (one
//     claim per member) is the merge patch's resourceVersion precondition.
//   - The cold Sandbox: created with Create, named like the claim, so that AlreadyExists tells the
//     controller a Sandbox of that name exists; one the claim does not control is left alone and
//     reported (AdoptionConflict). An apply is create-or-update and would write into it.
package sandboxclaim
