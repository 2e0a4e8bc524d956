package kubox

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// watchUntil checks obj and then every later version of it, followed with a watch of list's kind
// from obj's resourceVersion (filtered to obj's name), until check says done or fails, or ctx
// ends. A watch the server closes is reopened from the last version seen; one whose version
// expired (410 Gone) is resumed from a fresh read. Nothing is polled.
func (c *Client) watchUntil(ctx context.Context, list client.ObjectList, obj client.Object,
	check func(obj client.Object, deleted bool) (bool, error)) error {
	if done, err := check(obj, false); done || err != nil {
		return err
	}
	rv := obj.GetResourceVersion()
	for {
		w, err := c.kube.Watch(ctx, list, &client.ListOptions{
			Namespace:     obj.GetNamespace(),
			FieldSelector: fields.OneTermEqualSelector("metadata.name", obj.GetName()),
			Raw:           &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true},
		})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return kubeError(err, "kubox: watching", kindOf(obj)+" "+obj.GetNamespace()+"/"+obj.GetName(),
				"watch on "+resourceOf(obj)+" in "+obj.GetNamespace())
		}
		next, done, err := follow(ctx, w, rv, check)
		w.Stop()
		switch {
		case done || err != nil:
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		case next == "":
			// The version expired: read the object again and go on from there.
			fresh := obj.DeepCopyObject().(client.Object)
			if err := c.kube.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
				if apierrors.IsNotFound(err) {
					_, err = check(obj, true)
					return err
				}
				return kubeError(err, "kubox: reading", kindOf(obj)+" "+obj.GetNamespace()+"/"+obj.GetName(),
					"get on "+resourceOf(obj)+" in "+obj.GetNamespace())
			}
			if done, err := check(fresh, false); done || err != nil {
				return err
			}
			rv = fresh.GetResourceVersion()
		default:
			rv = next
		}
	}
}

// follow hands every object w, started at rv, reports to check. It returns the last
// resourceVersion seen when the watch ends without an answer ("" when it ended because that
// version expired).
func follow(ctx context.Context, w watch.Interface, rv string, check func(client.Object, bool) (bool, error)) (string, bool, error) {
	for {
		select {
		case <-ctx.Done():
			return rv, false, ctx.Err()
		case ev, open := <-w.ResultChan():
			if !open {
				return rv, false, nil
			}
			switch ev.Type {
			case watch.Error:
				status := apierrors.FromObject(ev.Object)
				if apierrors.IsResourceExpired(status) || apierrors.IsGone(status) {
					return "", false, nil
				}
				return rv, false, fmt.Errorf("kubox: watch failed: %w", status)
			case watch.Bookmark:
				if o, ok := ev.Object.(client.Object); ok {
					rv = o.GetResourceVersion()
				}
			case watch.Added, watch.Modified, watch.Deleted:
				o, ok := ev.Object.(client.Object)
				if !ok {
					continue
				}
				rv = o.GetResourceVersion()
				if done, err := check(o, ev.Type == watch.Deleted); done || err != nil {
					return rv, done, err
				}
			}
		}
	}
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *sandboxv1beta1.Sandbox:
		return "Sandbox"
	}
	return "SandboxClaim"
}

func resourceOf(obj client.Object) string {
	switch obj.(type) {
	case *sandboxv1beta1.Sandbox:
		return "sandboxes (agents.x-k8s.io)"
	}
	return "sandboxclaims (extensions.agents.x-k8s.io)"
}

// WatchSandbox reads the Sandbox namespace/name and then follows it with one watch (never
// polling), calling until with every version, until until says done or fails, or ctx ends (its
// error is returned then). A deleted Sandbox ends it with an error that Is ErrNotFound.
//
// RBAC: get and watch on sandboxes.
func (c *Client) WatchSandbox(ctx context.Context, namespace, name string, until func(*sandboxv1beta1.Sandbox) (bool, error)) error {
	sb := &sandboxv1beta1.Sandbox{}
	obj := "Sandbox " + namespace + "/" + name
	if err := c.kube.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, sb); err != nil {
		return kubeError(err, "kubox: reading", obj, "get on sandboxes (agents.x-k8s.io) in "+namespace)
	}
	return c.watchUntil(ctx, &sandboxv1beta1.SandboxList{}, sb, func(o client.Object, deleted bool) (bool, error) {
		if deleted {
			return false, &APIError{Status: http.StatusNotFound, Object: obj, Message: "the Sandbox was deleted while waiting for it"}
		}
		return until(o.(*sandboxv1beta1.Sandbox))
	})
}

// sandboxState is a condition on a Sandbox that waitSandbox waits for.
type sandboxState func(sb *sandboxv1beta1.Sandbox) (bool, error)

// waitSandbox waits, from sb's resourceVersion and for at most Options.ReadyTimeout, until state
// accepts the Sandbox, and returns the version it accepted.
func (c *Client) waitSandbox(ctx context.Context, sb *sandboxv1beta1.Sandbox, state sandboxState) (*sandboxv1beta1.Sandbox, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	last := sb
	err := c.watchUntil(ctx, &sandboxv1beta1.SandboxList{}, sb, func(obj client.Object, deleted bool) (bool, error) {
		last = obj.(*sandboxv1beta1.Sandbox)
		if deleted {
			return false, &APIError{Status: http.StatusNotFound, Object: "Sandbox " + last.Namespace + "/" + last.Name,
				Message: "the Sandbox was deleted while waiting for it (its claim was deleted or it expired)"}
		}
		return state(last)
	})
	if err != nil {
		r := meta.FindStatusCondition(last.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
		cond := "status: no Ready condition yet (is kubox-controller running?)"
		if r != nil {
			cond = fmt.Sprintf("Ready=%s %s: %s", r.Status, r.Reason, r.Message)
		}
		return nil, c.waitError(ctx, err, "Sandbox "+sb.Namespace+"/"+sb.Name, cond, ClaimSource{})
	}
	return last, nil
}

// sandboxReady accepts a Sandbox that is Ready with a Pod IP, by the API's rule
// (sandboxv1beta1.SandboxReadiness); one that expired or whose Pod terminated is an error
// (ErrNotReady), since it will not become Ready.
func sandboxReady(sb *sandboxv1beta1.Sandbox) (bool, error) {
	ready, reason := sandboxv1beta1.SandboxReadiness(sb)
	if reason == "" {
		return ready, nil
	}
	msg := sandboxv1beta1.CurrentCondition(sb, sandboxv1beta1.SandboxConditionReady).Message
	return false, &APIError{Status: http.StatusServiceUnavailable, Object: "Sandbox " + sb.Namespace + "/" + sb.Name,
		Message: fmt.Sprintf("it will not become Ready: %s: %s", reason, msg)}
}

// sandboxSuspended accepts a Sandbox whose suspension is complete (Suspended=True, its Pod gone),
// by the API's rule (sandboxv1beta1.SandboxSuspension); an expired one is an error
// (ErrNotReady), since it will not be suspended.
func sandboxSuspended(sb *sandboxv1beta1.Sandbox) (bool, error) {
	done, reason := sandboxv1beta1.SandboxSuspension(sb)
	if reason == "" {
		return done, nil
	}
	msg := sandboxv1beta1.CurrentCondition(sb, sandboxv1beta1.SandboxConditionReady).Message
	return false, &APIError{Status: http.StatusServiceUnavailable, Object: "Sandbox " + sb.Namespace + "/" + sb.Name,
		Message: fmt.Sprintf("it will not be suspended: %s: %s", reason, msg)}
}
