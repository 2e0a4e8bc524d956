package router

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/preview"
)

// previewIDField indexes Sandboxes by preview.ID of their UID.
const previewIDField = "kubox.router.previewID"

func newScheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	utilruntime.Must(sandboxv1beta1.AddToScheme(s))
	utilruntime.Must(extv1beta1.AddToScheme(s))
	return s
}

// newCache returns the informer cache of Sandboxes and SandboxClaims (of cfg.Namespace, or all),
// trimmed to the fields the router reads, with Sandboxes indexed by preview id.
func (rt *Router) newCache(restConfig *rest.Config) (crcache.Cache, error) {
	opts := crcache.Options{
		Scheme: newScheme(),
		ByObject: map[client.Object]crcache.ByObject{
			&sandboxv1beta1.Sandbox{}:  {Transform: trimSandbox},
			&extv1beta1.SandboxClaim{}: {Transform: trimClaim},
		},
	}
	if rt.cfg.Namespace != "" {
		opts.DefaultNamespaces = map[string]crcache.Config{rt.cfg.Namespace: {}}
	}
	c, err := crcache.New(restConfig, opts)
	if err != nil {
		return nil, fmt.Errorf("creating the informer cache of Sandboxes and SandboxClaims: %w", err)
	}
	ctx := context.Background()
	if err := c.IndexField(ctx, &sandboxv1beta1.Sandbox{}, previewIDField, func(o client.Object) []string {
		return []string{preview.ID(o.GetUID())}
	}); err != nil {
		return nil, fmt.Errorf("indexing Sandboxes by preview id: %w", err)
	}
	inf, err := c.GetInformer(ctx, &sandboxv1beta1.Sandbox{}, crcache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("watching Sandboxes: %w", err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) { rt.observeChange(oldObj, newObj) },
		DeleteFunc: func(obj any) { rt.observeChange(obj, nil) },
	}); err != nil {
		return nil, fmt.Errorf("watching Sandboxes: %w", err)
	}
	if _, err := c.GetInformer(ctx, &extv1beta1.SandboxClaim{}, crcache.BlockUntilSynced(false)); err != nil {
		return nil, fmt.Errorf("watching SandboxClaims: %w", err)
	}
	return c, nil
}

// observeChange counts a sandbox whose destination went away or moved: requests in flight to
// the old pod IP will fail, new ones go to the new one.
func (rt *Router) observeChange(oldObj, newObj any) {
	if tomb, ok := oldObj.(toolscache.DeletedFinalStateUnknown); ok {
		oldObj = tomb.Obj
	}
	oldSb, ok := oldObj.(*sandboxv1beta1.Sandbox)
	if !ok || len(oldSb.Status.PodIPs) == 0 {
		return
	}
	newSb, _ := newObj.(*sandboxv1beta1.Sandbox)
	if newSb == nil || len(newSb.Status.PodIPs) == 0 || newSb.Status.PodIPs[0] != oldSb.Status.PodIPs[0] {
		rt.metrics.CacheInvalidations.Inc()
	}
}

// trimSandbox keeps what routing reads: identity, spec.agent, pod IPs and conditions.
func trimSandbox(obj any) (any, error) {
	sb, ok := obj.(*sandboxv1beta1.Sandbox)
	if !ok {
		return obj, nil
	}
	out := &sandboxv1beta1.Sandbox{TypeMeta: sb.TypeMeta, ObjectMeta: trimMeta(sb.ObjectMeta)}
	out.Spec.Agent = sb.Spec.Agent
	out.Status.PodIPs = slices.Clone(sb.Status.PodIPs)
	out.Status.Conditions = sb.Status.Conditions
	return out, nil
}

// trimClaim keeps the claim's identity and its bound sandbox.
func trimClaim(obj any) (any, error) {
	c, ok := obj.(*extv1beta1.SandboxClaim)
	if !ok {
		return obj, nil
	}
	out := &extv1beta1.SandboxClaim{TypeMeta: c.TypeMeta, ObjectMeta: trimMeta(c.ObjectMeta)}
	out.Status.Sandbox.Name = c.Status.Sandbox.Name
	out.Status.Conditions = c.Status.Conditions
	return out, nil
}

func trimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, DeletionTimestamp: m.DeletionTimestamp}
}
