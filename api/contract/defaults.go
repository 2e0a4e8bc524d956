package contract

// Ports, names and environment variables whose defaults the components share.
const (
	// DefaultAgentPort is the port of kubox-agent's API (processes, files, /healthz): the default
	// of kubox-agent's --port and of the controller's agent.port, which kubox-controller writes
	// into the Sandbox's status.agent.port for the router and the SDK to read.
	DefaultAgentPort = 7070
	// DefaultAgentCompatibilityPort is the port of agent-sandbox's runtime APIs that kubox-agent
	// serves: the default of kubox-agent's --compat-port and the controller's
	// agent.compatibilityPort, and the port kubox-router sends header-routed requests to when
	// SandboxPortHeader is absent.
	DefaultAgentCompatibilityPort = 8888
	// AgentHealthPath is kubox-agent's unauthenticated health endpoint. Served by kubox-agent;
	// kubox-controller makes it the agent container's readiness probe.
	AgentHealthPath = "/healthz"
	// AgentTokenEnv is the environment variable kubox-agent reads its token from when it is not
	// given a token file (the default of its --token-env).
	AgentTokenEnv = "KUBOX_AGENT_TOKEN"

	// DefaultRouterPort is the port kubox-router listens on and its Service exposes; the SDK and
	// the CLI dial it by the Service's cluster DNS name inside a Pod and port-forward to it
	// elsewhere.
	DefaultRouterPort = 8080
	// DefaultRouterNamespace is the namespace the install puts kubox-router (and
	// kubox-controller) in; the SDK and the CLI look for the router's Service there.
	DefaultRouterNamespace = "kubox-system"
	// DefaultRouterService is the name of kubox-router's Service, as agent-sandbox names it;
	// the SDK and the CLI connect to it.
	DefaultRouterService = "sandbox-router-svc"
	// RouterURLEnv is the environment variable from which the SDK and the CLI read kubox-router's
	// URL.
	RouterURLEnv = "KUBOX_ROUTER_URL"
	// RouterKubeconfigExtension names the kubeconfig cluster extension that holds the URL of the
	// cluster's kubox-router, as {"url": "http://..."}. Written by `kubox dev`; read by the kubox
	// CLI (and the Python SDK) when no router URL is given.
	RouterKubeconfigExtension = "kubox.dev/router"

	// SandboxdGRPCPort is sandboxd's default gRPC port (process.v1 and watcher.v1), which
	// agent-sandbox v1's SDKs dial; kubox-agent serves that wire on the port of
	// SandboxdGRPCAddrEnv when its container sets it.
	SandboxdGRPCPort = 9090
	// SandboxdRESTPort is sandboxd's default REST port (/v1/files, /v1/health, /v1/metadata).
	SandboxdRESTPort = 8080
	// SandboxdGRPCAddrEnv and SandboxdRESTAddrEnv are the environment variables ("host:port")
	// through which agent-sandbox v1's SDKs find sandboxd, and from which kubox-agent takes the
	// ports it serves sandboxd's wire on.
	SandboxdGRPCAddrEnv = "SANDBOXD_GRPC_ADDR"
	SandboxdRESTAddrEnv = "SANDBOXD_REST_ADDR"
	// SandboxdHealthPath is sandboxd's readiness probe on its REST port, served by kubox-agent
	// without a token.
	SandboxdHealthPath = "/v1/health"
)

// DefaultNodeAPIPort is the port of kubox-node's snapshot API (proto/kubox/node/v1) on each gVisor
// node, where kubox-controller asks for checkpoints of the Pods running there.
const DefaultNodeAPIPort = 9097

// SnapshotNodeLabel is the node label ("true") that runs kubox-node on a node (config/node's
// DaemonSet selects it): a node with containerd and kubox's patched gVisor shim, whose sandboxes
// can keep their memory.
const SnapshotNodeLabel = "kubox.dev/gvisor-snapshots"
