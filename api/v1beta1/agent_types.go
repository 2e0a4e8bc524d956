package v1beta1

// AgentSpec asks kubox to run kubox-agent, its in-sandbox runtime for exec, terminals and files,
// in the sandbox's Pod. kubox addition.
//
// The controller adds an init container that copies the agent binary (from the agent image in
// the controller's configuration) into an emptyDir volume, mounts a Secret holding the
// sandbox's agent token, and makes the agent the entry point of one container. The agent then
// runs that container's command and args, when the pod spec gives a command, as its child. The
// image's own ENTRYPOINT and CMD are not known to the controller (it reads no registry), so a
// container that relies on them must spell its command out; one that gives only args has them
// run as the command; one that gives neither runs the agent alone.
// +kubebuilder:validation:XValidation:rule="!has(self.compatibilityPort) || self.compatibilityPort == 0 || !has(self.port) || self.compatibilityPort != self.port",message="agent.compatibilityPort must differ from agent.port"
type AgentSpec struct {
	// containerName is the container whose entry point the agent becomes. Default: the first
	// container of the pod spec.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	ContainerName string `json:"containerName,omitempty"`

	// port is the port of the agent's API (exec, files, terminals; authenticated with the
	// sandbox's agent token). Default: the controller's agent.port (7070).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"`

	// compatibilityPort is the port on which the agent also serves the HTTP APIs of
	// agent-sandbox's runtimes (python-runtime's /execute, /upload, ...; sandboxd's /v1/files),
	// so existing agent-sandbox clients work unchanged. 0 turns them off: set it to 0 when the
	// image serves that port itself. Default: the controller's agent.compatibilityPort (8888).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	CompatibilityPort *int32 `json:"compatibilityPort,omitempty"`

	// compatibilityAuth is Required (the default): requests to the compatibility port must carry
	// the sandbox's agent token, like those to the agent's own port; or Disabled: they need none,
	// as agent-sandbox clients that dial a pod directly send none. Disabled is safe only where a
	// NetworkPolicy admits nothing but the router to the sandbox (a template's managed policy
	// does).
	// +optional
	// +kubebuilder:default=Required
	CompatibilityAuth AgentAuth `json:"compatibilityAuth,omitempty"`
}

// AgentStatus is where kubox-agent listens in a sandbox's current Pod. kubox addition.
type AgentStatus struct {
	// port is the port of the agent's API (exec, files, terminals), which requires the sandbox's
	// agent token.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// compatibilityPort is the port on which the agent serves agent-sandbox's runtime APIs; 0 or
	// absent: it serves none.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	CompatibilityPort int32 `json:"compatibilityPort,omitempty"`

	// sandboxdGRPCPort is the port on which the agent serves sandboxd's gRPC API (process.v1,
	// watcher.v1), taken from the container's SANDBOXD_GRPC_ADDR; 0 or absent: none. It requires
	// the sandbox's agent token like the compatibility port, so kubox-router adds the token for it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	SandboxdGRPCPort int32 `json:"sandboxdGRPCPort,omitempty"`

	// sandboxdRESTPort is the port on which the agent serves sandboxd's REST API (/v1/files,
	// /v1/health, /v1/metadata), taken from the container's SANDBOXD_REST_ADDR; 0 or absent: none.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	SandboxdRESTPort int32 `json:"sandboxdRESTPort,omitempty"`
}

// Ports returns the ports the status records, the agent's API port first; zeros are left out.
func (s *AgentStatus) Ports() []int32 {
	if s == nil {
		return nil
	}
	var ports []int32
	for _, p := range []int32{s.Port, s.CompatibilityPort, s.SandboxdGRPCPort, s.SandboxdRESTPort} {
		if p != 0 {
			ports = append(ports, p)
		}
	}
	return ports
}

// AgentAuth says whether an agent port requires the sandbox's agent token.
// +kubebuilder:validation:Enum=Required;Disabled
type AgentAuth string

const (
	// AgentAuthRequired means every request carries the sandbox's agent token.
	AgentAuthRequired AgentAuth = "Required"
	// AgentAuthDisabled means requests need no token.
	AgentAuthDisabled AgentAuth = "Disabled"
)

// AgentTokenSecretKey is the key of the agent token in a sandbox's agent Secret, and the name of
// the file it is mounted as in the sandbox's Pod.
const AgentTokenSecretKey = "token"

// AgentSecretName is the name of the Secret holding a sandbox's agent token: the controller
// writes it when it creates the sandbox's Pod, the Pod mounts it, and clients that talk to the
// agent directly (not through kubox-router) read it.
func AgentSecretName(sandboxName string) string { return sandboxName + "-kubox-agent" }
