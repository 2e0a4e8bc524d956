// Package mcpserver is `kubox mcp`: a Model Context Protocol server whose tools claim a kubox
// sandbox, run commands and code in it (with their output streamed as progress notifications),
// read, write and list its files, and release it. It is built on the official MCP Go SDK
// (github.com/modelcontextprotocol/go-sdk) and reaches sandboxes with kubox's Go SDK.
//
// The server never acts with rights of its own. Over stdio it is the user's own process and uses
// the user's kubeconfig. Over Streamable HTTP every request carries a bearer token and every
// tool call acts as that caller:
//   - a Kubernetes token is checked with a SelfSubjectReview sent with that very token (which
//     needs no permission), and then used, unchanged, for the caller's API requests (claims) and
//     router requests (processes, files), so the API server and kubox-router apply the caller's
//     RBAC exactly as they would to kubectl or the SDK;
//   - a claim token (kbx1..., minted by kubox-router) reaches only its own claim's sandbox,
//     through the router's /claims/ route, which verifies it on every request; it cannot claim
//     or release.
//
// An HTTP session belongs to the identity that opened it (the MCP SDK refuses a request with
// another identity's session ID), and identities are what the caller cannot forge: the API
// server's answer for a Kubernetes token, the SHA-256 of the whole token for a claim token (whose
// payload this server cannot verify, so never believes). Claims made through the server are released (deleted) when
// the session that made them ends, when they have not been used for Config.IdleRelease, and
// when the server stops; each also carries a TTL (Config.ClaimTTL), so a claim outlives a
// crashed server by at most that long.
package mcpserver
