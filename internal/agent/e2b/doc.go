// Package e2b serves E2B's in-sandbox protocol (envd) from kubox-agent, so that E2B's SDKs run
// commands, open terminals and move files in a kubox sandbox without changing code:
//
//   - process.Process and filesystem.Filesystem, envd's Connect services (process.go,
//     filesystem.go, watcher.go), declared in proto/e2b/envd;
//   - envd's HTTP endpoints: GET and POST /files (download, upload), /health and /envs (http.go).
//
// Nothing here runs processes or touches files itself: the services map envd's calls onto the
// agent's process.Manager and files.Root, so the process-group, reaping, PTY, flow-control and
// root-confinement semantics are the agent's own, and so are its limits (the handler is wrapped
// like the agent's other ports) and its write gate (file changes are refused while the sandbox
// suspends).
//
// envd trusts what reaches it inside E2B's network; kubox-agent listens on the Pod's addresses, so
// the E2B port requires the sandbox's agent token like every other port: as the X-Access-Token
// header, which E2B's SDKs send with a sandbox's envd access token, or as a bearer token
// (authenticate). Only /health answers without it, for probes.
//
// E2B's SDKs name a user per call (`Authorization: Basic <user>:`, `username=`); the agent runs
// everything as its own user and ignores the name (docs/e2b.md).
package e2b
