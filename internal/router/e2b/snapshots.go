package e2b

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/httperr"
)

// An E2B snapshot is a SandboxSnapshot in the caller's namespace: its snapshotID, and its one
// name, are the SandboxSnapshot's name (docs/e2b.md).

// e2bSnapshotInfo is E2B's SnapshotInfo.
type e2bSnapshotInfo struct {
	SnapshotID string   `json:"snapshotID"`
	Names      []string `json:"names"`
}

func snapshotInfo(s *extv1beta1.SandboxSnapshot) e2bSnapshotInfo {
	return e2bSnapshotInfo{SnapshotID: s.Name, Names: []string{s.Name}}
}

// e2bCreateSnapshot is E2B's createSnapshot: a Full SandboxSnapshot of the running sandbox,
// named as the request says (else generated), answered once it is Ready. The sandbox keeps
// running (kubox's checkpoint stops it only for the moment of the checkpoint).
func (a *API) e2bCreateSnapshot(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httperr.Error {
	var req struct {
		Name string `json:"name,omitempty"`
	}
	if herr := decodeE2B(r, &req); herr != nil {
		return herr
	}
	cl, sb, herr := a.e2bClaimSandbox(ctx, c, r.PathValue("id"))
	if herr != nil {
		return herr
	}
	snap, herr := a.takeE2BSnapshot(ctx, cl, sb, req.Name)
	if herr != nil {
		return herr
	}
	httperr.WriteJSON(w, http.StatusCreated, snapshotInfo(snap))
	return nil
}

// e2bListSnapshots is E2B's listSnapshots: the SandboxSnapshots of the caller's namespace, read
// as the caller (RBAC: list on sandboxsnapshots), filtered by the E2B sandbox they were taken of
// (sandboxID) and by name, newest first, in pages (limit, nextToken).
func (a *API) e2bListSnapshots(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httperr.Error {
	f := e2bListFilter{limit: e2bDefaultListLimit}
	if herr := f.parsePage(r.URL.Query()); herr != nil {
		return herr
	}
	list := &extv1beta1.SandboxSnapshotList{}
	opts := []client.ListOption{inNamespace(c.namespace)}
	if id := r.URL.Query().Get("sandboxID"); id != "" {
		opts = append(opts, client.MatchingLabels{e2bSnapshotSandboxLabel: id})
	}
	if err := a.kube.List(ctx, list, opts...); err != nil {
		return e2bKubeError(err, "listing SandboxSnapshots in "+c.namespace)
	}
	name := r.URL.Query().Get("name")
	all := []e2bDetail{}
	for i := range list.Items {
		s := &list.Items[i]
		if s.DeletionTimestamp != nil || (name != "" && s.Name != name) || s.Labels[e2bPauseSnapshotLabel] != "" {
			continue // a pause's snapshot is the pause's, not an E2B snapshot
		}
		all = append(all, e2bDetail{SandboxID: s.Name, StartedAt: s.CreationTimestamp.UTC()})
	}
	page, next := f.page(all)
	out := make([]e2bSnapshotInfo, 0, len(page))
	for _, d := range page {
		out = append(out, e2bSnapshotInfo{SnapshotID: d.SandboxID, Names: []string{d.SandboxID}})
	}
	if next != "" {
		w.Header().Set(e2bNextTokenHeader, next)
	}
	httperr.WriteJSON(w, http.StatusOK, out)
	return nil
}

// e2bDeleteTemplate is E2B's DELETE /templates/{id}, which its SDKs' deleteSnapshot calls: it
// deletes the SandboxSnapshot id as the caller (RBAC: get and delete on sandboxsnapshots).
// Templates proper are SandboxTemplates, which kubox's E2B API does not delete.
func (a *API) e2bDeleteTemplate(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httperr.Error {
	id := r.PathValue("id")
	snap, herr := a.e2bSnapshot(ctx, c, id)
	if herr != nil {
		return herr
	}
	if herr := a.pauseSnapshotInUse(ctx, c, snap); herr != nil {
		return herr
	}
	if err := a.kube.Delete(ctx, snap, preconditionUID(snap)); err != nil {
		return e2bKubeError(err, "deleting SandboxSnapshot "+id)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// pauseSnapshotInUse refuses to delete the snapshot of an E2B pause that its sandbox still
// starts from: a paused sandbox, or one resumed from a pause, names it in spec.snapshotRef (its
// next Pod, after a resume that did not keep the memory or a restart, starts on its files), and
// without it that Pod could not start and a fork or snapshot of the sandbox would be refused as
// holding unknown settings. Read as the caller; the label only says which sandbox to look at
// (the sandbox's spec.snapshotRef decides), so a label a tenant writes protects nothing.
func (a *API) pauseSnapshotInUse(ctx context.Context, c *e2bCaller, snap *extv1beta1.SandboxSnapshot) *httperr.Error {
	id := snap.Labels[e2bPauseSnapshotLabel]
	if id == "" || len(validation.IsDNS1123Label(id)) > 0 {
		return nil
	}
	cl, sb, herr := a.e2bClaimSandbox(ctx, c, id)
	if herr != nil {
		if herr.Code == http.StatusNotFound {
			return nil
		}
		return herr
	}
	if ref := sb.Spec.SnapshotRef; ref == nil || ref.Name != snap.Name {
		return nil
	}
	return httperr.Errorf(http.StatusConflict, "snapshot %s holds the files of sandbox %s's pause, which the sandbox starts from (its "+
		"spec.snapshotRef) should it be resumed without its memory or restarted: it is deleted with the sandbox (kill), or replaced "+
		"by its next pause", snap.Name, cl.Name)
}

// e2bSnapshot reads the SandboxSnapshot id as the caller: 404 when there is none (or it is
// being deleted), saying what kubox's E2B API deletes.
func (a *API) e2bSnapshot(ctx context.Context, c *e2bCaller, id string) (*extv1beta1.SandboxSnapshot, *httperr.Error) {
	notFound := httperr.Errorf(http.StatusNotFound, "snapshot %q not found: %s has no SandboxSnapshot of that name (kubox's E2B API deletes "+
		"snapshots only; SandboxTemplates are managed with kubectl)", httperr.Clip(id), c.namespace)
	if len(validation.IsDNS1123Subdomain(id)) > 0 {
		return nil, notFound
	}
	snap := &extv1beta1.SandboxSnapshot{}
	if err := a.kube.Get(ctx, objectKey(c.namespace, id), snap); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notFound
		}
		return nil, e2bKubeError(err, "reading SandboxSnapshot "+id)
	}
	if snap.DeletionTimestamp != nil {
		return nil, notFound
	}
	return snap, nil
}

// e2bSnapshotSource points claim at the SandboxSnapshot templateID (Sandbox.create of a
// snapshot's ID), and reports whether there is one. The claim is of the template the snapshot's
// label names, with spec.snapshotRef. What the controller would refuse is refused here first,
// with its reason: a snapshot not Ready, a template whose claimPolicy does not allow a
// snapshotRef, and a snapshot that holds another claim's env or secret files.
func (a *API) e2bSnapshotSource(ctx context.Context, claim *extv1beta1.SandboxClaim, templateID string) (bool, *httperr.Error) {
	snap := &extv1beta1.SandboxSnapshot{}
	if err := a.kube.Get(ctx, objectKey(claim.Namespace, templateID), snap); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			return false, nil // the caller's 404 names the templates; a snapshot they may not read is none of theirs
		}
		return true, e2bKubeError(err, "reading SandboxSnapshot "+templateID)
	}
	if r := meta.FindStatusCondition(snap.Status.Conditions, extv1beta1.SnapshotConditionReady); r == nil || r.Status != metav1.ConditionTrue {
		return true, httperr.Errorf(http.StatusConflict, "snapshot %s is not Ready (%s); wait for it, or take another", snap.Name, snapshotCondition(r))
	}
	tplName := snap.Labels[e2bSnapshotTemplateLabel]
	if tplName == "" {
		return true, httperr.Errorf(http.StatusBadRequest, "SandboxSnapshot %s names no SandboxTemplate to start it in: label it %s=<template> "+
			"(E2B's createSnapshot and fork do)", snap.Name, e2bSnapshotTemplateLabel)
	}
	tpl := &extv1beta1.SandboxTemplate{}
	if err := a.kube.Get(ctx, objectKey(claim.Namespace, tplName), tpl); err != nil {
		return true, e2bKubeError(err, "reading SandboxTemplate "+tplName+" of snapshot "+snap.Name)
	}
	if herr := snapshotRefAllowed(tpl, snap.Name); herr != nil {
		return true, herr
	}
	// A new claim's UID is none the snapshot's source claim had.
	if why := extv1beta1.ClaimSettingsRefusal(snap, types.UID("new-claim-"+claim.Name), false); why != "" {
		return true, httperr.Errorf(http.StatusConflict, "snapshot %s cannot start another sandbox: %s", snap.Name, why)
	}
	claim.Spec.SandboxTemplateRef = &extv1beta1.SandboxTemplateReference{Name: tplName}
	claim.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: snap.Name}
	return true, nil
}

// snapshotRefAllowed refuses, as the claim controller would (SnapshotRefRejected), a claim of
// tpl naming snapshot when tpl's claimPolicy.snapshotRefPolicy is not Allowed.
func snapshotRefAllowed(tpl *extv1beta1.SandboxTemplate, snapshot string) *httperr.Error {
	if own := tpl.Spec.SnapshotRef; own != nil && own.Name == snapshot {
		return nil
	}
	if p := tpl.Spec.ClaimPolicy; p != nil && p.SnapshotRefPolicy == extv1beta1.SnapshotRefPolicyAllowed {
		return nil
	}
	return httperr.Errorf(http.StatusBadRequest, "SandboxTemplate %s does not let its sandboxes start from snapshot %s: set its "+
		"spec.claimPolicy.snapshotRefPolicy to Allowed (an administrator's choice: docs/e2b.md)", tpl.Name, snapshot)
}

func snapshotCondition(r *metav1.Condition) string {
	if r == nil {
		return "no Ready condition yet"
	}
	return "Ready=" + string(r.Status) + " " + r.Reason + ": " + r.Message
}
