package e2b

import (
	"context"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/httperr"
)

// e2bMaxForks is the most forks one request may ask for (E2B's SandboxForkRequest.count).
const e2bMaxForks = 100

// The labels E2B's createSnapshot and fork put on the SandboxSnapshots they take: the
// SandboxTemplate a sandbox started from the snapshot is built from (Sandbox.create of the
// snapshot's ID reads it), and the E2B sandbox ID (SandboxClaim) it was taken of (listSnapshots'
// sandboxID filter). Written by the caller, in the caller's namespace: a wrong template only
// gets a claim the template's own rules (claimPolicy.snapshotRefPolicy) judge.
const (
	e2bSnapshotTemplateLabel = "e2b.kubox.dev/template"
	e2bSnapshotSandboxLabel  = "e2b.kubox.dev/sandbox-id"
)

// e2bPollInterval is how often a wait for a SandboxSnapshot reads it as a caller who may not
// watch sandboxsnapshots (the router's cache holds no snapshots; waitE2BSnapshot watches).
const e2bPollInterval = 250 * time.Millisecond

// e2bForkRequest is E2B's SandboxForkRequest.
type e2bForkRequest struct {
	Timeout *int64 `json:"timeout,omitempty"`
	Count   *int   `json:"count,omitempty"`
}

// e2bForkResult is E2B's SandboxForkResult: one fork's sandbox, or why it did not start.
type e2bForkResult struct {
	Sandbox *e2bSandbox `json:"sandbox,omitempty"`
	Error   *e2bError   `json:"error,omitempty"`
}

// e2bFork is E2B's fork: a Full SandboxSnapshot of the running sandbox, taken as the caller,
// then count new E2B sandboxes (SandboxClaims of the source's template with spec.snapshotRef)
// from it, each reported on its own. A failure before any fork is attempted (no snapshot) is
// the request's error; the snapshot stays for the forks (listSnapshots shows it).
func (a *API) e2bFork(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httperr.Error {
	var req e2bForkRequest
	if herr := decodeE2B(r, &req); herr != nil {
		return herr
	}
	count := 1
	if req.Count != nil {
		count = *req.Count
	}
	if count < 1 || count > e2bMaxForks {
		return httperr.Errorf(http.StatusBadRequest, "count %d is not a number of forks from 1 to %d", count, e2bMaxForks)
	}
	timeout, herr := e2bSeconds(req.Timeout, e2bDefaultTimeout)
	if herr != nil {
		return herr
	}
	cl, sb, herr := a.e2bClaimSandbox(ctx, c, r.PathValue("id"))
	if herr != nil {
		return herr
	}
	if herr := a.forkAllowed(ctx, cl); herr != nil {
		return herr // before a snapshot is taken in vain
	}
	snap, herr := a.takeE2BSnapshot(ctx, cl, sb, "")
	if herr != nil {
		return herr
	}
	// Every fork is a claim of its own (a UID other than the source's): the rule of
	// api/extensions/v1beta1 the controller enforces, said before any fork is attempted.
	if why := extv1beta1.ClaimSettingsRefusal(snap, types.UID("fork-of-"+cl.UID), false); why != "" {
		a.dropE2BSnapshot(ctx, snap)
		return httperr.Errorf(http.StatusConflict, "sandbox %s cannot be forked: %s (kubox refuses to hand one claim's env or secret files to another; "+
			"create the sandbox without envVars to fork it)", cl.Name, why)
	}
	results := make([]e2bForkResult, count)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			claim := a.e2bClaimFromSnapshot(c, snap, cl, timeout)
			sbx, herr := a.e2bStart(ctx, r, c, claim, snap.Name)
			if herr != nil {
				results[i].Error = &e2bError{Code: herr.Code, Message: herr.Msg}
				return
			}
			results[i].Sandbox = sbx
		})
	}
	wg.Wait()
	httperr.WriteJSON(w, http.StatusCreated, results)
	return nil
}

// e2bClaimFromSnapshot is a new E2B sandbox's claim that starts from the Ready snapshot snap: of
// the template the snapshot's label names, with spec.snapshotRef (SandboxClaim's own way to start
// from a snapshot: the controller builds its Sandbox from the template, as for any claim), the
// metadata of from (the source sandbox, for a fork; nil for Sandbox.create), and timeout.
func (a *API) e2bClaimFromSnapshot(c *e2bCaller, snap *extv1beta1.SandboxSnapshot, from *extv1beta1.SandboxClaim, timeout time.Duration) *extv1beta1.SandboxClaim {
	claim := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: newE2BSandboxID()}}
	claim.Spec.SandboxTemplateRef = &extv1beta1.SandboxTemplateReference{Name: snap.Labels[e2bSnapshotTemplateLabel]}
	claim.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: snap.Name}
	if from != nil {
		if md, ok := from.Annotations[contract.E2BMetadataAnnotation]; ok {
			claim.Annotations = map[string]string{contract.E2BMetadataAnnotation: md}
		}
	}
	claim.Spec.Lifecycle = e2bLifecycle(a.deps.Now(), timeout)
	return claim
}

// e2bStart creates claim as the caller and answers its E2B Sandbox once it is Ready, with an
// envd access token; a claim that does not become Ready is deleted (E2B's create either answers
// a sandbox or leaves none behind).
func (a *API) e2bStart(ctx context.Context, r *http.Request, c *e2bCaller, claim *extv1beta1.SandboxClaim, templateID string) (*e2bSandbox, *httperr.Error) {
	ready, herr := a.createE2BClaim(ctx, c, claim)
	if herr != nil {
		return nil, herr
	}
	tok, herr := a.e2bAccessToken(ctx, c, ready.Namespace, ready.Name, claim.Spec.Lifecycle.ShutdownTime)
	if herr != nil {
		a.dropE2BClaim(ctx, claim)
		return nil, herr
	}
	return a.e2bSandboxOf(r, templateID, ready, tok), nil
}

// takeE2BSnapshot takes a Full SandboxSnapshot of the claim's running sandbox sb as the caller
// (RBAC: create on sandboxsnapshots, and create on sandboxes/connect, checked at admission),
// named name (generated when empty), and waits until it is Ready. One that cannot be taken is
// deleted and answers 409 with the controller's reason.
func (a *API) takeE2BSnapshot(ctx context.Context, cl *extv1beta1.SandboxClaim, sb *sandboxv1beta1.Sandbox, name string) (*extv1beta1.SandboxSnapshot, *httperr.Error) {
	if sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended {
		return nil, httperr.Errorf(http.StatusConflict, "sandbox %s is paused: a snapshot is taken of a running sandbox; connect to it first", cl.Name)
	}
	tpl, herr := a.e2bClaimTemplate(ctx, cl)
	if herr != nil {
		return nil, herr
	}
	snap := &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: cl.Namespace, Name: name,
		Labels: map[string]string{e2bSnapshotTemplateLabel: tpl, e2bSnapshotSandboxLabel: cl.Name}},
		Spec: extv1beta1.SandboxSnapshotSpec{SandboxRef: extv1beta1.SnapshotSourceReference{Name: sb.Name}, Type: extv1beta1.SnapshotTypeFull}}
	if name == "" {
		snap.GenerateName = sandboxv1beta1.GeneratedNamePrefix(cl.Name, "-snap-")
	} else if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, httperr.Errorf(http.StatusBadRequest, "snapshot name %q is not a SandboxSnapshot name: lowercase letters, digits, '-' and '.'", httperr.Clip(name))
	}
	if err := a.kube.Create(ctx, snap); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, httperr.Errorf(http.StatusConflict, "a snapshot named %s exists in %s: kubox's snapshots are not versioned; delete it "+
				"(Sandbox.deleteSnapshot) or choose another name", name, cl.Namespace)
		}
		return nil, e2bKubeError(err, "creating a SandboxSnapshot of sandbox "+cl.Name)
	}
	ready, herr := a.waitE2BSnapshot(ctx, snap)
	if herr != nil {
		a.dropE2BSnapshot(ctx, snap)
		return nil, herr
	}
	return ready, nil
}

// forkAllowed refuses a fork of cl when its template lets no claim start from a snapshot.
func (a *API) forkAllowed(ctx context.Context, cl *extv1beta1.SandboxClaim) *httperr.Error {
	name, herr := a.e2bClaimTemplate(ctx, cl)
	if herr != nil {
		return herr
	}
	tpl := &extv1beta1.SandboxTemplate{}
	if err := a.kube.Get(ctx, objectKey(cl.Namespace, name), tpl); err != nil {
		return e2bKubeError(err, "reading SandboxTemplate "+name+" of sandbox "+cl.Name)
	}
	return snapshotRefAllowed(tpl, "(a fork's)")
}

// e2bClaimTemplate is the SandboxTemplate cl's sandbox is built from: its own, or its warm pool's.
func (a *API) e2bClaimTemplate(ctx context.Context, cl *extv1beta1.SandboxClaim) (string, *httperr.Error) {
	if cl.Spec.SandboxTemplateRef != nil {
		return cl.Spec.SandboxTemplateRef.Name, nil
	}
	if cl.Spec.WarmPoolRef == nil {
		return "", httperr.Errorf(http.StatusConflict, "sandbox %s names neither a SandboxTemplate nor a SandboxWarmPool", cl.Name)
	}
	pool := &extv1beta1.SandboxWarmPool{}
	if err := a.kube.Get(ctx, objectKey(cl.Namespace, cl.Spec.WarmPoolRef.Name), pool); err != nil {
		return "", e2bKubeError(err, "reading SandboxWarmPool "+cl.Spec.WarmPoolRef.Name+" of sandbox "+cl.Name)
	}
	return pool.Spec.SandboxTemplateRef.Name, nil
}

// waitE2BSnapshot reads snap as the caller until it is Ready (or failed for good: 409 with the
// controller's reason), for at most --wake-timeout. Between reads it watches the one object as
// the caller (from the resourceVersion read), so it reads again when the snapshot changes and
// never on a timer; a caller RBAC allows no watch on sandboxsnapshots is read every
// e2bPollInterval instead.
func (a *API) waitE2BSnapshot(ctx context.Context, snap *extv1beta1.SandboxSnapshot) (*extv1beta1.SandboxSnapshot, *httperr.Error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.WakeTimeout)
	defer cancel()
	got := &extv1beta1.SandboxSnapshot{}
	for {
		if err := a.kube.Get(ctx, objectKey(snap.Namespace, snap.Name), got); err != nil && ctx.Err() == nil {
			return nil, e2bKubeError(err, "reading SandboxSnapshot "+snap.Name)
		}
		r := meta.FindStatusCondition(got.Status.Conditions, extv1beta1.SnapshotConditionReady)
		switch {
		case r != nil && r.Status == metav1.ConditionTrue:
			return got, nil
		case r != nil && r.Reason == extv1beta1.SnapshotReasonCheckpointFailed:
			return nil, httperr.Errorf(http.StatusConflict, "sandbox %s could not be snapshotted (SandboxSnapshot %s: %s: %s): fork and snapshots "+
				"need the sandbox under gVisor on a node with kubox-node (docs/checkpoint.md)", got.Labels[e2bSnapshotSandboxLabel], snap.Name, r.Reason, r.Message)
		}
		if a.awaitSnapshotChange(ctx, snap.Namespace, snap.Name, got.ResourceVersion) != nil {
			cond := "no Ready condition yet (is kubox-controller running?)"
			if r != nil {
				cond = "Ready=" + string(r.Status) + " " + r.Reason + ": " + r.Message
			}
			return nil, httperr.Errorf(http.StatusGatewayTimeout, "SandboxSnapshot %s was not Ready within %s (%s)", snap.Name, a.cfg.WakeTimeout, cond)
		}
	}
}

// awaitSnapshotChange returns nil once SandboxSnapshot ns/name may have changed since
// resourceVersion rv: an event of the caller's watch on it (or the watch ending, so the caller
// reads again), or, when the caller may not watch, e2bPollInterval later. It returns ctx's error
// when ctx ends first.
func (a *API) awaitSnapshotChange(ctx context.Context, ns, name, rv string) error {
	var events <-chan watch.Event
	if wc, ok := a.kube.(client.WithWatch); ok {
		w, err := wc.Watch(ctx, &extv1beta1.SandboxSnapshotList{}, inNamespace(ns), client.MatchingFields{"metadata.name": name},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		if err == nil {
			defer w.Stop()
			events = w.ResultChan()
		}
	}
	var poll <-chan time.Time
	if events == nil {
		t := time.NewTimer(e2bPollInterval)
		defer t.Stop()
		poll = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-poll:
			return nil
		case ev, open := <-events:
			if !open || ev.Type == watch.Error {
				return nil
			}
			if o, ok := ev.Object.(client.Object); !ok || o.GetName() == name {
				return nil
			}
		}
	}
}

// dropE2BSnapshot deletes a SandboxSnapshot E2B's call took but did not answer.
func (a *API) dropE2BSnapshot(ctx context.Context, snap *extv1beta1.SandboxSnapshot) {
	if err := a.kube.Delete(context.WithoutCancel(ctx), snap, preconditionUID(snap)); err != nil && !apierrors.IsNotFound(err) {
		a.deps.Log.Warn("Deleting the SandboxSnapshot of a failed E2B call failed; delete it by hand", "snapshot", snap.Name, "namespace", snap.Namespace, "error", err)
	}
}
