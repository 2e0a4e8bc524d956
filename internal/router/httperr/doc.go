// Package httperr is the shape of every answer kubox-router gives itself rather than a sandbox:
// a status, a message that says what failed, on which object and what to do, and a Retry-After.
// Write sends it as one JSON body ({"error", "message", "code"}) that agent-sandbox's and E2B's
// clients both read; the router's other packages return *Error and never write their own.
package httperr
