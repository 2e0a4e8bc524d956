// Package e2b is kubox-router's E2B facade: E2B's control API and the routing of E2B's sandbox
// hosts to envd. The API is served on the host "api.{domain}" (create, list, get, kill,
// set-timeout, pause, resume and connect of sandboxes, each E2B sandbox a SandboxClaim), and
// "{port}-{id}.{domain}" reaches that port of the claim's sandbox, envd's being kubox-agent's E2B
// port, so an E2B program needs only E2B_DOMAIN and E2B_API_KEY changed (docs/e2b.md).
//
// The API acts with each caller's own Kubernetes token (NewClient), never with the router's
// rights; its lifecycle writes go through internal/router/wake's writer and its waits (a create
// or resume until Ready, a pause until Suspended, a kill until the claim is gone) wake on the
// informer cache's events (wake.Events), never on a timer. What only the router can do (review a
// token, mint a claim token, read its cache) it is lent as functions (Deps): it imports nothing
// of the router's root package.
package e2b
