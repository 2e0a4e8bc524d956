package kubox

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// ErrSnapshotFailed is returned by Snapshot and Fork when kubox-node could not snapshot the
// sandbox (not gVisor, kubox-node not configured): the wrapping error gives the controller's reason.
var ErrSnapshotFailed = errors.New("the snapshot could not be taken")

// SnapshotOption changes what Snapshot takes.
type SnapshotOption func(*extv1beta1.SandboxSnapshotSpec)

// FilesystemOnly makes Snapshot save the writes to the sandbox's root filesystems and emptyDir
// volumes only (spec.type Filesystem), not its processes and memory: a Sandbox started from it
// runs its processes afresh on those files (packages installed, files written).
func FilesystemOnly() SnapshotOption {
	return func(s *extv1beta1.SandboxSnapshotSpec) { s.Type = extv1beta1.SnapshotTypeFilesystem }
}

// Snapshot checkpoints the running sandbox — its processes, their memory, open files and the
// writes to its root filesystem; with FilesystemOnly those writes only — without stopping it
// (gVisor and kubox-node only): it creates a SandboxSnapshot named after the sandbox and waits
// until it is Ready. Sandboxes whose spec.snapshotRef names it start from it (Fork, ForkFrom,
// WithSnapshot, or a SandboxTemplate's snapshotRef for a warm pool of restores). Deleting the
// SandboxSnapshot deletes its files.
//
// RBAC: create and watch on sandboxsnapshots (extensions.agents.x-k8s.io).
func (s *Sandbox) Snapshot(ctx context.Context, opts ...SnapshotOption) (*extv1beta1.SandboxSnapshot, error) {
	if err := s.needsKube("snapshotting"); err != nil {
		return nil, err
	}
	snap := &extv1beta1.SandboxSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, GenerateName: sandboxv1beta1.GeneratedNamePrefix(s.name, "-snap-")},
		Spec:       extv1beta1.SandboxSnapshotSpec{SandboxRef: extv1beta1.SnapshotSourceReference{Name: s.name}},
	}
	for _, o := range opts {
		o(&snap.Spec)
	}
	if err := s.c.kube.Create(ctx, snap); err != nil {
		return nil, kubeError(err, "kubox: snapshotting", "sandbox "+s.String()+" (creating a SandboxSnapshot)",
			"create on sandboxsnapshots (extensions.agents.x-k8s.io) in "+s.ns)
	}
	return s.c.waitSnapshot(ctx, snap)
}

// waitSnapshot waits, for at most Options.ReadyTimeout, until snap is Ready or failed for good.
func (c *Client) waitSnapshot(ctx context.Context, snap *extv1beta1.SandboxSnapshot) (*extv1beta1.SandboxSnapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	last := snap
	obj := "SandboxSnapshot " + snap.Namespace + "/" + snap.Name
	err := c.watchUntil(ctx, &extv1beta1.SandboxSnapshotList{}, snap, func(o client.Object, deleted bool) (bool, error) {
		last = o.(*extv1beta1.SandboxSnapshot)
		r := meta.FindStatusCondition(last.Status.Conditions, extv1beta1.SnapshotConditionReady)
		switch {
		case deleted:
			return false, fmt.Errorf("kubox: %s was deleted while waiting for it: %w", obj, ErrNotFound)
		case r == nil:
			return false, nil
		case r.Status == metav1.ConditionTrue:
			return true, nil
		case r.Reason == extv1beta1.SnapshotReasonCheckpointFailed:
			return false, fmt.Errorf("kubox: %s: %w: %s", obj, ErrSnapshotFailed, r.Message)
		}
		return false, nil
	})
	if err != nil {
		cond := "status: no Ready condition yet (is kubox-controller running?)"
		if r := meta.FindStatusCondition(last.Status.Conditions, extv1beta1.SnapshotConditionReady); r != nil {
			cond = fmt.Sprintf("Ready=%s %s: %s", r.Status, r.Reason, r.Message)
		}
		if errors.Is(err, ErrSnapshotFailed) || errors.Is(err, ErrNotFound) {
			return nil, err
		}
		return nil, c.waitError(ctx, err, obj, cond, ClaimSource{})
	}
	return last, nil
}

// Fork snapshots the running sandbox (Snapshot) and starts n new Sandboxes from the snapshot,
// each continuing from the same memory with its own name, agent token, Service and Pod IP; the
// sandbox itself keeps running. It returns them once all are Ready, opened by name: delete them
// with Delete. On the node that holds the snapshot (docs/checkpoint.md).
//
// RBAC: Snapshot's, and create, get and watch on sandboxes.
func (s *Sandbox) Fork(ctx context.Context, n int) ([]*Sandbox, error) {
	if n < 1 {
		return nil, fmt.Errorf("kubox: forking sandbox %s: n is %d; want at least 1", s.String(), n)
	}
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return s.c.ForkFrom(ctx, snap, n)
}

// ForkFrom starts n new Sandboxes from the Ready SandboxSnapshot snap, each with the spec of the
// Sandbox it was taken of (which must still exist) and spec.snapshotRef, and returns them once
// all are Ready. The forks that were created stay when one fails: the error names them.
func (c *Client) ForkFrom(ctx context.Context, snap *extv1beta1.SandboxSnapshot, n int) ([]*Sandbox, error) {
	src := &sandboxv1beta1.Sandbox{}
	key := client.ObjectKey{Namespace: snap.Namespace, Name: snap.Spec.SandboxRef.Name}
	if err := c.kube.Get(ctx, key, src); err != nil {
		return nil, kubeError(err, "kubox: forking from SandboxSnapshot "+snap.Namespace+"/"+snap.Name+": reading", "Sandbox "+key.String(),
			"get on sandboxes (agents.x-k8s.io) in "+snap.Namespace)
	}
	forks := make([]*Sandbox, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { forks[i], errs[i] = c.startFork(ctx, src, snap.Name) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		var made []string
		for _, f := range forks {
			if f != nil {
				made = append(made, f.name)
			}
		}
		return nil, fmt.Errorf("kubox: forking sandbox %s/%s (forks ready: %v): %w", src.Namespace, src.Name, made, err)
	}
	return forks, nil
}

// startFork creates one fork of src from the SandboxSnapshot snapshot and waits until it is Ready.
func (c *Client) startFork(ctx context.Context, src *sandboxv1beta1.Sandbox, snapshot string) (*Sandbox, error) {
	sb := sandboxv1beta1.ForkOf(src, snapshot)
	if err := c.kube.Create(ctx, sb); err != nil {
		return nil, kubeError(err, "kubox: creating a fork of", "Sandbox "+src.Namespace+"/"+src.Name,
			"create on sandboxes (agents.x-k8s.io) in "+src.Namespace)
	}
	ready, err := c.waitSandbox(ctx, sb, sandboxReady)
	if err != nil {
		return nil, err
	}
	return &Sandbox{c: c, ns: sb.Namespace, name: sb.Name, obj: ready}, nil
}

// Delete deletes the Sandbox itself (a fork, or one opened by name); a sandbox a claim holds is
// released with Close instead. A Sandbox already gone is not an error.
//
// RBAC: delete on sandboxes.
func (s *Sandbox) Delete(ctx context.Context) error {
	if err := s.needsKube("deleting"); err != nil {
		return err
	}
	if s.claim != "" {
		return fmt.Errorf("kubox: sandbox %s belongs to claim %s: release it with Close", s.String(), s.claim)
	}
	sb := &sandboxv1beta1.Sandbox{}
	sb.Namespace, sb.Name = s.ns, s.name
	if err := client.IgnoreNotFound(s.c.kube.Delete(ctx, sb)); err != nil {
		return kubeError(err, "kubox: deleting", "Sandbox "+s.String(), "delete on sandboxes (agents.x-k8s.io) in "+s.ns)
	}
	return nil
}
