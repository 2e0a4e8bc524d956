// Package ui is kubox-router's web dashboard, served under /ui/: static assets built from web/
// (embedded in dist, so nothing else must be deployed) and a JSON API under /ui/api/ that acts
// with the viewer's own Kubernetes token, never with the router's rights, so RBAC decides what
// each viewer sees and does.
//
// The API lists pools, claims and sandboxes, shows one sandbox's conditions and Events, runs
// the actions suspend, resume, delete and extend TTL, and reports which of them RBAC allows
// (SelfSubjectAccessReviews made with the viewer's token). A sandbox's terminal (a WebSocket
// bridged to its agent's PTY) and file browser go through the router to the agent, authorized
// as the router's connect route authorizes (sandboxes/connect); the router supplies that part
// (Options.Agent), as it alone knows the agent tokens. docs/dashboard.md describes it.
package ui
