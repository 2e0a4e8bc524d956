package kubox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// Sandbox is a handle on one kubox Sandbox: it runs processes (Run, RunCmd, Start), moves files
// (Files), suspends and resumes it, and closes its claim. It is safe for concurrent use.
type Sandbox struct {
	c         *Client
	ns, name  string
	claim     string
	ownsClaim bool
	// attached, when set (Attach), is the only way to the agent: there is no Kubernetes client.
	attached *endpoint

	mu       sync.Mutex
	obj      *sandboxv1beta1.Sandbox
	tokenUID types.UID
	token    string
	closed   bool
	// cwdContexts are the code-interpreter contexts RunCodeOptions.Cwd made, by language and cwd.
	cwdContexts map[string]*CodeContext
}

// Name is the Sandbox's name (its Pod's name too).
func (s *Sandbox) Name() string { return s.name }

// Namespace is the Sandbox's namespace.
func (s *Sandbox) Namespace() string { return s.ns }

// ClaimName is the name of the SandboxClaim the sandbox was claimed or connected through; "" when
// it was opened by name (Client.Open).
func (s *Sandbox) ClaimName() string { return s.claim }

// String is "namespace/name".
func (s *Sandbox) String() string { return s.ns + "/" + s.name }

// Object returns a copy of the Sandbox as last seen (after Claim, Connect, Open, Suspend or
// Resume).
func (s *Sandbox) Object() *sandboxv1beta1.Sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.obj.DeepCopy()
}

func (s *Sandbox) setObject(sb *sandboxv1beta1.Sandbox) {
	s.mu.Lock()
	s.obj = sb
	s.mu.Unlock()
}

// object names the sandbox in error messages.
func (s *Sandbox) object() string { return "sandbox " + s.String() }

// agentToken returns the agent token of sb (direct mode), read from its Secret once per UID.
func (s *Sandbox) agentToken(ctx context.Context, sb *sandboxv1beta1.Sandbox) (string, error) {
	s.mu.Lock()
	if s.token != "" && s.tokenUID == sb.UID {
		defer s.mu.Unlock()
		return s.token, nil
	}
	s.mu.Unlock()
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: sb.Namespace, Name: sandboxv1beta1.AgentSecretName(sb.Name)}
	if err := s.c.kube.Get(ctx, key, secret); err != nil {
		return "", kubeError(err, "kubox: reading the agent token of sandbox "+s.String()+" from", "Secret "+key.String(),
			"get on secrets in "+sb.Namespace+" (direct connections only; the router needs none)")
	}
	tok := strings.TrimSpace(string(secret.Data[sandboxv1beta1.AgentTokenSecretKey]))
	if tok == "" {
		return "", fmt.Errorf("kubox: Secret %s has no %q key: the controller has not written the sandbox's agent token; "+
			"check its agent configuration (agent.tokenKeyFile)", key, sandboxv1beta1.AgentTokenSecretKey)
	}
	s.mu.Lock()
	s.token, s.tokenUID = tok, sb.UID
	s.mu.Unlock()
	return tok, nil
}

// seenReady reports whether the sandbox was Ready, and not being suspended, when the SDK last
// saw it.
func (s *Sandbox) seenReady() bool {
	sb := s.Object()
	ok, err := sandboxReady(sb)
	return ok && err == nil && sb.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeSuspended
}

// ModeOption configures Suspend and Resume.
type ModeOption func(*modeOptions)

// SuspendOption configures Suspend; it is a ModeOption.
type SuspendOption = ModeOption

type modeOptions struct {
	keepMemory bool
	noWait     bool
	progress   func(*sandboxv1beta1.Sandbox)
}

// KeepMemory makes Suspend keep the sandbox's memory (spec.suspendPolicy.keepMemory; gVisor
// only): its processes, their memory and open files continue after Resume. When the memory could
// not be kept the sandbox is suspended without it and Suspend returns an error that wraps
// ErrMemoryNotKept with the controller's reason. Resume ignores it.
func KeepMemory() ModeOption { return func(o *modeOptions) { o.keepMemory = true } }

// NoWait makes Suspend and Resume return once the spec is set, without waiting for the
// controller; Object is then the Sandbox as patched.
func NoWait() ModeOption { return func(o *modeOptions) { o.noWait = true } }

// WithSandboxProgress has Suspend and Resume call fn with every version of the Sandbox they see
// while they wait (from their one watch), for example to show its conditions. fn runs on the
// waiting goroutine and must not block.
func WithSandboxProgress(fn func(*sandboxv1beta1.Sandbox)) ModeOption {
	return func(o *modeOptions) { o.progress = fn }
}

func modeOptionsOf(opts []ModeOption) modeOptions {
	var o modeOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// withProgress is state that first shows the Sandbox to progress (when set).
func withProgress(state sandboxState, progress func(*sandboxv1beta1.Sandbox)) sandboxState {
	if progress == nil {
		return state
	}
	return func(sb *sandboxv1beta1.Sandbox) (bool, error) {
		progress(sb)
		return state(sb)
	}
}

// ErrMemoryNotKept is returned by Suspend with KeepMemory when it suspended the sandbox without its
// memory.
var ErrMemoryNotKept = errors.New("the sandbox was suspended without its memory")

// Suspend sets the Sandbox's spec.operatingMode to Suspended (a merge patch; RBAC patch on
// sandboxes) and waits until its Pod is gone (condition Suspended=True), at most
// Options.ReadyTimeout. Its volumes, Service and claim stay; Resume starts it again. With
// KeepMemory, its memory too. An expired sandbox cannot be suspended: Suspend fails at once
// (ErrNotReady) rather than waiting.
func (s *Sandbox) Suspend(ctx context.Context, opts ...ModeOption) error {
	o := modeOptionsOf(opts)
	spec := map[string]any{"operatingMode": sandboxv1beta1.SandboxOperatingModeSuspended}
	if o.keepMemory {
		spec["suspendPolicy"] = map[string]any{"keepMemory": true}
	}
	sb, err := s.patchSpec(ctx, spec, "setting spec.operatingMode=Suspended on")
	if err != nil || o.noWait {
		return err
	}
	if sb, err = s.c.waitSandbox(ctx, sb, withProgress(sandboxSuspended, o.progress)); err != nil {
		return err
	}
	s.setObject(sb)
	if !o.keepMemory {
		return nil
	}
	if why := sandboxv1beta1.MemoryNotKept(sb); why != "" {
		return fmt.Errorf("kubox: Sandbox %s: %w: %s", s.String(), ErrMemoryNotKept, why)
	}
	return nil
}

// Resume sets the Sandbox's spec.operatingMode to Running (RBAC patch on sandboxes) and waits
// until it is Ready again, with its new Pod's IP, at most Options.ReadyTimeout. A sandbox that
// will not become Ready (expired, its Pod ended) fails at once (ErrNotReady).
func (s *Sandbox) Resume(ctx context.Context, opts ...ModeOption) error {
	o := modeOptionsOf(opts)
	sb, err := s.setMode(ctx, sandboxv1beta1.SandboxOperatingModeRunning)
	if err != nil || o.noWait {
		return err
	}
	if sb, err = s.c.waitSandbox(ctx, sb, withProgress(sandboxReady, o.progress)); err != nil {
		return err
	}
	s.setObject(sb)
	return nil
}

func (s *Sandbox) setMode(ctx context.Context, mode sandboxv1beta1.SandboxOperatingMode) (*sandboxv1beta1.Sandbox, error) {
	return s.patchSpec(ctx, map[string]any{"operatingMode": mode}, "setting spec.operatingMode="+string(mode)+" on")
}

// patchSpec merge-patches the Sandbox's spec with spec; what says what for errors.
func (s *Sandbox) patchSpec(ctx context.Context, spec map[string]any, what string) (*sandboxv1beta1.Sandbox, error) {
	if err := s.needsKube(what); err != nil {
		return nil, err
	}
	sb := &sandboxv1beta1.Sandbox{}
	sb.Namespace, sb.Name = s.ns, s.name
	body, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return nil, err
	}
	if err := s.c.kube.Patch(ctx, sb, client.RawPatch(types.MergePatchType, body)); err != nil {
		return nil, kubeError(err, "kubox: "+what, "Sandbox "+s.String(),
			"patch on sandboxes (agents.x-k8s.io) in "+s.ns)
	}
	s.setObject(sb)
	return sb, nil
}

// Close deletes the sandbox's SandboxClaim (background propagation: the call returns once the
// claim is deleted, and the garbage collector then deletes its Sandbox and Pod). A sandbox
// opened by name (Client.Open) has no claim: Close does nothing. Close is idempotent; a claim
// already gone is not an error. RBAC: delete on sandboxclaims. A sandbox attached by URL
// (Attach) cannot delete its claim: Close returns ErrAttached.
func (s *Sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed || s.claim == "" {
		return nil
	}
	if err := s.needsKube("deleting the claim of"); err != nil {
		return err
	}
	if err := s.c.deleteClaim(ctx, s.ns, s.claim); err != nil {
		return err
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}
