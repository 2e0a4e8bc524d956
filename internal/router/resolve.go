package router

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/indexer"
	"github.com/kubox-dev/kubox/internal/provenance"
	"github.com/kubox-dev/kubox/internal/router/metrics"
)

// target is a resolved destination.
type target struct {
	sandbox *sandboxv1beta1.Sandbox
	addr    string // ip:port
	// agentToken, when not empty, is sent as the request's Authorization: the port is the
	// sandbox's agent or compatibility port.
	agentToken string
}

// lookupClaim reads a claim from the cache; nil when it does not exist.
func (rt *Router) lookupClaim(ctx context.Context, ns, name string) (*extv1beta1.SandboxClaim, *httpError) {
	if herr := rt.checkNamespace(ns); herr != nil {
		return nil, herr
	}
	c := &extv1beta1.SandboxClaim{}
	err := rt.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, errorf(http.StatusServiceUnavailable, "reading SandboxClaim %s/%s from the router's cache: %v", ns, name, err)
	}
	return c, nil
}

// cachedSandbox reads Sandbox ns/name from the cache; nil when it is gone or unreadable.
func (rt *Router) cachedSandbox(ctx context.Context, ns, name string) *sandboxv1beta1.Sandbox {
	sb, herr := rt.lookupSandbox(ctx, ns, name)
	if herr != nil {
		return nil
	}
	return sb
}

// lookupSandbox reads a sandbox from the cache; nil when it does not exist.
func (rt *Router) lookupSandbox(ctx context.Context, ns, name string) (*sandboxv1beta1.Sandbox, *httpError) {
	if herr := rt.checkNamespace(ns); herr != nil {
		return nil, herr
	}
	sb := &sandboxv1beta1.Sandbox{}
	err := rt.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sb)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, errorf(http.StatusServiceUnavailable, "reading Sandbox %s/%s from the router's cache: %v", ns, name, err)
	}
	return sb, nil
}

func (rt *Router) checkNamespace(ns string) *httpError {
	if rt.cfg.Namespace != "" && ns != rt.cfg.Namespace {
		return errorf(http.StatusNotFound, "namespace %q is not served by this router: it serves only namespace %q (--namespace)", ns, rt.cfg.Namespace)
	}
	return nil
}

// sandboxByPreviewID finds the sandbox a preview host names.
func (rt *Router) sandboxByPreviewID(ctx context.Context, id string) (*sandboxv1beta1.Sandbox, *httpError) {
	list := &sandboxv1beta1.SandboxList{}
	if err := rt.cache.List(ctx, list, client.MatchingFields{previewIDField: id}); err != nil {
		return nil, errorf(http.StatusServiceUnavailable, "looking up preview id %s in the router's cache: %v", id, err)
	}
	if len(list.Items) != 1 {
		return nil, errorf(http.StatusNotFound, "no sandbox has the preview id %q: the sandbox may have been deleted "+
			"(a recreated sandbox gets a new id); find its current preview host in the sandbox's status or with the kubox CLI", id)
	}
	return &list.Items[0], nil
}

// resolveTarget picks the sandbox's destination for port (0: its agent port). It dials the pod
// IP the sandbox's status reports only while the sandbox's own Pod holds it (checkPod), and
// sends the sandbox's agent token only to a port the sandbox records as its agent's
// (status.agent): never to a port the router guesses.
func (rt *Router) resolveTarget(ctx context.Context, sb *sandboxv1beta1.Sandbox, port int) (*target, *httpError) {
	ready := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
	if ready == nil || ready.Status != "True" {
		why := "it has no Ready condition yet"
		if ready != nil {
			why = "Ready is " + string(ready.Status) + " (" + ready.Reason + ": " + ready.Message + ")"
		}
		return nil, errorf(http.StatusServiceUnavailable, "sandbox %s/%s is not ready: %s; wait until it is Ready and retry", sb.Namespace, sb.Name, why)
	}
	if len(sb.Status.PodIPs) == 0 {
		return nil, errorf(http.StatusServiceUnavailable, "sandbox %s/%s has no pod IP yet; wait until it is Ready and retry", sb.Namespace, sb.Name)
	}
	ip, err := netip.ParseAddr(sb.Status.PodIPs[0])
	if err != nil {
		return nil, errorf(http.StatusBadGateway, "sandbox %s/%s reports the pod IP %q, which is not an IP address", sb.Namespace, sb.Name, sb.Status.PodIPs[0])
	}
	if !rt.cfg.AllowLoopbackPodIP && blockedIP(ip) {
		rt.metrics.UpstreamErrors.WithLabelValues(sb.Namespace, metrics.ReasonBlockedIP).Inc()
		return nil, errorf(http.StatusBadGateway, "sandbox %s/%s reports the pod IP %s, which no Pod has (loopback, link-local, multicast "+
			"or unspecified); the router does not dial it", sb.Namespace, sb.Name, ip)
	}
	if herr := rt.checkPod(ctx, sb, ip); herr != nil {
		return nil, herr
	}
	agent := sb.Status.Agent
	if port == 0 {
		if agent == nil {
			return nil, noAgentPort(sb)
		}
		port = int(agent.Port)
	}
	t := &target{sandbox: sb, addr: net.JoinHostPort(ip.String(), strconv.Itoa(port))}
	if isAgentPort(agent, port) || servesCodeInterpreter(sb, port) {
		t.agentToken = contract.DeriveAgentToken(rt.cfg.AgentTokenKey, sb.UID)
	}
	return t, nil
}

// servesCodeInterpreter reports whether port is the code interpreter's (E2B's wire, which
// kubox-agent serves on contract.E2BCodeInterpreterPort in every sandbox it runs in) of a sandbox
// whose status records its agent: the interpreter requires the agent token, which the router
// adds on every route as for the agent's own port, and which preview hosts and path routes
// therefore refuse (agentPortRole).
func servesCodeInterpreter(sb *sandboxv1beta1.Sandbox, port int) bool {
	return port == contract.E2BCodeInterpreterPort && sb.Spec.Agent != nil && sb.Status.Agent != nil
}

// isAgentPort reports whether port is one the sandbox records as its agent's.
func isAgentPort(agent *sandboxv1beta1.AgentStatus, port int) bool {
	return port > 0 && slices.Contains(agent.Ports(), int32(port))
}

// noAgentPort is the answer to a request for the agent of a sandbox that records no agent port.
func noAgentPort(sb *sandboxv1beta1.Sandbox) *httpError {
	if sb.Spec.Agent == nil {
		return errorf(http.StatusBadRequest, "sandbox %s/%s runs no kubox-agent (it has no spec.agent), so it has no agent port: "+
			"name the port of its app with the header X-Sandbox-Port", sb.Namespace, sb.Name)
	}
	return errorf(http.StatusServiceUnavailable, "sandbox %s/%s does not record its agent's port yet (status.agent is empty: its Pod "+
		"was made before kubox-controller recorded agent ports, or the controller has not seen it yet); retry shortly, or "+
		"recreate the sandbox's Pod (suspend and resume it) if this persists", sb.Namespace, sb.Name)
}

// checkPod makes sure ip belongs to the sandbox's current Pod: a Pod the Sandbox controls (by
// UID), neither terminating nor terminated, whose status holds ip. A sandbox's status reports
// its Pod's IP a moment after the Pod changes; in that moment the IP may already belong to
// another Pod, and the router must not send the sandbox's traffic (or its agent token) there.
func (rt *Router) checkPod(ctx context.Context, sb *sandboxv1beta1.Sandbox, ip netip.Addr) *httpError {
	held, err := rt.podHolds(ctx, sb, ip)
	if err != nil {
		return errorf(http.StatusServiceUnavailable, "looking up the Pod of sandbox %s/%s in the router's cache: %v; retry shortly", sb.Namespace, sb.Name, err)
	}
	if held {
		return nil
	}
	rt.metrics.UpstreamErrors.WithLabelValues(sb.Namespace, metrics.ReasonStalePodIP).Inc()
	return errorf(http.StatusServiceUnavailable, "sandbox %s/%s reports the pod IP %s, but no running Pod of the sandbox has that IP "+
		"(its Pod was deleted or replaced, and the sandbox's status has not caught up); retry shortly", sb.Namespace, sb.Name, ip)
}

// podHolds reports whether a live Pod the sandbox controls holds ip, as the cache has them.
func (rt *Router) podHolds(ctx context.Context, sb *sandboxv1beta1.Sandbox, ip netip.Addr) (bool, error) {
	pods := &corev1.PodList{}
	if err := rt.cache.List(ctx, pods, client.InNamespace(sb.Namespace),
		client.MatchingFields{indexer.ControllerUIDKey: string(sb.UID)}); err != nil {
		return false, err
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; provenance.ControlledBy(p, provenance.Sandbox, sb.UID) && sandboxv1beta1.PodLive(p) && podHasIP(p, ip) {
			return true, nil
		}
	}
	return false, nil
}

// podReady reports whether the cache holds the live Pod of sb with sb's first pod IP: a woken
// sandbox is proxied to once resolveTarget will find it there.
func (rt *Router) podReady(ctx context.Context, sb *sandboxv1beta1.Sandbox) bool {
	if len(sb.Status.PodIPs) == 0 {
		return false
	}
	ip, err := netip.ParseAddr(sb.Status.PodIPs[0])
	if err != nil {
		return true // resolveTarget answers that
	}
	held, err := rt.podHolds(ctx, sb, ip)
	return held || err != nil
}

// podHasIP reports whether ip is one of pod's IPs.
func podHasIP(pod *corev1.Pod, ip netip.Addr) bool {
	for _, p := range pod.Status.PodIPs {
		if a, err := netip.ParseAddr(p.IP); err == nil && a == ip {
			return true
		}
	}
	a, err := netip.ParseAddr(pod.Status.PodIP)
	return err == nil && a == ip
}

// claimOwns reports whether sb's controller reference names the SandboxClaim with uid (by kind
// and group too: a bare UID in a reference of another kind proves nothing).
func claimOwns(sb *sandboxv1beta1.Sandbox, uid types.UID) bool {
	return uid != "" && provenance.ControlledBy(sb, provenance.SandboxClaim, uid)
}

// blockedIP reports addresses no Pod has; dialing them would reach the router's own host.
func blockedIP(ip netip.Addr) bool {
	return ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsMulticast() ||
		ip.IsUnspecified() || ip.IsInterfaceLocalMulticast()
}
