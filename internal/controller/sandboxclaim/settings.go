package sandboxclaim

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/agentclient"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// This file implements spec.secretFiles, and spec.env for a claim served from a warm pool: the
// claim's settings reach its running sandbox through the sandbox's kubox-agent
// (SettingsService), and the claim is Ready only once the agent took them. Delivering them is
// not an API write, so a warm claim with settings costs the same two writes as one without.

// settingsTimeout bounds one ApplySettings call.
const settingsTimeout = 5 * time.Second

// validateSecretFiles implements the template's claimPolicy.allowedSecretFilePaths: every
// mountPath must be an allowed directory or under one, and the template must run the agent, which
// writes the files.
func validateSecretFiles(files []extv1beta1.SecretFile, tpl *extv1beta1.SandboxTemplate) *failure {
	if len(files) == 0 {
		return nil
	}
	if tpl.Spec.Agent == nil {
		return fail(extv1beta1.ClaimReasonSecretFilesRejected,
			"Claim sets spec.secretFiles, but SandboxTemplate %s does not run kubox-agent (spec.agent), which writes them into the sandbox; remove spec.secretFiles or use a template with spec.agent", tpl.Name)
	}
	var allowed []string
	if cp := tpl.Spec.ClaimPolicy; cp != nil {
		allowed = cp.AllowedSecretFilePaths
	}
	for i, f := range files {
		if !slices.ContainsFunc(allowed, func(dir string) bool { return within(f.MountPath, dir) }) {
			return fail(extv1beta1.ClaimReasonSecretFilesRejected,
				"spec.secretFiles[%d].mountPath %s is not one of, or under, SandboxTemplate %s's claimPolicy.allowedSecretFilePaths %v; use one of them",
				i, f.MountPath, tpl.Name, allowed)
		}
	}
	return nil
}

// within reports whether the clean absolute path p is dir or under it.
func within(p, dir string) bool {
	dir = path.Clean(dir)
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// envFitsWarm reports whether a warm sandbox can take the claim's env through its agent: the
// template runs the agent, every variable is for the agent's container, and the template's
// envVarsInjectionPolicy allows them (mergeEnv's rules, which then apply to the processes the
// agent starts). Otherwise the claim starts cold, where the variables go into the Pod, or fail
// there with mergeEnv's reason.
func envFitsWarm(env []extv1beta1.EnvVar, tpl *extv1beta1.SandboxTemplate) bool {
	if len(env) == 0 {
		return true
	}
	if tpl.Spec.Agent == nil {
		return false
	}
	spec := tpl.Spec.PodTemplate.Spec.DeepCopy()
	agent := findContainer(spec, tpl.Spec.Agent.ContainerName)
	for _, e := range env {
		if c := findContainer(spec, e.ContainerName); agent == nil || c == nil || c.Name != agent.Name {
			return false
		}
	}
	return mergeEnv(spec, env, tpl.Spec.EnvVarsInjectionPolicy, tpl.Name) == nil
}

// deliverSettings is the pass's last phase: when the claim's sandbox is Ready and takes settings
// its current Pod has not taken yet, it sends them to the sandbox's agent. Until that succeeds
// the claim is Ready=False (SettingsPending, or SecretFilesRejected for a Secret it cannot read)
// with the reason in the message, and the pass asks for the controller's backoff.
func (r *Reconciler) deliverSettings(ctx context.Context, claim *extv1beta1.SandboxClaim, obs *observed) error {
	sb := obs.sandbox
	if obs.state != stateBound || sb == nil || !claim.Spec.TakesSettings(extv1beta1.LaunchedWarm(sb.Labels)) || !isSandboxReady(sb) {
		return nil
	}
	key := settingsKey(claim, sb)
	if r.memory.settingsDelivered(claim.UID, key) {
		return nil
	}
	req, f, err := r.settingsRequest(ctx, claim, sb)
	if err == nil {
		err = r.agents.ApplySettings(ctx, sb, req)
		if err == nil {
			r.memory.deliveredSettings(claim.UID, key)
			return nil
		}
		f = fail(extv1beta1.ClaimReasonSettingsPending,
			"Delivering the claim's settings to Sandbox %s through its agent failed, retrying: %v", sb.Name, err)
	}
	obs.settings, obs.retry = f, err
	return nil
}

// settingsKey names what the settings went into: the claim's generation and the sandbox's
// current Pod, told by its first Pod IP and the time it became Ready (a resumed sandbox has a
// new Pod, whose agent has no settings).
func settingsKey(claim *extv1beta1.SandboxClaim, sb *sandboxv1beta1.Sandbox) string {
	var since time.Time
	if ready := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady); ready != nil {
		since = ready.LastTransitionTime.Time
	}
	ip := ""
	if len(sb.Status.PodIPs) > 0 {
		ip = sb.Status.PodIPs[0]
	}
	return fmt.Sprintf("%d/%s/%s/%s", claim.Generation, sb.UID, ip, since.UTC().Format(time.RFC3339Nano))
}

// settingsRequest builds the ApplySettings request of claim for sb: its env for a warm sandbox,
// and a file mountPath/key for each key of each Secret of spec.secretFiles, read from the API
// server (the controller keeps no cache of Secrets). A Secret that is missing or unreadable is
// a failure and an error, so the claim is retried.
func (r *Reconciler) settingsRequest(ctx context.Context, claim *extv1beta1.SandboxClaim, sb *sandboxv1beta1.Sandbox) (*agentv1.ApplySettingsRequest, *failure, error) {
	req := &agentv1.ApplySettingsRequest{ClaimUid: string(claim.UID)}
	if extv1beta1.LaunchedWarm(sb.Labels) {
		for _, e := range claim.Spec.Env {
			req.Env = append(req.Env, &agentv1.EnvVar{Name: e.Name, Value: e.Value})
		}
	}
	for i, sf := range claim.Spec.SecretFiles {
		secret := &corev1.Secret{}
		err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: claim.Namespace, Name: sf.SecretName}, secret)
		if err != nil {
			what := "cannot be read"
			if apierrors.IsNotFound(err) {
				what = "does not exist"
			}
			f := fail(extv1beta1.ClaimReasonSecretFilesRejected,
				"Secret %s of spec.secretFiles[%d] %s in namespace %s; create it, the claim is retried", sf.SecretName, i, what, claim.Namespace)
			return nil, f, fmt.Errorf("reading Secret %s of SandboxClaim %s: %w", sf.SecretName, claim.Name, err)
		}
		for _, k := range slices.Sorted(maps.Keys(secret.Data)) {
			req.Files = append(req.Files, &agentv1.SettingsFile{Path: path.Join(sf.MountPath, k), Content: secret.Data[k]})
		}
	}
	return req, nil, nil
}

// agentSettings calls SettingsService on sandboxes' agents.
type agentSettings interface {
	// ApplySettings sends req to sb's agent.
	ApplySettings(ctx context.Context, sb *sandboxv1beta1.Sandbox, req *agentv1.ApplySettingsRequest) error
}

// agentClient calls SettingsService.ApplySettings on the sandbox's agent (agentclient).
type agentClient struct{ agents *agentclient.Dialer }

// newAgentClient returns an agentSettings for key; with no key, every call fails saying so.
func newAgentClient(key []byte) agentSettings { return &agentClient{agents: agentclient.New(key)} }

// ApplySettings implements agentSettings.
func (c *agentClient) ApplySettings(ctx context.Context, sb *sandboxv1beta1.Sandbox, req *agentv1.ApplySettingsRequest) error {
	hc, base, err := c.agents.Endpoint(sb)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, settingsTimeout)
	defer cancel()
	_, err = agentv1connect.NewSettingsServiceClient(hc, base).ApplySettings(ctx, connect.NewRequest(req))
	return err
}
