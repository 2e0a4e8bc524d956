package ui

import (
	"context"
	"fmt"
	"net/http"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/wake"
)

// actions says what the viewer may do with a sandbox; the page shows only those.
type actions struct {
	// Suspend and resume patch spec.operatingMode.
	Suspend bool `json:"suspend"`
	Resume  bool `json:"resume"`
	Delete  bool `json:"delete"`
	// Extend patches the shutdownTime of the sandbox's claim, or of the sandbox without one.
	Extend bool `json:"extend"`
	// Connect opens the terminal and the files: create sandboxes/connect, as the router's routes.
	Connect bool `json:"connect"`
}

// Longest extension of a sandbox's TTL at once, and the one the page offers.
const (
	maxExtend     = 7 * 24 * time.Hour
	defaultExtend = time.Hour
)

var (
	sandboxGroup = sandboxv1beta1.GroupVersion.Group
	claimGroup   = extv1beta1.GroupVersion.Group
)

// allowed asks the API server, with the viewer's token, which actions RBAC allows on sandbox
// ns/name (and claim, the sandbox's owner, when not empty).
func (h *Handler) allowed(ctx context.Context, ns, name, claim string) (actions, error) {
	check := func(verb, group, resource, sub, obj string) (bool, error) {
		ok, err := h.review(ctx, &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group,
			Resource: resource, Subresource: sub, Name: obj})
		if err != nil {
			return false, fmt.Errorf("asking the API server what you may do with Sandbox %s/%s: %w", ns, name, err)
		}
		return ok, nil
	}
	var a actions
	var err error
	if a.Suspend, err = check("patch", sandboxGroup, "sandboxes", "", name); err != nil {
		return a, err
	}
	a.Resume = a.Suspend
	if a.Delete, err = check("delete", sandboxGroup, "sandboxes", "", name); err != nil {
		return a, err
	}
	a.Extend = a.Suspend
	if claim != "" {
		if a.Extend, err = check("patch", claimGroup, "sandboxclaims", "", claim); err != nil {
			return a, err
		}
	}
	a.Connect, err = check("create", sandboxGroup, "sandboxes", "connect", name)
	return a, err
}

// selfSubjectAccessReview asks the API server, with the viewer's token ctx carries, whether
// RBAC allows the viewer attrs.
func (h *Handler) selfSubjectAccessReview(ctx context.Context, attrs *authorizationv1.ResourceAttributes) (bool, error) {
	r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}
	if err := h.kube.Create(ctx, r); err != nil {
		return false, err
	}
	return r.Status.Allowed, nil
}

func (h *Handler) suspend(ctx context.Context, w http.ResponseWriter, r *http.Request, _ *viewer) *Error {
	return h.setMode(ctx, w, r, sandboxv1beta1.SandboxOperatingModeSuspended)
}

func (h *Handler) resume(ctx context.Context, w http.ResponseWriter, r *http.Request, _ *viewer) *Error {
	return h.setMode(ctx, w, r, sandboxv1beta1.SandboxOperatingModeRunning)
}

// setMode patches the sandbox's spec.operatingMode as the viewer.
func (h *Handler) setMode(ctx context.Context, w http.ResponseWriter, r *http.Request, mode sandboxv1beta1.SandboxOperatingMode) *Error {
	ns, name, herr := h.sandboxName(r)
	if herr != nil {
		return herr
	}
	sb := &sandboxv1beta1.Sandbox{}
	if err := h.kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sb); err != nil {
		return kubeError(err, "reading Sandbox "+ns+"/"+name)
	}
	if _, err := wake.SetMode(ctx, h.kube, sb, mode); err != nil {
		return kubeError(err, "patching Sandbox "+ns+"/"+name)
	}
	return patched(w, name)
}

// deleteSandbox deletes the sandbox as the viewer.
func (h *Handler) deleteSandbox(ctx context.Context, w http.ResponseWriter, r *http.Request, _ *viewer) *Error {
	ns, name, herr := h.sandboxName(r)
	if herr != nil {
		return herr
	}
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := h.kube.Delete(ctx, sb); err != nil {
		return kubeError(err, "deleting Sandbox "+ns+"/"+name)
	}
	writeJSON(w, http.StatusOK, map[string]string{"deleted": name})
	return nil
}

// extendRequest is the body of extend: how many seconds to add to the later of now and the
// current shutdownTime.
type extendRequest struct {
	Seconds int64 `json:"seconds"`
}

// extend moves the shutdownTime of the sandbox's claim (whose expiry deletes the sandbox), or of
// the sandbox without one, later, as the viewer.
func (h *Handler) extend(ctx context.Context, w http.ResponseWriter, r *http.Request, _ *viewer) *Error {
	ns, name, herr := h.sandboxName(r)
	if herr != nil {
		return herr
	}
	req := extendRequest{Seconds: int64(defaultExtend / time.Second)}
	if herr := decodeJSON(r, &req); herr != nil {
		return herr
	}
	by := time.Duration(req.Seconds) * time.Second
	if by <= 0 || by > maxExtend {
		return errorf(http.StatusBadRequest, "extend by 1 s to %s, not %d s", maxExtend, req.Seconds)
	}
	sb := &sandboxv1beta1.Sandbox{}
	if err := h.kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sb); err != nil {
		return kubeError(err, "reading Sandbox "+ns+"/"+name)
	}
	if o := metav1.GetControllerOf(sb); o != nil && o.Kind == "SandboxClaim" {
		claim := &extv1beta1.SandboxClaim{}
		if err := h.kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.Name}, claim); err != nil {
			return kubeError(err, "reading SandboxClaim "+ns+"/"+o.Name)
		}
		var cur *metav1.Time
		if claim.Spec.Lifecycle != nil {
			cur = claim.Spec.Lifecycle.ShutdownTime
		}
		if err := wake.SetShutdownTime(ctx, h.kube, claim, later(cur, by)); err != nil {
			return kubeError(err, "patching SandboxClaim "+ns+"/"+o.Name)
		}
		return patched(w, o.Name)
	}
	if err := wake.SetShutdownTime(ctx, h.kube, sb, later(sb.Spec.ShutdownTime, by)); err != nil {
		return kubeError(err, "patching Sandbox "+ns+"/"+name)
	}
	return patched(w, name)
}

// later is by after the later of now and cur, to the second.
func later(cur *metav1.Time, by time.Duration) metav1.Time {
	from := now()
	if cur != nil && cur.After(from) {
		from = cur.Time
	}
	return metav1.NewTime(from.Add(by).Truncate(time.Second))
}

// patched answers a lifecycle write (internal/router/wake) made as the viewer.
func patched(w http.ResponseWriter, name string) *Error {
	writeJSON(w, http.StatusOK, map[string]string{"patched": name})
	return nil
}
