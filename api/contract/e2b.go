package contract

// E2B's in-sandbox protocol (envd), which kubox-agent serves for E2B's SDKs (internal/agent/e2b,
// docs/e2b.md). The router reaches it the way E2B's SDKs address a sandbox.
const (
	// E2BEnvdPort is envd's port, which E2B's SDKs dial in every sandbox: the default of
	// kubox-agent's --e2b-port.
	E2BEnvdPort = 49983
	// E2BAccessTokenHeader carries a sandbox's envd access token on every request E2B's SDKs send
	// to envd; kubox-agent accepts the agent token there, besides `Authorization: Bearer`.
	E2BAccessTokenHeader = "X-Access-Token"
	// E2BHealthPath is envd's health endpoint (204, no token).
	E2BHealthPath = "/health"
)
