package router

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/indexer"
)

// previewIDField indexes Sandboxes by contract.PreviewID of their UID.
const previewIDField = "kubox.router.previewID"

func newScheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	utilruntime.Must(sandboxv1beta1.AddToScheme(s))
	utilruntime.Must(extv1beta1.AddToScheme(s))
	utilruntime.Must(corev1.AddToScheme(s))
	return s
}

// newCache returns the informer cache of Sandboxes, SandboxClaims and the Pods of sandboxes (of
// cfg.Namespace, or all), trimmed to the fields the router reads, with Sandboxes indexed by
// preview id and Pods by the UID of their controller (their Sandbox). Pods are label-scoped:
// only those carrying agents.x-k8s.io/sandbox-name-hash, which the controller sets on every
// sandbox's Pod, are watched.
func (rt *Router) newCache(restConfig *rest.Config) (crcache.Cache, error) {
	opts := crcache.Options{
		Scheme: newScheme(),
		ByObject: map[client.Object]crcache.ByObject{
			&sandboxv1beta1.Sandbox{}:  {Transform: trimSandbox},
			&extv1beta1.SandboxClaim{}: {Transform: trimClaim},
			&corev1.Pod{}:              {Label: sandboxPods(), Transform: trimPod},
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
		return []string{contract.PreviewID(o.GetUID())}
	}); err != nil {
		return nil, fmt.Errorf("indexing Sandboxes by preview id: %w", err)
	}
	if err := c.IndexField(ctx, &corev1.Pod{}, indexer.ControllerUIDKey, indexer.ControllerUID); err != nil {
		return nil, fmt.Errorf("indexing Pods by controller UID: %w", err)
	}
	if err := rt.watchEvents(ctx, c); err != nil {
		return nil, err
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

// watchEvents sends every change the cache sees of a Sandbox, SandboxClaim or Pod to the waits
// on it (wake.Events: a wake, E2B's create, pause, resume and kill), and counts the sandboxes
// whose destination moved.
func (rt *Router) watchEvents(ctx context.Context, c crcache.Cache) error {
	for _, w := range []struct {
		obj  client.Object
		what string
	}{{&sandboxv1beta1.Sandbox{}, "Sandboxes"}, {&extv1beta1.SandboxClaim{}, "SandboxClaims"}, {&corev1.Pod{}, "the Pods of sandboxes"}} {
		inf, err := c.GetInformer(ctx, w.obj, crcache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("watching %s: %w", w.what, err)
		}
		h := toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { rt.events.NotifyObject(obj) },
			UpdateFunc: func(_, newObj any) { rt.events.NotifyObject(newObj) },
			DeleteFunc: func(obj any) { rt.events.NotifyObject(obj) },
		}
		if _, isSandbox := w.obj.(*sandboxv1beta1.Sandbox); isSandbox {
			h.UpdateFunc = func(oldObj, newObj any) { rt.observeChange(oldObj, newObj); rt.events.NotifyObject(newObj) }
			h.DeleteFunc = func(obj any) { rt.observeChange(obj, nil); rt.events.NotifyObject(obj) }
		}
		if _, err := inf.AddEventHandler(h); err != nil {
			return fmt.Errorf("watching %s: %w", w.what, err)
		}
	}
	return nil
}

// sandboxPods selects the Pods of sandboxes.
func sandboxPods() labels.Selector {
	req, err := labels.NewRequirement(sandboxv1beta1.SandboxNameHashLabel, selection.Exists, nil)
	utilruntime.Must(err)
	return labels.NewSelector().Add(*req)
}

// trimSandbox keeps what routing reads: identity, its controller (a claim), spec.agent, the
// recorded agent ports, pod IPs and conditions; and what idle policies need: spec.idlePolicy,
// spec.operatingMode, the last-activity and suspended-by annotations, and the launch-type label
// (whether its claim's env comes through the agent, extv1beta1.LaunchedWarm).
func trimSandbox(obj any) (any, error) {
	sb, ok := obj.(*sandboxv1beta1.Sandbox)
	if !ok {
		return obj, nil
	}
	out := &sandboxv1beta1.Sandbox{TypeMeta: sb.TypeMeta, ObjectMeta: trimMeta(sb.ObjectMeta)}
	out.OwnerReferences = controllerRef(sb.OwnerReferences)
	out.Annotations = idleAnnotations(sb.Annotations)
	if v, ok := sb.Labels[sandboxv1beta1.LaunchTypeLabel]; ok {
		// extv1beta1.LaunchedWarm reads it: whether a woken sandbox waits for its claim's env.
		out.Labels = map[string]string{sandboxv1beta1.LaunchTypeLabel: v}
	}
	out.Spec.Agent = sb.Spec.Agent
	out.Spec.IdlePolicy = sb.Spec.IdlePolicy
	out.Spec.OperatingMode = sb.Spec.OperatingMode
	out.Status.Agent = sb.Status.Agent
	out.Status.PodIPs = slices.Clone(sb.Status.PodIPs)
	out.Status.Conditions = sb.Status.Conditions
	out.Status.ObservedGeneration = sb.Status.ObservedGeneration
	return out, nil
}

// idleAnnotations keeps the annotations of idle policies of a.
func idleAnnotations(a map[string]string) map[string]string {
	var out map[string]string
	for _, k := range []string{sandboxv1beta1.LastActivityAnnotation, sandboxv1beta1.SuspendedByAnnotation} {
		if v, ok := a[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// trimClaim keeps the claim's identity, its bound sandbox, its conditions, and what api/'s rule
// of whether it takes settings reads (extv1beta1.SandboxClaimSpec.SettingsInputs).
func trimClaim(obj any) (any, error) {
	c, ok := obj.(*extv1beta1.SandboxClaim)
	if !ok {
		return obj, nil
	}
	out := &extv1beta1.SandboxClaim{TypeMeta: c.TypeMeta, ObjectMeta: trimMeta(c.ObjectMeta)}
	out.Spec = c.Spec.SettingsInputs()
	out.Status.Sandbox.Name = c.Status.Sandbox.Name
	out.Status.Conditions = c.Status.Conditions
	return out, nil
}

// trimPod keeps what binds a pod IP to a sandbox: the Pod's identity, its controller (the
// Sandbox), whether it is terminating or terminated, and its IPs.
func trimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: trimMeta(pod.ObjectMeta)}
	out.OwnerReferences = controllerRef(pod.OwnerReferences)
	out.Status.Phase = pod.Status.Phase
	out.Status.PodIP = pod.Status.PodIP
	out.Status.PodIPs = slices.Clone(pod.Status.PodIPs)
	return out, nil
}

// controllerRef keeps only the controller owner reference of refs, if any.
func controllerRef(refs []metav1.OwnerReference) []metav1.OwnerReference {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			return []metav1.OwnerReference{r}
		}
	}
	return nil
}

func trimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, DeletionTimestamp: m.DeletionTimestamp}
}
