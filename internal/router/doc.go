// Package router is kubox-router: the HTTP entry point that takes clients outside a Pod to a
// sandbox, compatible with kubernetes-sigs/agent-sandbox's sandbox-router (same Service name and
// port, same headers, same metric names). docs/router.md is the user's guide.
//
// # Routes (main listener)
//
// A request is routed by the first of these that applies:
//
//   - Host "{port}-{id}.{Config.PreviewDomain}": that port of the sandbox whose preview id
//     (contract.PreviewID of its UID) is id; path and Host forwarded unchanged.
//   - Path "{Config.PathRoutingPrefix}/{ns}/{name}/{port}/{rest...}" (browsers, with a session
//     cookie; off without a prefix): that port, path /{rest...} with its escaping; the agent's
//     ports are refused. "{prefix}/{ns}/{name}/kubox-session" mints and redeems the session's
//     one-use ticket. See internal/router/pathroute.
//   - Header X-Sandbox-ID (agent-sandbox's contract; X-Sandbox-Namespace, default "default";
//     X-Sandbox-Port, default 8888): path forwarded unchanged.
//   - GET /healthz, GET /readyz, POST /v1/claims/{ns}/{name}/token (mints a claim token).
//   - /sandboxes/{ns}/{name}/{rest...} and /claims/{ns}/{name}/{rest...}: the sandbox's agent
//     port (or X-Sandbox-Port), path forwarded as /{rest...}.
//
// X-Sandbox-Timeout (seconds) bounds the whole request on any route, at most Config.ProxyTimeout.
// Destinations come from an informer cache of Sandboxes and SandboxClaims: status.podIPs[0] of a
// sandbox whose Ready condition is True. Nothing the client sends (X-Sandbox-Pod-IP,
// X-Sandbox-UID) chooses the address.
//
// # Idle policies
//
// For a Sandbox with spec.idlePolicy the router keeps the kubox.dev/last-activity annotation
// fresh (wake.Tracker: at most one write per max(suspendAfter/2, 15s), in the background), and a
// request for such a sandbox that is suspended with wake OnRequest resumes it, once however many
// requests wait, for a caller allowed to patch the Sandbox or holding its claim's token, and is
// proxied once the sandbox is Ready and, for a claim's sandbox that takes settings, its claim's
// settings are in the new Pod (wake.Waker; 504 after Config.WakeTimeout). internal/router/wake
// is the only code that writes lifecycle, and every wait wakes on the informer cache's events.
//
// # Packages
//
// This package routes (route.go, resolve.go, handler.go, and the checks of each route's kind:
// auth.go, previewguard.go, pathroute.go, cors.go) and wires (router.go, config.go, cache.go,
// observe.go, and the glue that lends the subpackages the router's checks: wake.go, e2b.go,
// dashboard.go, mint.go). Each job of its own is a subpackage, which imports nothing of this one:
// proxy (the reverse proxy), wake (lifecycle writes, wakes, activity, waits), e2b (E2B's control
// API and envd hosts), pathroute (browser path routing), ui (the dashboard), authn, claimtoken,
// httperr, metrics and cli.
//
// # Authentication and authorization
//
// The bearer token (and, on preview hosts, the kubox-token cookie) is tried as the shared
// token, then as a claim token (internal/router/claimtoken), then as a Kubernetes token
// (TokenReview, then SubjectAccessReview of create on sandboxes/connect or sandboxclaims/connect),
// see internal/router/authn. With Config.AllowUnauthenticatedHeaderRouting, X-Sandbox-ID requests
// need none. The sandbox never sees the client's credentials: the router removes Authorization,
// the kubox-token cookie, X-Sandbox-* and hop-by-hop headers and, for the agent's own ports,
// sends the sandbox's agent token (api/contract.DeriveAgentToken).
//
// # In-process use
//
//	cfg := router.DefaultConfig()
//	cfg.AgentTokenKey = key
//	rt, err := router.New(cfg, restConfig)
//	l, _ := net.Listen("tcp", "127.0.0.1:0")
//	go rt.Serve(ctx, l)           // starts the cache; returns when ctx ends
//	rt.WaitForCacheSync(ctx)      // then requests are routed
//
// Start(ctx) instead listens on Config.HTTPAddr, MetricsAddr and HealthAddr, as the binary does.
// Handler, MetricsHandler and HealthHandler are the three listeners' handlers.
package router
