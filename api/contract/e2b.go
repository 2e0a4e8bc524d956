package contract

// E2B's in-sandbox protocol (envd), which kubox-agent serves for E2B's SDKs (internal/agent/e2b,
// docs/e2b.md). The router reaches it the way E2B's SDKs address a sandbox.
const (
	// E2BEnvdPort is envd's port, which E2B's SDKs dial in every sandbox: the default of
	// kubox-agent's --e2b-port.
	E2BEnvdPort = 49983
	// E2BCodeInterpreterPort is E2B's code interpreter's port, which @e2b/code-interpreter dials
	// in every sandbox: the default of kubox-agent's --code-interpreter-port
	// (internal/agent/codeinterp).
	E2BCodeInterpreterPort = 49999
	// E2BAccessTokenHeader carries a sandbox's envd access token on every request E2B's SDKs send
	// to envd; kubox-agent accepts the agent token there, besides `Authorization: Bearer`.
	E2BAccessTokenHeader = "X-Access-Token"
	// E2BTrafficAccessTokenHeader carries a sandbox's traffic access token (the
	// trafficAccessToken E2B's API answers) on the requests @e2b/code-interpreter sends without
	// X-Access-Token (its context calls). kubox-router takes it on sandbox hosts only, as the
	// claim token it is, and never forwards it.
	E2BTrafficAccessTokenHeader = "E2B-Traffic-Access-Token"
	// E2BHealthPath is envd's health endpoint (204, no token).
	E2BHealthPath = "/health"
)

// What kubox-router's E2B control API (internal/router/e2b*.go) records and answers.
const (
	// E2BMetadataAnnotation holds an E2B sandbox's metadata, as JSON, on its SandboxClaim:
	// E2B's metadata values are free text, which labels cannot hold.
	E2BMetadataAnnotation = "e2b.kubox.dev/metadata"
	// E2BAPIKeyPrefix starts the API keys E2B's JS SDK accepts (e2b_ and hex digits): kubox takes
	// "e2b_" followed by the hex encoding of a Kubernetes bearer token.
	E2BAPIKeyPrefix = "e2b_"
	// E2BAPIKeyHeader carries the API key on every control API request.
	E2BAPIKeyHeader = "X-API-Key"
	// E2BEnvdVersion is the envd version the control API reports for kubox-agent's E2B port.
	// E2B's SDKs turn features on by it (checked with the pinned `e2b` 2.51.0, test/e2b): stdin
	// control 0.3.0, default user 0.4.0, CloseStdin 0.5.2, raw-body uploads 0.5.7, file metadata
	// 0.6.2 (kubox-agent refuses an upload with metadata, with the reason, rather than drop it),
	// watch entries 0.6.3 and watches on network mounts 0.6.4.
	E2BEnvdVersion = "0.6.4"
)

// E2BPauseAnnotation, on a Sandbox E2B's pause suspended, says what the pause kept besides the
// volumes (E2BPauseMemory or E2BPauseFilesystem), so resume and connect can say what they
// restore. Written by the caller's pause, as the caller.
const (
	E2BPauseAnnotation = "e2b.kubox.dev/pause"
	// E2BPauseMemory: the memory was checkpointed (MemoryKept=True): processes continue.
	E2BPauseMemory = "memory"
	// E2BPauseFilesystem: the Filesystem SandboxSnapshot in spec.snapshotRef holds the files;
	// the processes restart on them.
	E2BPauseFilesystem = "filesystem"
)
