package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandbox"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

const agentImage = "kubox.local/kubox-agent:dev"

// withAgent configures the controller for kubox-agent with a fresh token key and returns the key.
func withAgent(t *testing.T) (func(*configv1alpha1.ControllerConfiguration), []byte) {
	t.Helper()
	key := []byte(strings.Repeat("0123456789abcdef", 3))
	file := filepath.Join(t.TempDir(), "agent-token-key")
	if err := os.WriteFile(file, append(key, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(c *configv1alpha1.ControllerConfiguration) {
		c.Agent.Image = agentImage
		c.Agent.TokenKeyFile = file
	}, key
}

func agentSandboxObj(ns, name string, spec sandboxv1beta1.AgentSpec) *sandboxv1beta1.Sandbox {
	sb := testutil.MakeSandbox(name, ns).Obj()
	sb.Spec.Agent = &spec
	return sb
}

func TestAgentIsInjectedWithItsTokenSecret(t *testing.T) {
	ns := env.NewNamespace(t)
	configure, key := withAgent(t)
	env.StartKubox(t, ns, configure)
	sb := agentSandboxObj(ns, "with-agent", sandboxv1beta1.AgentSpec{})
	if err := env.Client.Create(t.Context(), sb); err != nil {
		t.Fatalf("Creating Sandbox: %v", err)
	}

	pod := &corev1.Pod{}
	framework.Eventually(t, func() (bool, string) {
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: sb.Name}, pod)
		return err == nil, "Pod: " + errString(err)
	})
	if got := pod.Spec.InitContainers; len(got) != 1 || got[0].Name != sandbox.AgentInitContainerName || got[0].Image != agentImage {
		t.Errorf("init containers = %+v, want %s from %s", got, sandbox.AgentInitContainerName, agentImage)
	}
	if cmd := pod.Spec.Containers[0].Command; len(cmd) == 0 || cmd[0] != sandbox.AgentBinary {
		t.Errorf("container command = %v, want the agent first", cmd)
	}

	secret := &corev1.Secret{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: sandboxv1beta1.AgentSecretName(sb.Name)}, secret); err != nil {
		t.Fatalf("the agent token Secret must exist before the Pod that mounts it: %v", err)
	}
	if got, want := string(secret.Data[sandboxv1beta1.AgentTokenSecretKey]), contract.DeriveAgentToken(key, sb.UID); got != want {
		t.Errorf("token %q, want the one derived from the key and the Sandbox's UID, %q", got, want)
	}
	if !metav1.IsControlledBy(secret, sb) {
		t.Errorf("Secret owners = %+v, want the Sandbox as controller (so it goes with the Sandbox)", secret.OwnerReferences)
	}
}

func TestAgentSecretOwnedBySomeoneElseIsReported(t *testing.T) {
	ns := env.NewNamespace(t)
	configure, _ := withAgent(t)
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sandboxv1beta1.AgentSecretName("taken"), Namespace: ns},
		StringData: map[string]string{"token": "not-ours"}}
	if err := env.Client.Create(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}
	env.StartKubox(t, ns, configure)
	sb := agentSandboxObj(ns, "taken", sandboxv1beta1.AgentSpec{})
	if err := env.Client.Create(t.Context(), sb); err != nil {
		t.Fatalf("Creating Sandbox: %v", err)
	}
	waitReadyReason(t, ns, sb.Name, sandboxv1beta1.SandboxReasonReconcilerError, "is not owned by Sandbox taken")
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: sb.Name}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("Pod: %v; want none while its token Secret cannot be written", err)
	}
	got := &corev1.Secret{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(foreign), got); err != nil || string(got.Data["token"]) != "not-ours" {
		t.Errorf("the foreign Secret was changed: %v %q", err, got.Data["token"])
	}
}

func TestAgentWithoutConfigurationIsReported(t *testing.T) {
	ns := env.NewNamespace(t)
	env.StartKubox(t, ns, nil)
	sb := agentSandboxObj(ns, "no-config", sandboxv1beta1.AgentSpec{})
	if err := env.Client.Create(t.Context(), sb); err != nil {
		t.Fatalf("Creating Sandbox: %v", err)
	}
	waitReadyReason(t, ns, sb.Name, sandboxv1beta1.SandboxReasonReconcilerError, "set agent.image in the controller configuration")
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: sb.Name}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("Pod: %v; want none without an agent image", err)
	}
}

func TestAgentSpecIsValidatedAtAdmission(t *testing.T) {
	ns := env.NewNamespace(t)
	cases := map[string]struct {
		spec sandboxv1beta1.AgentSpec
		want string
	}{
		"unknown container":           {spec: sandboxv1beta1.AgentSpec{ContainerName: "nope"}, want: "agent.containerName must name a container"},
		"compatibility port own port": {spec: sandboxv1beta1.AgentSpec{Port: ptr.To[int32](9000), CompatibilityPort: ptr.To[int32](9000)}, want: "must differ from agent.port"},
		"port out of range":           {spec: sandboxv1beta1.AgentSpec{Port: ptr.To[int32](70000)}, want: "spec.agent.port"},
		"unknown auth":                {spec: sandboxv1beta1.AgentSpec{CompatibilityAuth: "Sometimes"}, want: "spec.agent.compatibilityAuth"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := env.Client.Create(t.Context(), agentSandboxObj(ns, "bad-agent", tc.spec))
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Create error = %v, want Invalid mentioning %q", err, tc.want)
			}
		})
	}
	ok := agentSandboxObj(ns, "good-agent", sandboxv1beta1.AgentSpec{ContainerName: testutil.MakeSandbox("x", ns).Obj().Spec.PodTemplate.Spec.Containers[0].Name})
	if err := env.Client.Create(t.Context(), ok); err != nil {
		t.Fatalf("a valid agent spec was rejected: %v", err)
	}
	if got := ok.Spec.Agent.CompatibilityAuth; got != sandboxv1beta1.AgentAuthRequired {
		t.Errorf("compatibilityAuth defaulted to %q, want Required", got)
	}
}

func waitReadyReason(t *testing.T, ns, name, reason, msgPart string) {
	t.Helper()
	framework.Eventually(t, func() (bool, string) {
		sb := &sandboxv1beta1.Sandbox{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, sb); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
		if c == nil {
			return false, "no Ready condition"
		}
		return c.Status == metav1.ConditionFalse && c.Reason == reason && strings.Contains(c.Message, msgPart),
			string(c.Status) + "/" + c.Reason + ": " + c.Message
	})
}

func errString(err error) string {
	if err == nil {
		return "found"
	}
	return err.Error()
}
