package sandbox

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

var testAgent = AgentOptions{Image: "kubox.local/kubox-agent:dev", PullPolicy: corev1.PullIfNotPresent,
	Port: 7070, CompatibilityPort: 8888, TokenKey: []byte(strings.Repeat("k", 32))}

func agentSandbox(spec sandboxv1beta1.AgentSpec, mutate func(*corev1.PodSpec)) *sandboxv1beta1.Sandbox {
	sb := testutil.MakeSandbox(testName, testNS).PodSpec(mutate).Obj()
	sb.UID = "sandbox-uid"
	sb.Spec.Agent = &spec
	return sb
}

func buildAgentPod(t *testing.T, opts AgentOptions, sb *sandboxv1beta1.Sandbox) (*corev1.Pod, error) {
	t.Helper()
	return (&Reconciler{scheme: testScheme(t), agent: opts}).buildPod(sb)
}

func TestInjectAgentArgv(t *testing.T) {
	agentFlags := []string{AgentBinary, "--port=7070", "--compat-port=8888", "--token-file=/.kubox/token/token"}
	cases := map[string]struct {
		command, args []string
		env           []corev1.EnvVar
		spec          sandboxv1beta1.AgentSpec
		wantCommand   []string
		wantArgs      []string
	}{
		"command and args run as the agent's child": {
			command: []string{"python3", "-m", "http.server"}, args: []string{"9000"},
			wantCommand: agentFlags, wantArgs: []string{"--", "python3", "-m", "http.server", "9000"},
		},
		"args alone run as the command": {
			args:        []string{"sleep", "infinity"},
			wantCommand: agentFlags, wantArgs: []string{"--", "sleep", "infinity"},
		},
		"neither: the agent runs alone": {
			wantCommand: agentFlags,
		},
		"ports and auth from the sandbox": {
			command: []string{"sh"},
			spec: sandboxv1beta1.AgentSpec{Port: ptr.To[int32](9000), CompatibilityPort: ptr.To[int32](0),
				CompatibilityAuth: sandboxv1beta1.AgentAuthDisabled},
			wantCommand: []string{AgentBinary, "--port=9000", "--compat-port=0", "--token-file=/.kubox/token/token", "--compat-auth=disabled"},
			wantArgs:    []string{"--", "sh"},
		},
		"sandboxd's addresses in the environment become the agent's sandboxd ports": {
			env:         []corev1.EnvVar{{Name: "SANDBOXD_GRPC_ADDR", Value: "localhost:9090"}, {Name: "SANDBOXD_REST_ADDR", Value: "127.0.0.1:8080"}},
			wantCommand: append(append([]string{}, agentFlags...), "--sandboxd-grpc-port=9090", "--sandboxd-rest-port=8080"),
		},
		"an address from valueFrom or without a port is not passed": {
			env:         []corev1.EnvVar{{Name: "SANDBOXD_GRPC_ADDR", ValueFrom: &corev1.EnvVarSource{}}, {Name: "SANDBOXD_REST_ADDR", Value: "localhost"}},
			wantCommand: agentFlags,
		},
		"no sandboxd ports when compatibility is off": {
			env:         []corev1.EnvVar{{Name: "SANDBOXD_GRPC_ADDR", Value: "localhost:9090"}},
			spec:        sandboxv1beta1.AgentSpec{CompatibilityPort: ptr.To[int32](0)},
			wantCommand: []string{AgentBinary, "--port=7070", "--compat-port=0", "--token-file=/.kubox/token/token"},
		},
		"a sandbox port equal to the default compatibility port turns compatibility off": {
			spec:        sandboxv1beta1.AgentSpec{Port: ptr.To[int32](8888)},
			wantCommand: []string{AgentBinary, "--port=8888", "--compat-port=0", "--token-file=/.kubox/token/token"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb := agentSandbox(tc.spec, func(s *corev1.PodSpec) {
				s.Containers[0].Command, s.Containers[0].Args, s.Containers[0].Env = tc.command, tc.args, tc.env
			})
			pod, err := buildAgentPod(t, testAgent, sb)
			if err != nil {
				t.Fatalf("buildPod: %v", err)
			}
			c := pod.Spec.Containers[0]
			if diff := cmp.Diff(tc.wantCommand, c.Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantArgs, c.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInjectAgentPod(t *testing.T) {
	sb := agentSandbox(sandboxv1beta1.AgentSpec{ContainerName: "app"}, func(s *corev1.PodSpec) {
		s.Containers = append(s.Containers, corev1.Container{Name: "app", Image: "python:3", Command: []string{"python3"},
			Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}})
		s.InitContainers = []corev1.Container{{Name: "user-init", Image: "busybox"}}
	})
	before := sb.DeepCopy()
	pod, err := buildAgentPod(t, testAgent, sb)
	if err != nil {
		t.Fatalf("buildPod: %v", err)
	}
	if diff := cmp.Diff(before, sb); diff != "" {
		t.Errorf("buildPod changed the Sandbox (-before +after):\n%s", diff)
	}
	if got := pod.Spec.Containers[0].Command; len(got) == 0 || got[0] == AgentBinary {
		t.Errorf("the first container's command = %v; the agent belongs in container app only", got)
	}
	app := pod.Spec.Containers[1]
	if app.Command[0] != AgentBinary {
		t.Errorf("container app's command = %v, want the agent first", app.Command)
	}
	wantPorts := []corev1.ContainerPort{{Name: "web", ContainerPort: 8080},
		{Name: AgentPortName, ContainerPort: 7070, Protocol: corev1.ProtocolTCP},
		{Name: AgentCompatibilityPortName, ContainerPort: 8888, Protocol: corev1.ProtocolTCP}}
	if diff := cmp.Diff(wantPorts, app.Ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	wantMounts := []corev1.VolumeMount{{Name: AgentBinVolumeName, MountPath: AgentBinDir, ReadOnly: true},
		{Name: AgentTokenVolumeName, MountPath: AgentTokenDir, ReadOnly: true}}
	if diff := cmp.Diff(wantMounts, app.VolumeMounts); diff != "" {
		t.Errorf("volume mounts (-want +got):\n%s", diff)
	}
	wantProbe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(7070)}},
		PeriodSeconds: 1, FailureThreshold: 3}
	if diff := cmp.Diff(wantProbe, app.ReadinessProbe); diff != "" {
		t.Errorf("readiness probe (-want +got):\n%s", diff)
	}
	if got := pod.Annotations[DefaultContainerAnnotation]; got != "app" {
		t.Errorf("annotation %s = %q, want app (kubectl exec must not land in the first container)", DefaultContainerAnnotation, got)
	}
	if n := len(pod.Spec.InitContainers); n != 2 || pod.Spec.InitContainers[0].Name != AgentInitContainerName || pod.Spec.InitContainers[1].Name != "user-init" {
		t.Fatalf("init containers = %v, want the agent's install first, then the pod's own", pod.Spec.InitContainers)
	}
	install := pod.Spec.InitContainers[0]
	if diff := cmp.Diff([]string{"/kubox-agent", "install", AgentBinary}, install.Command); diff != "" {
		t.Errorf("install command (-want +got):\n%s", diff)
	}
	if install.Image != testAgent.Image || install.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("install image = %s (%s), want %s", install.Image, install.ImagePullPolicy, testAgent.Image)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	if v := vols[AgentTokenVolumeName]; v.Secret == nil || v.Secret.SecretName != "my-sandbox-kubox-agent" {
		t.Errorf("token volume = %+v, want Secret my-sandbox-kubox-agent", v)
	}
	if v := vols[AgentBinVolumeName]; v.EmptyDir == nil {
		t.Errorf("agent binary volume = %+v, want an emptyDir", v)
	}
}

func TestInjectAgentKeepsTheContainersProbe(t *testing.T) {
	own := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9000)}}}
	sb := agentSandbox(sandboxv1beta1.AgentSpec{}, func(s *corev1.PodSpec) {
		s.Containers[0].ReadinessProbe = own.DeepCopy()
		s.Containers[0].Ports = []corev1.ContainerPort{{Name: "mine", ContainerPort: 8888}}
	})
	pod, err := buildAgentPod(t, testAgent, sb)
	if err != nil {
		t.Fatalf("buildPod: %v", err)
	}
	c := pod.Spec.Containers[0]
	if diff := cmp.Diff(own, c.ReadinessProbe); diff != "" {
		t.Errorf("the container's own readiness probe was replaced (-want +got):\n%s", diff)
	}
	for _, p := range c.Ports {
		if p.ContainerPort == 8888 && p.Name != "mine" {
			t.Errorf("port 8888 declared twice: %v", c.Ports)
		}
	}
}

func TestInjectAgentWithoutConfiguration(t *testing.T) {
	cases := map[string]struct {
		opts AgentOptions
		want string
	}{
		"no image":     {opts: AgentOptions{TokenKey: testAgent.TokenKey, Port: 7070}, want: "agent.image"},
		"no token key": {opts: AgentOptions{Image: testAgent.Image, Port: 7070}, want: "agent.tokenKeyFile"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := buildAgentPod(t, tc.opts, agentSandbox(sandboxv1beta1.AgentSpec{}, func(*corev1.PodSpec) {}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("buildPod error = %v, want one naming %s", err, tc.want)
			}
			if !errors.Is(err, reconcile.TerminalError(nil)) {
				t.Errorf("error %v is not terminal: a configuration problem is not mended by retrying", err)
			}
		})
	}
	t.Run("unknown container", func(t *testing.T) {
		_, err := buildAgentPod(t, testAgent, agentSandbox(sandboxv1beta1.AgentSpec{ContainerName: "nope"}, func(*corev1.PodSpec) {}))
		if err == nil || !strings.Contains(err.Error(), `"nope"`) {
			t.Fatalf("buildPod error = %v, want one naming the container", err)
		}
	})
}

func TestAgentSecret(t *testing.T) {
	r := &Reconciler{scheme: testScheme(t), agent: testAgent}
	sb := agentSandbox(sandboxv1beta1.AgentSpec{}, func(*corev1.PodSpec) {})
	s := r.agentSecret(sb)
	if s.Name != "my-sandbox-kubox-agent" || s.Namespace != testNS {
		t.Errorf("Secret %s/%s, want %s/my-sandbox-kubox-agent", s.Namespace, s.Name, testNS)
	}
	if got, want := string(s.Data[AgentTokenKey]), contract.DeriveAgentToken(testAgent.TokenKey, "sandbox-uid"); got != want {
		t.Errorf("token %q, want the one derived from the key and the sandbox UID, %q", got, want)
	}
}

func TestAgentStatus(t *testing.T) {
	agentC := func(cmd ...string) corev1.Container { return corev1.Container{Name: "main", Command: cmd} }
	cases := map[string]struct {
		containers []corev1.Container
		want       *sandboxv1beta1.AgentStatus
	}{
		"the flags the controller gives the agent": {
			containers: []corev1.Container{agentC(AgentBinary, "--port=9000", "--compat-port=8888", "--token-file=/t")},
			want:       &sandboxv1beta1.AgentStatus{Port: 9000, CompatibilityPort: 8888},
		},
		"sandboxd's ports": {
			containers: []corev1.Container{agentC(AgentBinary, "--port=7070", "--compat-port=8888", "--sandboxd-grpc-port=9090", "--sandboxd-rest-port=8080")},
			want:       &sandboxv1beta1.AgentStatus{Port: 7070, CompatibilityPort: 8888, SandboxdGRPCPort: 9090, SandboxdRESTPort: 8080},
		},
		"compatibility port off": {
			containers: []corev1.Container{{Name: "side"}, agentC(AgentBinary, "--port=7070", "--compat-port=0")},
			want:       &sandboxv1beta1.AgentStatus{Port: 7070},
		},
		"no container runs the agent":    {containers: []corev1.Container{agentC("/bin/sh", "--port=7070")}},
		"the agent without a valid port": {containers: []corev1.Container{agentC(AgentBinary, "--port=x")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := agentStatus(&corev1.Pod{Spec: corev1.PodSpec{Containers: tc.containers}})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("agentStatus() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
