package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// Where kubox-agent lives in a sandbox's Pod.
const (
	// AgentInitContainerName is the init container that copies the agent binary into the Pod.
	AgentInitContainerName = "kubox-agent-install"
	// AgentBinVolumeName is the emptyDir volume holding the agent binary.
	AgentBinVolumeName = "kubox-agent-bin"
	// AgentTokenVolumeName is the Secret volume holding the sandbox's agent token.
	AgentTokenVolumeName = "kubox-agent-token"
	// AgentBinDir is where the agent binary is mounted in the sandbox's container.
	AgentBinDir = "/.kubox/bin"
	// AgentBinary is the agent's path in the sandbox's container: its new entry point.
	AgentBinary = AgentBinDir + "/kubox-agent"
	// AgentTokenDir is where the sandbox's agent token Secret is mounted.
	AgentTokenDir = "/.kubox/token"
	// AgentTokenKey is the key of the token in the Secret, and the file name under AgentTokenDir.
	AgentTokenKey = sandboxv1beta1.AgentTokenSecretKey
	// AgentImageBinary is the agent binary's path in the agent image.
	AgentImageBinary = "/kubox-agent"
	// AgentPortName and AgentCompatibilityPortName name the agent's container ports.
	AgentPortName              = "kubox-agent"
	AgentCompatibilityPortName = "kubox-compat"
	// DefaultContainerAnnotation is kubectl's annotation naming the container that exec and logs
	// use when none is given; the controller sets it to the agent's container.
	DefaultContainerAnnotation = "kubectl.kubernetes.io/default-container"
)

// AgentOptions is what the controller needs to put kubox-agent into the sandboxes that ask for
// it (spec.agent), from the controller configuration's agent section.
type AgentOptions struct {
	// Image holds the agent binary at AgentImageBinary; empty: not configured.
	Image string
	// PullPolicy is the init container's image pull policy.
	PullPolicy corev1.PullPolicy
	// Port and CompatibilityPort are the defaults of spec.agent.port and compatibilityPort.
	Port, CompatibilityPort int32
	// TokenKey is the key agent tokens are derived from; nil: not configured.
	TokenKey []byte
}

// agentReady says why the controller cannot put the agent into a Pod, or nil. The problem is
// the controller's configuration, which no retry mends, so the error is terminal: the Sandbox
// shows it in its Ready condition until the controller restarts with a mended configuration.
func (o *AgentOptions) agentReady() error {
	switch {
	case o.Image == "":
		return reconcile.TerminalError(errors.New("the sandbox asks for kubox-agent (spec.agent) but the controller has no " +
			"agent image: set agent.image in the controller configuration"))
	case len(o.TokenKey) == 0:
		return reconcile.TerminalError(errors.New("the sandbox asks for kubox-agent (spec.agent) but the controller has no " +
			"agent token key: set agent.tokenKeyFile in the controller configuration"))
	}
	return nil
}

// ensureAgentSecret creates the Secret holding the sandbox's agent token, or mends the one the
// Sandbox owns when it holds another token (the key changed). A Secret of that name owned by
// anything else is left alone and reported.
func (r *Reconciler) ensureAgentSecret(ctx context.Context, sb *sandboxv1beta1.Sandbox) error {
	want := r.agentSecret(sb)
	if err := controllerutil.SetControllerReference(sb, want, r.scheme); err != nil {
		return fmt.Errorf("setting the owner of Secret %s: %w", want.Name, err)
	}
	err := r.client.Create(ctx, want, client.FieldOwner(FieldManager))
	if err == nil || !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating Secret %s with the sandbox's agent token: %w", want.Name, err)
		}
		return nil
	}
	// Secrets are not cached (the controller reads only its own, rarely).
	have := &corev1.Secret{}
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
		return fmt.Errorf("reading Secret %s: %w", want.Name, err)
	}
	if !owns(sb, have) {
		return fmt.Errorf("secret %s exists and is not owned by Sandbox %s: rename or delete it so the "+
			"controller can keep the sandbox's agent token there", want.Name, sb.Name)
	}
	if bytes.Equal(have.Data[AgentTokenKey], want.Data[AgentTokenKey]) {
		return nil
	}
	have.Data = want.Data
	if err := r.client.Update(ctx, have, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("updating the agent token in Secret %s: %w", want.Name, err)
	}
	return nil
}

// secretLabels are the labels of the Secrets the controller makes for sb (its agent token, its
// egress CA): the sandbox's name and name hash, by which they are found and cleaned up.
func secretLabels(sb *sandboxv1beta1.Sandbox) map[string]string {
	return map[string]string{
		sandboxv1beta1.SandboxNameHashLabel: sandboxv1beta1.NameHash(sb.Name),
		sandboxv1beta1.SandboxNameLabel:     sb.Name,
	}
}

func (r *Reconciler) agentSecret(sb *sandboxv1beta1.Sandbox) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: sandboxv1beta1.AgentSecretName(sb.Name), Namespace: sb.Namespace,
			Labels: secretLabels(sb),
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{AgentTokenKey: []byte(contract.DeriveAgentToken(r.agent.TokenKey, sb.UID))},
	}
}

// injectAgent makes kubox-agent the entry point of the sandbox's container: an init container
// copies the binary from the agent image into an emptyDir, the token Secret is mounted, and the
// container's command moves behind the agent's flags (see agentArgv).
func (r *Reconciler) injectAgent(pod *corev1.Pod, spec *sandboxv1beta1.AgentSpec) error {
	c, err := agentContainer(pod, spec.ContainerName)
	if err != nil {
		return err
	}
	port := ptr.Deref(spec.Port, r.agent.Port)
	compat := ptr.Deref(spec.CompatibilityPort, r.agent.CompatibilityPort)
	if compat == port {
		compat = 0 // the controller's default collides with the sandbox's own port choice
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: AgentBinVolumeName, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("128Mi"))}}},
		corev1.Volume{Name: AgentTokenVolumeName, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: sandboxv1beta1.AgentSecretName(pod.Name), DefaultMode: ptr.To[int32](0o444)}}},
	)
	pod.Spec.InitContainers = append([]corev1.Container{r.agentInitContainer()}, pod.Spec.InitContainers...)
	if _, set := pod.Annotations[DefaultContainerAnnotation]; !set {
		// kubectl exec and logs go to the sandbox's container without asking which one.
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[DefaultContainerAnnotation] = c.Name
	}
	c.Command, c.Args = agentArgv(c, port, compat, spec.CompatibilityAuth)
	c.VolumeMounts = append(c.VolumeMounts,
		corev1.VolumeMount{Name: AgentBinVolumeName, MountPath: AgentBinDir, ReadOnly: true},
		corev1.VolumeMount{Name: AgentTokenVolumeName, MountPath: AgentTokenDir, ReadOnly: true},
	)
	c.Ports = withPort(c.Ports, AgentPortName, port)
	if compat != 0 {
		c.Ports = withPort(c.Ports, AgentCompatibilityPortName, compat)
	}
	if c.ReadinessProbe == nil {
		c.ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: contract.AgentHealthPath, Port: intstr.FromInt32(port)}},
			PeriodSeconds: 1, FailureThreshold: 3,
		}
	}
	return nil
}

// agentContainer returns the container named name, or the first one when name is empty.
func agentContainer(pod *corev1.Pod, name string) (*corev1.Container, error) {
	if name == "" && len(pod.Spec.Containers) > 0 {
		return &pod.Spec.Containers[0], nil
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], nil
		}
	}
	return nil, reconcile.TerminalError(fmt.Errorf("spec.agent.containerName %q names no container of the pod template", name))
}

func (r *Reconciler) agentInitContainer() corev1.Container {
	return corev1.Container{
		Name:            AgentInitContainerName,
		Image:           r.agent.Image,
		ImagePullPolicy: r.agent.PullPolicy,
		Command:         []string{AgentImageBinary, "install", AgentBinary},
		VolumeMounts:    []corev1.VolumeMount{{Name: AgentBinVolumeName, MountPath: AgentBinDir}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
}

// agentArgv returns the container's new command and args: the agent with its flags, then, after
// "--", the command it runs as its child. The image's ENTRYPOINT and CMD are unknown here (no
// registry is read), so: command (+ args) as given; args alone run as the command; neither runs
// the agent alone.
func agentArgv(c *corev1.Container, port, compat int32, auth sandboxv1beta1.AgentAuth) ([]string, []string) {
	cmd := []string{AgentBinary,
		"--port=" + strconv.Itoa(int(port)),
		"--compat-port=" + strconv.Itoa(int(compat)),
		"--token-file=" + AgentTokenDir + "/" + AgentTokenKey,
	}
	if auth == sandboxv1beta1.AgentAuthDisabled {
		cmd = append(cmd, "--compat-auth=disabled")
	}
	if compat != 0 {
		cmd = append(cmd, sandboxdFlags(c.Env)...)
	}
	child := append(append([]string{}, c.Command...), c.Args...)
	if len(child) == 0 {
		return cmd, nil
	}
	return cmd, append([]string{"--"}, child...)
}

// sandboxdFlags passes the agent, as flags, the sandboxd ports the container's environment
// names (SANDBOXD_GRPC_ADDR, SANDBOXD_REST_ADDR, as agent-sandbox v1's templates set them), which
// the agent would take from its environment anyway: written on its command line, they are what
// agentStatus records and so the ports kubox-router adds the agent token for. A variable set
// from a ConfigMap or Secret (valueFrom) is not known here: the agent still serves its port, but
// the router adds no token for it.
func sandboxdFlags(env []corev1.EnvVar) []string {
	getenv := func(name string) string {
		for _, e := range env {
			if e.Name == name && e.ValueFrom == nil {
				return e.Value
			}
		}
		return ""
	}
	var flags []string
	for _, f := range []struct{ flag, env string }{
		{sandboxdGRPCPortFlag, contract.SandboxdGRPCAddrEnv},
		{sandboxdRESTPortFlag, contract.SandboxdRESTAddrEnv},
	} {
		if port := contract.PortFromAddrEnv(getenv, f.env); port != 0 {
			flags = append(flags, f.flag+strconv.Itoa(port))
		}
	}
	return flags
}

// The agent's flags for sandboxd's ports, as agentArgv writes them.
const (
	sandboxdGRPCPortFlag = "--sandboxd-grpc-port="
	sandboxdRESTPortFlag = "--sandboxd-rest-port="
)

// withPort adds a TCP container port unless the container already declares that number.
func withPort(ports []corev1.ContainerPort, name string, port int32) []corev1.ContainerPort {
	for _, p := range ports {
		if p.ContainerPort == port && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP) {
			return ports
		}
	}
	return append(ports, corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP})
}

// agentStatus reads where kubox-agent listens in pod from the flags the controller gave it
// (agentArgv): the container whose command starts with AgentBinary. A container's command cannot
// change after the Pod is created, so this is the truth for the Pod's whole life, whatever the
// controller's configuration has become since. It returns nil when no container runs the agent.
func agentStatus(pod *corev1.Pod) *sandboxv1beta1.AgentStatus {
	for i := range pod.Spec.Containers {
		cmd := pod.Spec.Containers[i].Command
		if len(cmd) == 0 || cmd[0] != AgentBinary {
			continue
		}
		st := &sandboxv1beta1.AgentStatus{}
		for _, arg := range cmd[1:] {
			if port, ok := flagPort(arg, "--port="); ok {
				st.Port = port
			} else if port, ok := flagPort(arg, "--compat-port="); ok {
				st.CompatibilityPort = port
			} else if port, ok := flagPort(arg, sandboxdGRPCPortFlag); ok {
				st.SandboxdGRPCPort = port
			} else if port, ok := flagPort(arg, sandboxdRESTPortFlag); ok {
				st.SandboxdRESTPort = port
			}
		}
		if st.Port == 0 {
			return nil
		}
		return st
	}
	return nil
}

// flagPort parses arg as flag (with its "=") and a port; 0, false for any other argument.
func flagPort(arg, flag string) (int32, bool) {
	v, ok := strings.CutPrefix(arg, flag)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 || n > 65535 {
		return 0, false
	}
	return int32(n), true
}
