package sandbox

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

const testProxy = "http://kubox-egress.kubox-system.svc.cluster.local:3128"

func egressPod(t *testing.T, eg *sandboxv1beta1.EgressPolicy) *corev1.Pod {
	t.Helper()
	sb := agentSandbox(sandboxv1beta1.AgentSpec{}, func(spec *corev1.PodSpec) {
		spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox", Env: []corev1.EnvVar{{Name: "https_proxy", Value: "http://mine:1"}}}}
	})
	sb.Spec.Egress = eg
	pod, err := (&Reconciler{scheme: testScheme(t), agent: testAgent, clusterDomain: "cluster.local", egressProxy: testProxy}).buildPod(sb)
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// TestInjectEgress: every container of the sandbox, init containers included, uses the proxy
// (a template's own proxy is replaced); the agent's install container does not; the CA comes
// only with credentials.
func TestInjectEgress(t *testing.T) {
	pod := egressPod(t, &sandboxv1beta1.EgressPolicy{AllowDomains: []string{"pypi.org"}})
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		env := map[string]string{}
		for _, e := range c.Env {
			if _, dup := env[e.Name]; dup {
				t.Errorf("container %s sets %s twice", c.Name, e.Name)
			}
			env[e.Name] = e.Value
		}
		if c.Name == AgentInitContainerName {
			if _, set := env["HTTPS_PROXY"]; set {
				t.Errorf("the agent's install container got the proxy")
			}
			continue
		}
		if env["https_proxy"] != testProxy || env["HTTP_PROXY"] != testProxy {
			t.Errorf("container %s: https_proxy=%q HTTP_PROXY=%q; want %s", c.Name, env["https_proxy"], env["HTTP_PROXY"], testProxy)
		}
		if _, set := env[contract.EgressCAFileEnv]; set {
			t.Errorf("container %s trusts an egress CA though the policy has no credentials", c.Name)
		}
	}
	if slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == EgressCAVolumeName }) {
		t.Error("the Pod mounts an egress CA though the policy has no credentials")
	}

	withCred := egressPod(t, &sandboxv1beta1.EgressPolicy{AllowDomains: []string{"api.test"},
		Credentials: []sandboxv1beta1.EgressCredential{{Header: "x-api-key", Domains: []string{"api.test"}}}})
	i := slices.IndexFunc(withCred.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == EgressCAVolumeName })
	if i < 0 || withCred.Spec.Volumes[i].Secret.SecretName != sandboxv1beta1.EgressCASecretName(testName) {
		t.Fatalf("volumes %v; want the sandbox's egress CA Secret", withCred.Spec.Volumes)
	}
}
