// Package pathroute is kubox-router's browser path routing (agent-sandbox's
// --path-routing-prefix): the route's parsing, the browser's one-use tickets and sessions, and
// the confinement of a sandbox's responses to its own path. It parses
// "{prefix}/{ns}/{name}/{port}/{rest...}" (Parse), signs and checks the browser's credentials (Grant: a one-use ticket and the session it opens, bound to
// one sandbox's UID), serves the session endpoint "{prefix}/{ns}/{name}/kubox-session" that
// trades a ticket for the kubox-token cookie (Sessions), and keeps a sandbox's responses under
// its own path (ConfineResponse: Set-Cookie paths, Service-Worker-Allowed, and optionally
// Location).
//
// Every sandbox on the path-routing host shares one origin, so what this package confines is
// what would otherwise reach another sandbox's pages. Which host path routes are served on, and
// the credential and port checks of a path route, are the router's (internal/router, pathroute.go),
// which lends the session endpoint its checks as functions: this package imports nothing of the
// router's root package.
package pathroute
