// Package proxy is kubox-router's reverse proxy to a sandbox: it forwards a request the router
// has already admitted and resolved, over HTTP/1.1 or h2c, and answers the router's error when
// the sandbox does not. The Target says where (the pod IP and port, the path, the agent token for
// the agent's own ports); WebSocket upgrades go over HTTP/1.1, gRPC over h2c, and only failed
// dials are retried.
//
// It keeps the router's business out of the sandbox and the sandbox's out of the router: the
// client's Authorization, the X-Sandbox-* headers and the kubox-token cookie never reach the
// sandbox, no response (1xx ones included) sets the kubox-token cookie, and a sandbox's
// response headers, 1xx responses and h2 flow-control windows are bounded. It decides nothing
// about where a request goes: internal/router does, and passes Hooks for what it adds.
package proxy
