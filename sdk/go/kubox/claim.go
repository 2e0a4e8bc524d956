package kubox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// ClaimGenerateName is the metadata.generateName of the claims Claim creates without WithName.
const ClaimGenerateName = "kubox-"

// CreatedBy is the value of the agents.x-k8s.io/created-by label on the claims the SDK
// creates. It is agent-sandbox's value for its Go client: the controllers' metrics count only
// agent-sandbox's known values and would count any other one as "unknown".
const CreatedBy = extv1beta1.CreatedByGoClient

// ClaimSource is what a claim takes its sandbox from: a warm pool (FromPool) or a template
// (FromTemplate).
type ClaimSource struct {
	pool, template string
}

// FromPool claims a ready sandbox from the SandboxWarmPool name (spec.warmPoolRef); when the
// pool has none ready, the claim gets one as soon as the pool has.
func FromPool(name string) ClaimSource { return ClaimSource{pool: name} }

// FromTemplate claims a new sandbox built from the SandboxTemplate name
// (spec.sandboxTemplateRef).
func FromTemplate(name string) ClaimSource { return ClaimSource{template: name} }

// String describes the source: `pool "python"` or `template "python"`.
func (s ClaimSource) String() string {
	if s.pool != "" {
		return fmt.Sprintf("pool %q", s.pool)
	}
	return fmt.Sprintf("template %q", s.template)
}

// claimConfig collects the ClaimOptions of one call.
type claimConfig struct {
	namespace      string
	name           string
	ttl            time.Duration
	env            map[string]string
	labels         map[string]string
	podLabels      map[string]string
	podAnnotations map[string]string
	idlePolicy     *sandboxv1beta1.IdlePolicy
	egress         *sandboxv1beta1.EgressRestriction
	snapshot       string
	progress       func(*extv1beta1.SandboxClaim)
}

// ClaimOption changes the claim that Claim creates, or says where Connect finds one.
type ClaimOption func(*claimConfig)

// WithProgress has Claim and Connect call fn with every version of the claim they see while they
// wait for it (from their one watch), for example to show its conditions. fn runs on the
// waiting goroutine and must not block.
func WithProgress(fn func(*extv1beta1.SandboxClaim)) ClaimOption {
	return func(c *claimConfig) { c.progress = fn }
}

// WithTTL makes the claim expire d from now: spec.lifecycle.shutdownTime = now+d with
// shutdownPolicy Delete, so the controller deletes the claim and its sandbox then, even when
// the program that claimed it is gone.
func WithTTL(d time.Duration) ClaimOption { return func(c *claimConfig) { c.ttl = d } }

// WithEnv sets environment variables in the sandbox's containers (spec.env); the template's
// envVarsInjectionPolicy must allow them.
func WithEnv(env map[string]string) ClaimOption {
	return func(c *claimConfig) { c.env = mergeMaps(c.env, env) }
}

// WithIdlePolicy sets the claim's spec.idlePolicy, which replaces the template's: the
// controller suspends the sandbox after policy.SuspendAfter without activity (requests through
// kubox-router, and processes other than the main command unless RunningProcesses is Ignore),
// and, unless Wake is Manual, the next request through the router resumes it. Empty
// RunningProcesses and Wake take the API's defaults (KeepAwake, OnRequest).
func WithIdlePolicy(policy sandboxv1beta1.IdlePolicy) ClaimOption {
	return func(c *claimConfig) { c.idlePolicy = &policy }
}

// WithEgress sets the claim's spec.egress, which narrows its template's egress: r.AllowDomains
// replace the template's and must each be covered by one of them, r.DenyDomains and r.DenyCIDRs
// are added. A claim widening its template's egress, or on a template without egress, fails with
// reason EgressRejected (docs/egress.md).
func WithEgress(r sandboxv1beta1.EgressRestriction) ClaimOption {
	return func(c *claimConfig) { c.egress = &r }
}

// WithAllowDomains is WithEgress with only allowDomains: the sandbox may reach these names (and
// below "*." wildcards) only, among those its template allows.
func WithAllowDomains(domains ...string) ClaimOption {
	return func(c *claimConfig) {
		if c.egress == nil {
			c.egress = &sandboxv1beta1.EgressRestriction{}
		}
		c.egress.AllowDomains = append(c.egress.AllowDomains, domains...)
	}
}

// WithSuspendAfter is WithIdlePolicy with only suspendAfter: d from 30s to 8760h, anything else
// is rejected when the claim is created. Use Sandbox.KeepAlive to hold the sandbox awake while
// the program works without sending requests.
func WithSuspendAfter(d time.Duration) ClaimOption {
	return WithIdlePolicy(sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: d}})
}

// WithSnapshot starts the claim's sandbox from the SandboxSnapshot name (spec.snapshotRef): its
// processes, memory and files as they were when Sandbox.Snapshot took it. The snapshot must be of
// a sandbox built from the claim's template. A pool serves the claim warm only when its template
// starts from the same snapshot; otherwise the sandbox starts cold, once the snapshot is Ready.
func WithSnapshot(name string) ClaimOption { return func(c *claimConfig) { c.snapshot = name } }

// WithLabels adds labels to the claim itself (not its Pod; see WithPodLabels).
func WithLabels(l map[string]string) ClaimOption {
	return func(c *claimConfig) { c.labels = mergeMaps(c.labels, l) }
}

// WithPodLabels adds labels to the sandbox's Pod (spec.additionalPodMetadata.labels).
func WithPodLabels(l map[string]string) ClaimOption {
	return func(c *claimConfig) { c.podLabels = mergeMaps(c.podLabels, l) }
}

// WithPodAnnotations adds annotations to the sandbox's Pod
// (spec.additionalPodMetadata.annotations).
func WithPodAnnotations(a map[string]string) ClaimOption {
	return func(c *claimConfig) { c.podAnnotations = mergeMaps(c.podAnnotations, a) }
}

// WithName names the claim; by default its name is generated ("kubox-" and five characters).
func WithName(name string) ClaimOption { return func(c *claimConfig) { c.name = name } }

// InNamespace puts the claim in ns instead of Options.Namespace (Claim), or looks for it there
// (Connect).
func InNamespace(ns string) ClaimOption { return func(c *claimConfig) { c.namespace = ns } }

func mergeMaps(dst, src map[string]string) map[string]string {
	if dst == nil {
		dst = make(map[string]string, len(src))
	}
	maps.Copy(dst, src)
	return dst
}

func (c *Client) claimConfig(opts []ClaimOption) claimConfig {
	cfg := claimConfig{namespace: c.opts.Namespace}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.namespace == "" {
		cfg.namespace = c.opts.Namespace
	}
	return cfg
}

// BuildClaim returns the SandboxClaim that Claim and CreateClaim create for src and opts at now,
// in namespace (unless InNamespace says otherwise), without creating it. WithProgress plays no
// part. hack/vectors writes what it returns for a table of options into the vectors the Python and
// TypeScript SDKs' claim builders are tested against.
func BuildClaim(namespace string, src ClaimSource, now time.Time, opts ...ClaimOption) *extv1beta1.SandboxClaim {
	c := &Client{opts: Options{Namespace: namespace}}
	return buildClaim(src, c.claimConfig(opts), now)
}

// buildClaim is the SandboxClaim that Claim creates for src and cfg at now.
func buildClaim(src ClaimSource, cfg claimConfig, now time.Time) *extv1beta1.SandboxClaim {
	claim := &extv1beta1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   cfg.namespace,
			Name:        cfg.name,
			Labels:      mergeMaps(maps.Clone(cfg.labels), map[string]string{sandboxv1beta1.CreatedByLabel: CreatedBy}),
			Annotations: map[string]string{extv1beta1.ClientFirstRequestedAtAnnotation: now.UTC().Format(time.RFC3339Nano)},
		},
	}
	if cfg.name == "" {
		claim.GenerateName = ClaimGenerateName
	}
	if src.pool != "" {
		claim.Spec.WarmPoolRef = &extv1beta1.SandboxWarmPoolReference{Name: src.pool}
	} else {
		claim.Spec.SandboxTemplateRef = &extv1beta1.SandboxTemplateReference{Name: src.template}
	}
	if cfg.ttl > 0 {
		at := metav1.NewTime(now.Add(cfg.ttl).Truncate(time.Second))
		claim.Spec.Lifecycle = &extv1beta1.ClaimLifecycle{ShutdownTime: &at, ShutdownPolicy: extv1beta1.ClaimShutdownPolicyDelete}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.env)) {
		claim.Spec.Env = append(claim.Spec.Env, extv1beta1.EnvVar{Name: k, Value: cfg.env[k]})
	}
	if cfg.idlePolicy != nil {
		claim.Spec.IdlePolicy = cfg.idlePolicy.DeepCopy()
	}
	if cfg.egress != nil {
		claim.Spec.Egress = cfg.egress.DeepCopy()
	}
	if cfg.snapshot != "" {
		claim.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: cfg.snapshot}
	}
	claim.Spec.AdditionalPodMetadata = extv1beta1.AdditionalPodMetadata{
		Labels: maps.Clone(cfg.podLabels), Annotations: maps.Clone(cfg.podAnnotations)}
	return claim
}

// Claim creates a SandboxClaim for src and waits, with one watch from the claim's creation, until
// it is Ready; it returns the claim's sandbox. When the claim fails (ErrClaimFailed: its pool or
// template does not exist, its env or metadata is rejected, ...) or is not Ready within
// Options.ReadyTimeout (ErrTimeout), Claim deletes it and returns an error that names the claim,
// the condition's reason and message, and what to do.
//
// RBAC: create, get, watch and delete on sandboxclaims; get on sandboxes.
func (c *Client) Claim(ctx context.Context, src ClaimSource, opts ...ClaimOption) (*Sandbox, error) {
	cfg := c.claimConfig(opts)
	claim, err := c.createClaim(ctx, "Claim", src, cfg)
	if err != nil {
		return nil, err
	}
	sb, err := c.waitClaim(ctx, claim, src, cfg.progress)
	if err != nil {
		// The claim is ours and useless: delete it, with a context of its own since ctx may be
		// what ended.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if derr := c.deleteClaim(dctx, claim.Namespace, claim.Name); derr != nil {
			return nil, errors.Join(err, derr)
		}
		return nil, err
	}
	sb.ownsClaim = true
	return sb, nil
}

// CreateClaim creates the SandboxClaim that Claim would create for src and opts and returns it as
// created, without waiting for it: its status is still empty. The claim stays until it is
// deleted or its WithTTL passes; CreateClaim never deletes it. Connect waits for it and returns
// its sandbox once it is Ready.
//
// RBAC: create on sandboxclaims.
func (c *Client) CreateClaim(ctx context.Context, src ClaimSource, opts ...ClaimOption) (*extv1beta1.SandboxClaim, error) {
	return c.createClaim(ctx, "CreateClaim", src, c.claimConfig(opts))
}

// createClaim creates the claim for src and cfg; call names the public method for errors.
func (c *Client) createClaim(ctx context.Context, call string, src ClaimSource, cfg claimConfig) (*extv1beta1.SandboxClaim, error) {
	if src.pool == "" && src.template == "" {
		return nil, fmt.Errorf("kubox: %s needs a source: FromPool(name) or FromTemplate(name)", call)
	}
	claim := buildClaim(src, cfg, time.Now())
	if err := c.kube.Create(ctx, claim); err != nil {
		return nil, kubeError(err, "kubox: creating a SandboxClaim from", src.String()+" in namespace "+cfg.namespace,
			"create on sandboxclaims (extensions.agents.x-k8s.io) in "+cfg.namespace)
	}
	return claim, nil
}

// Connect returns the sandbox of the existing claim claimName (in Options.Namespace, or the
// namespace of InNamespace), waiting until the claim is Ready. A claim whose sandbox is suspended
// is returned at once, so that it can be resumed. Connect never deletes the claim.
//
// RBAC: get and watch on sandboxclaims; get on sandboxes.
func (c *Client) Connect(ctx context.Context, claimName string, opts ...ClaimOption) (*Sandbox, error) {
	cfg := c.claimConfig(opts)
	claim := &extv1beta1.SandboxClaim{}
	obj := "SandboxClaim " + cfg.namespace + "/" + claimName
	if err := c.kube.Get(ctx, client.ObjectKey{Namespace: cfg.namespace, Name: claimName}, claim); err != nil {
		return nil, kubeError(err, "kubox: reading", obj, "get on sandboxclaims (extensions.agents.x-k8s.io) in "+cfg.namespace)
	}
	return c.waitClaim(ctx, claim, ClaimSource{}, cfg.progress)
}

// Open returns the Sandbox namespace/sandboxName, with no claim, waiting until it is Ready. A
// suspended sandbox is returned at once, so that it can be resumed.
//
// RBAC: get and watch on sandboxes.
func (c *Client) Open(ctx context.Context, namespace, sandboxName string) (*Sandbox, error) {
	h, err := c.Lookup(ctx, namespace, sandboxName)
	if err != nil {
		return nil, err
	}
	if h.obj.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeSuspended {
		if h.obj, err = c.waitSandbox(ctx, h.obj, sandboxReady); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// Lookup returns the Sandbox namespace/sandboxName as it is now, with no claim and without
// waiting for it to be Ready: a handle to Suspend or Resume it, or to read its Object.
//
// RBAC: get on sandboxes.
func (c *Client) Lookup(ctx context.Context, namespace, sandboxName string) (*Sandbox, error) {
	if namespace == "" {
		namespace = c.opts.Namespace
	}
	sb := &sandboxv1beta1.Sandbox{}
	obj := "Sandbox " + namespace + "/" + sandboxName
	if err := c.kube.Get(ctx, client.ObjectKey{Namespace: namespace, Name: sandboxName}, sb); err != nil {
		return nil, kubeError(err, "kubox: reading", obj, "get on sandboxes (agents.x-k8s.io) in "+namespace)
	}
	return &Sandbox{c: c, ns: namespace, name: sandboxName, obj: sb}, nil
}

// waitClaim waits, from claim's resourceVersion, until the claim is Ready (or its sandbox is
// suspended) and returns its sandbox; progress (may be nil) sees every version.
func (c *Client) waitClaim(ctx context.Context, claim *extv1beta1.SandboxClaim, src ClaimSource,
	progress func(*extv1beta1.SandboxClaim)) (*Sandbox, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	last := claim
	err := c.watchUntil(ctx, &extv1beta1.SandboxClaimList{}, claim, func(obj client.Object, deleted bool) (bool, error) {
		cl := obj.(*extv1beta1.SandboxClaim)
		last = cl
		if progress != nil && !deleted {
			progress(cl)
		}
		if deleted {
			return false, fmt.Errorf("kubox: SandboxClaim %s/%s was deleted while waiting for it to become Ready: %w", cl.Namespace, cl.Name, ErrClaimFailed)
		}
		return claimState(cl)
	})
	if err != nil {
		return nil, c.waitError(ctx, err, "SandboxClaim "+claim.Namespace+"/"+last.Name, claimConditionText(last), src)
	}
	sb := &sandboxv1beta1.Sandbox{}
	key := client.ObjectKey{Namespace: last.Namespace, Name: last.Status.Sandbox.Name}
	if err := c.kube.Get(ctx, key, sb); err != nil {
		return nil, kubeError(err, "kubox: reading the claim's", "Sandbox "+key.String(), "get on sandboxes (agents.x-k8s.io) in "+key.Namespace)
	}
	return &Sandbox{c: c, ns: sb.Namespace, name: sb.Name, claim: last.Name, obj: sb}, nil
}

// waitError turns the error of a wait on obj into the error returned: a timeout names the last
// condition seen.
func (c *Client) waitError(ctx context.Context, err error, obj, lastCondition string, src ClaimSource) error {
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	from := ""
	if src.pool != "" {
		from = fmt.Sprintf(" (is %s filling? `kubectl get sandboxwarmpool %s`)", src, src.pool)
	}
	return fmt.Errorf("kubox: %s is not Ready after %s: %w; last %s%s", obj, c.opts.ReadyTimeout, ErrTimeout, lastCondition, from)
}

// claimFixes says what to do about each of the API's terminal claim reasons
// (extv1beta1.ClaimTerminalReasons), in this SDK's terms; the two NotFound reasons are written
// from the claim (claimFix).
var claimFixes = map[string]string{
	extv1beta1.ClaimReasonInvalidMetadata:           "change the Pod labels and annotations (WithPodLabels, WithPodAnnotations) to ones the template and the controller allow",
	extv1beta1.ClaimReasonEnvVarsInjectionRejected:  "drop WithEnv, or allow the variables in the template's envVarsInjectionPolicy",
	extv1beta1.ClaimReasonVolumeClaimTemplatesError: "change the claim's volumeClaimTemplates to ones the template's volumeClaimTemplatesPolicy allows",
	extv1beta1.ClaimReasonEgressRejected: "a claim may only narrow its template's egress: pass WithAllowDomains among or below the " +
		"template's spec.egress.allowDomains, or drop WithEgress/WithAllowDomains when the template has no spec.egress",
	extv1beta1.ClaimReasonClaimExpired:       "claim a new sandbox (a longer WithTTL keeps it longer)",
	extv1beta1.ClaimReasonSandboxExpired:     "claim a new sandbox",
	sandboxv1beta1.SandboxReasonPodFailed:    "read the Pod's logs (`kubectl logs`) and claim a new sandbox",
	sandboxv1beta1.SandboxReasonPodSucceeded: "the sandbox's main command exited; claim a new sandbox",
}

// claimState says whether the claim is ready to use (Ready, or its sandbox suspended), or failed
// for good (an error wrapping ErrClaimFailed), by the API's rule (extv1beta1.ClaimReadiness).
func claimState(cl *extv1beta1.SandboxClaim) (bool, error) {
	ready, reason := extv1beta1.ClaimReadiness(cl)
	if reason == "" {
		return ready, nil
	}
	msg := meta.FindStatusCondition(cl.Status.Conditions, extv1beta1.ClaimConditionReady).Message
	return false, fmt.Errorf("kubox: SandboxClaim %s/%s: %w: %s: %s; %s", cl.Namespace, cl.Name, ErrClaimFailed, reason, msg, claimFix(cl, reason))
}

// claimFix says what to do about the claim cl that failed with reason.
func claimFix(cl *extv1beta1.SandboxClaim, reason string) string {
	switch reason {
	case extv1beta1.ClaimReasonWarmPoolNotFound:
		pool := ""
		if cl.Spec.WarmPoolRef != nil {
			pool = cl.Spec.WarmPoolRef.Name
		}
		return fmt.Sprintf("create SandboxWarmPool %q in namespace %s, or claim from a pool that exists (`kubectl get sandboxwarmpools -n %s`)",
			pool, cl.Namespace, cl.Namespace)
	case extv1beta1.ClaimReasonTemplateNotFound:
		return fmt.Sprintf("create the SandboxTemplate in namespace %s, or name one that exists (`kubectl get sandboxtemplates -n %s`)",
			cl.Namespace, cl.Namespace)
	}
	if fix, ok := claimFixes[reason]; ok {
		return fix
	}
	return "claim a new sandbox"
}

// claimConditionText describes the claim's Ready condition for a timeout message.
func claimConditionText(cl *extv1beta1.SandboxClaim) string {
	r := meta.FindStatusCondition(cl.Status.Conditions, extv1beta1.ClaimConditionReady)
	if r == nil {
		return "status: no Ready condition yet (is kubox-controller running?)"
	}
	return fmt.Sprintf("Ready=%s %s: %s", r.Status, r.Reason, r.Message)
}

func (c *Client) deleteClaim(ctx context.Context, ns, name string) error {
	claim := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	err := c.kube.Delete(ctx, claim, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if client.IgnoreNotFound(err) != nil {
		return kubeError(err, "kubox: deleting", "SandboxClaim "+ns+"/"+name, "delete on sandboxclaims (extensions.agents.x-k8s.io) in "+ns)
	}
	return nil
}
