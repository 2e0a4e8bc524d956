package sandboxclaim

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
)

// agentTemplate is makeTemplate with the agent, secret files allowed under /etc/claim and
// envVarsInjectionPolicy policy.
func agentTemplate(policy extv1beta1.EnvVarsInjectionPolicy) *extv1beta1.SandboxTemplate {
	tpl := makeTemplate().EnvVarsInjectionPolicy(policy).Env("DEFINED", "template").
		ClaimPolicy(extv1beta1.ClaimPolicy{AllowedSecretFilePaths: []string{"/etc/claim", "/run/secrets/"}}).Obj()
	tpl.Spec.Agent = &sandboxv1beta1.AgentSpec{}
	return tpl
}

func TestValidateSecretFiles(t *testing.T) {
	noAgent := agentTemplate(extv1beta1.EnvVarsInjectionPolicyAllowed)
	noAgent.Spec.Agent = nil
	cases := map[string]struct {
		files    []extv1beta1.SecretFile
		template *extv1beta1.SandboxTemplate
		want     string // part of the failure's message; "" for none
	}{
		"none":                       {template: makeTemplate().Obj()},
		"an allowed directory":       {files: []extv1beta1.SecretFile{{SecretName: "s", MountPath: "/etc/claim"}}, template: agentTemplate("")},
		"under an allowed directory": {files: []extv1beta1.SecretFile{{SecretName: "s", MountPath: "/run/secrets/api"}}, template: agentTemplate("")},
		"a sibling with the prefix":  {files: []extv1beta1.SecretFile{{SecretName: "s", MountPath: "/etc/claimed"}}, template: agentTemplate(""), want: "spec.secretFiles[0].mountPath /etc/claimed"},
		"outside":                    {files: []extv1beta1.SecretFile{{SecretName: "s", MountPath: "/etc/claim"}, {SecretName: "t", MountPath: "/home"}}, template: agentTemplate(""), want: "spec.secretFiles[1].mountPath /home"},
		"a template allowing none": {files: []extv1beta1.SecretFile{{SecretName: "s", MountPath: "/etc/claim"}}, template: func() *extv1beta1.SandboxTemplate {
			t := makeTemplate().Obj()
			t.Spec.Agent = &sandboxv1beta1.AgentSpec{}
			return t
		}(), want: "allowedSecretFilePaths []"},
		"a template without an agent": {files: []extv1beta1.SecretFile{{SecretName: "s", MountPath: "/etc/claim"}}, template: noAgent, want: "does not run kubox-agent"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := validateSecretFiles(tc.files, tc.template)
			switch {
			case tc.want == "" && f != nil:
				t.Errorf("validateSecretFiles() = %v, want none", f)
			case tc.want != "" && (f == nil || f.reason != extv1beta1.ClaimReasonSecretFilesRejected || !strings.Contains(f.message, tc.want)):
				t.Errorf("validateSecretFiles() = %v, want SecretFilesRejected naming %q", f, tc.want)
			}
		})
	}
}

func TestEnvFitsWarm(t *testing.T) {
	first := makeTemplate().Obj().Spec.PodTemplate.Spec.Containers[0].Name
	sidecar := func(tpl *extv1beta1.SandboxTemplate) *extv1beta1.SandboxTemplate {
		tpl.Spec.PodTemplate.Spec.Containers = append(tpl.Spec.PodTemplate.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox"})
		return tpl
	}
	noAgent := agentTemplate(extv1beta1.EnvVarsInjectionPolicyAllowed)
	noAgent.Spec.Agent = nil
	agentInSidecar := sidecar(agentTemplate(extv1beta1.EnvVarsInjectionPolicyAllowed))
	agentInSidecar.Spec.Agent.ContainerName = "sidecar"
	cases := map[string]struct {
		env      []extv1beta1.EnvVar
		template *extv1beta1.SandboxTemplate
		want     bool
	}{
		"no env":                               {template: makeTemplate().Obj(), want: true},
		"a new variable, Allowed":              {env: []extv1beta1.EnvVar{{Name: "NEW", Value: "x"}}, template: agentTemplate(extv1beta1.EnvVarsInjectionPolicyAllowed), want: true},
		"naming the agent's container":         {env: []extv1beta1.EnvVar{{Name: "NEW", ContainerName: first}}, template: agentTemplate(extv1beta1.EnvVarsInjectionPolicyAllowed), want: true},
		"a defined variable, Overrides":        {env: []extv1beta1.EnvVar{{Name: "DEFINED"}}, template: agentTemplate(extv1beta1.EnvVarsInjectionPolicyOverrides), want: true},
		"a defined variable, Allowed: cold":    {env: []extv1beta1.EnvVar{{Name: "DEFINED"}}, template: agentTemplate(extv1beta1.EnvVarsInjectionPolicyAllowed)},
		"Disallowed: cold":                     {env: []extv1beta1.EnvVar{{Name: "NEW"}}, template: agentTemplate("")},
		"no agent: cold":                       {env: []extv1beta1.EnvVar{{Name: "NEW"}}, template: noAgent},
		"another container: cold":              {env: []extv1beta1.EnvVar{{Name: "NEW", ContainerName: "sidecar"}}, template: sidecar(agentTemplate(extv1beta1.EnvVarsInjectionPolicyAllowed))},
		"the first container, agent elsewhere": {env: []extv1beta1.EnvVar{{Name: "NEW"}}, template: agentInSidecar},
		"the agent in a sidecar":               {env: []extv1beta1.EnvVar{{Name: "NEW", ContainerName: "sidecar"}}, template: agentInSidecar, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.template.DeepCopy()
			if got := envFitsWarm(tc.env, tc.template); got != tc.want {
				t.Errorf("envFitsWarm() = %t, want %t", got, tc.want)
			}
			if diff := cmp.Diff(before, tc.template); diff != "" {
				t.Errorf("envFitsWarm() changed the template (-before +after):\n%s", diff)
			}
		})
	}
}

// fakeAgents records the requests sent to agents and answers err.
type fakeAgents struct {
	sent []*agentv1.ApplySettingsRequest
	err  error
}

func (f *fakeAgents) ApplySettings(_ context.Context, _ *sandboxv1beta1.Sandbox, req *agentv1.ApplySettingsRequest) error {
	f.sent = append(f.sent, req)
	return f.err
}

func TestDeliverSettings(t *testing.T) {
	ready := sbCond(sandboxv1beta1.SandboxConditionReady, metav1.ConditionTrue, "Ready", "", testEarlier)
	warm := func() *sandboxv1beta1.Sandbox {
		sb := sandboxWith("python-pool-abcde", []string{"10.0.0.7"}, ready)
		sb.UID, sb.Labels = "sandbox-uid", map[string]string{sandboxv1beta1.LaunchTypeLabel: extv1beta1.LaunchTypeWarm}
		return sb
	}
	claim := makeClaim().Env("TOKEN", "t", "").Obj()
	claim.Spec.SecretFiles = []extv1beta1.SecretFile{{SecretName: "api", MountPath: "/etc/claim"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: testNS},
		Data: map[string][]byte{"key": []byte("k"), "cert": []byte("c")}}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	newReconciler := func(agents *fakeAgents, objs ...runtime.Object) *Reconciler {
		r := &Reconciler{apiReader: fake.NewClientBuilder().WithScheme(scheme).WithRuntimeObjects(objs...).Build(),
			memory: newClaimMemory(clocktesting.NewFakeClock(testNow.Time)), agents: agents}
		return r
	}
	deliver := func(r *Reconciler, claim *extv1beta1.SandboxClaim, sb *sandboxv1beta1.Sandbox) *observed {
		t.Helper()
		obs := &observed{}
		obs.bind(sb)
		if err := r.deliverSettings(t.Context(), claim, obs); err != nil {
			t.Fatal(err)
		}
		return obs
	}

	t.Run("a warm sandbox gets the env and a file per key, once per Pod", func(t *testing.T) {
		agents := &fakeAgents{}
		r := newReconciler(agents, secret)
		if obs := deliver(r, claim, warm()); obs.settings != nil || obs.retry != nil {
			t.Fatalf("deliverSettings: %v, %v", obs.settings, obs.retry)
		}
		want := []*agentv1.ApplySettingsRequest{{ClaimUid: string(testClaimUID),
			Env:   []*agentv1.EnvVar{{Name: "TOKEN", Value: "t"}},
			Files: []*agentv1.SettingsFile{{Path: "/etc/claim/cert", Content: []byte("c")}, {Path: "/etc/claim/key", Content: []byte("k")}}}}
		if diff := cmp.Diff(want, agents.sent, protocmp.Transform()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
		deliver(r, claim, warm())
		if len(agents.sent) != 1 {
			t.Errorf("a second pass sent %d requests in all, want the first only", len(agents.sent))
		}
		resumed := warm()
		resumed.Status.Conditions[0].LastTransitionTime = testNow
		deliver(r, claim, resumed)
		if len(agents.sent) != 2 {
			t.Errorf("a new Pod (Ready again) got %d requests in all, want a second", len(agents.sent))
		}
	})
	t.Run("a cold sandbox gets the files only", func(t *testing.T) {
		agents := &fakeAgents{}
		cold := warm()
		cold.Labels[sandboxv1beta1.LaunchTypeLabel] = extv1beta1.LaunchTypeCold
		deliver(newReconciler(agents, secret), claim, cold)
		if len(agents.sent) != 1 || len(agents.sent[0].GetEnv()) != 0 || len(agents.sent[0].GetFiles()) != 2 {
			t.Errorf("requests %v, want one with the files and no env", agents.sent)
		}
	})
	t.Run("nothing before the sandbox is Ready, nor for a claim without settings", func(t *testing.T) {
		agents := &fakeAgents{}
		r := newReconciler(agents, secret)
		notReady := warm()
		notReady.Status.Conditions = nil
		deliver(r, claim, notReady)
		deliver(r, makeClaim().Obj(), warm())
		deliver(r, makeClaim().Env("TOKEN", "t", "").Obj(), func() *sandboxv1beta1.Sandbox { sb := warm(); sb.Labels = nil; return sb }())
		if len(agents.sent) != 0 {
			t.Errorf("sent %v, want nothing", agents.sent)
		}
	})
	t.Run("an agent error is SettingsPending and retried", func(t *testing.T) {
		agents := &fakeAgents{err: errors.New("connection refused")}
		r := newReconciler(agents, secret)
		obs := deliver(r, claim, warm())
		if obs.settings == nil || obs.settings.reason != extv1beta1.ClaimReasonSettingsPending ||
			!strings.Contains(obs.settings.message, "connection refused") || obs.retry == nil {
			t.Errorf("settings %v, retry %v; want SettingsPending naming the error, and a retry", obs.settings, obs.retry)
		}
		if c := readyCondition(obs); c.Status != metav1.ConditionFalse || c.Reason != extv1beta1.ClaimReasonSettingsPending {
			t.Errorf("Ready = %s/%s, want False/SettingsPending while the sandbox is Ready", c.Status, c.Reason)
		}
		agents.err = nil
		if obs := deliver(r, claim, warm()); obs.settings != nil || len(agents.sent) != 2 {
			t.Errorf("after the agent recovered: %v, %d requests; want delivered on the retry", obs.settings, len(agents.sent))
		}
	})
	t.Run("a missing Secret is SecretFilesRejected and retried", func(t *testing.T) {
		agents := &fakeAgents{}
		obs := deliver(newReconciler(agents), claim, warm())
		if obs.settings == nil || obs.settings.reason != extv1beta1.ClaimReasonSecretFilesRejected ||
			!strings.Contains(obs.settings.message, "Secret api of spec.secretFiles[0] does not exist") || obs.retry == nil || len(agents.sent) != 0 {
			t.Errorf("settings %v, retry %v, sent %v; want SecretFilesRejected naming the Secret, a retry, no request", obs.settings, obs.retry, agents.sent)
		}
	})
}

func TestAgentClientWithoutKey(t *testing.T) {
	err := newAgentClient(nil).ApplySettings(t.Context(), sandboxWith("s", []string{"10.0.0.7"}), &agentv1.ApplySettingsRequest{})
	if err == nil || !strings.Contains(err.Error(), "agent.tokenKeyFile") {
		t.Errorf("ApplySettings without a key: %v, want an error naming agent.tokenKeyFile", err)
	}
}
