// Package sandboxd serves agent-sandbox's in-sandbox daemon protocol from kubox-agent, so that
// agent-sandbox v1's SDKs, written for its sandboxd, run commands and move files in a kubox sandbox
// without changing code:
//
//   - process.v1.ProcessService and watcher.v1.FileWatcherService over gRPC (connect-go, so also
//     Connect and gRPC-Web) on contract.SandboxdGRPCPort, 9090 by default (process.go, watcher.go);
//   - sandboxd's REST API (/v1/files, /v1/health, /v1/metadata) on contract.SandboxdRESTPort, 8080 by default,
//     which is internal/agent/files' SandboxdHandler, served as the port's whole handler (a
//     ServeMux would clean the paths before the handler can refuse those leading outside the root).
//
// Nothing here runs processes or touches files itself: ProcessService is a thin mapping onto the
// agent's process.Manager and WatchDir onto files.Root.Watch, so the process-group, reaping, PTY,
// confinement and watch semantics are the agent's own (see those packages).
//
// sandboxd binds both ports to 127.0.0.1 and trusts whatever reaches them. kubox-agent listens on
// the Pod's addresses instead, so that kubox-router can reach the ports, and therefore requires the
// sandbox's agent token (`authorization: Bearer <token>`) on them like on its other ports; only
// /v1/health answers without it, for probes.
package sandboxd

// The sandboxd wire's ports, environment variables and health path are in api/contract
// (Sandboxd*), which the agent, the conformance tests and the docs' clients share.
const (
	// DefaultRoot is sandboxd's default root: cwd and file paths are relative to it.
	DefaultRoot = "/workspace"
)
