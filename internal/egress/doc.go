// Package egress is kubox's egress proxy: the one way out of a sandbox whose template states its
// egress by domain. Sandboxes reach it as an HTTP proxy (HTTP_PROXY/HTTPS_PROXY); the template's
// NetworkPolicy lets their traffic leave only to it, so a program that ignores the proxy
// settings gets nowhere rather than around it.
//
// For every connection the proxy knows the sandbox by the connection's source address (its Pod
// IP) and decides by the name the sandbox asked for — the CONNECT authority for HTTPS, the
// request's host for plain HTTP — against that sandbox's Policy: deny lists first, then allow
// lists, default deny; raw IP addresses only inside allowed CIDRs. It then resolves the name
// itself (never trusting the sandbox's DNS) and refuses addresses in blocked ranges (private,
// link-local, cloud metadata) unless the policy allows them, so a name that resolves inward is
// not a way in. A refused connection gets 403 at once, with a message naming the rule.
//
// Traffic is passed through untouched (the proxy sees the name, never the content), except for
// the domains a Credential names: there the proxy terminates TLS with a certificate from the
// sandbox's own CA (a CA whose name constraints permit only those domains, so trusting it
// trusts nothing else), adds the credential's header to each request, and sends it on over TLS
// verified against the real roots. The credential lives in the proxy, never in the sandbox.
//
// Every connection and every inspected request is an audit line (sandbox, domain, address,
// port, verdict, bytes) and counted in kubox_egress_* metrics.
package egress
