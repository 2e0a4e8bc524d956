package router

import (
	"context"
	"net"
	"net/http"
	"net/netip"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent/token"
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

// port is the port of the target's address.
func (t *target) port() string {
	_, p, _ := net.SplitHostPort(t.addr)
	return p
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

// resolveTarget picks the sandbox's destination for port (0: its agent port).
func (rt *Router) resolveTarget(sb *sandboxv1beta1.Sandbox, port int) (*target, *httpError) {
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
	agentPort, compatPort := rt.agentPorts(sb)
	if port == 0 {
		port = agentPort
	}
	t := &target{sandbox: sb, addr: net.JoinHostPort(ip.String(), itoa(port))}
	if sb.Spec.Agent != nil && (port == agentPort || (compatPort != 0 && port == compatPort)) {
		t.agentToken = token.Derive(rt.cfg.AgentTokenKey, sb.UID)
	}
	return t, nil
}

// agentPorts returns the sandbox's agent port and compatibility port (0: off).
func (rt *Router) agentPorts(sb *sandboxv1beta1.Sandbox) (agentPort, compatPort int) {
	agentPort, compatPort = rt.cfg.AgentPort, DefaultCompatibilityPort
	if a := sb.Spec.Agent; a != nil {
		if a.Port != nil {
			agentPort = int(*a.Port)
		}
		if a.CompatibilityPort != nil {
			compatPort = int(*a.CompatibilityPort)
		}
	}
	return agentPort, compatPort
}

// blockedIP reports addresses no Pod has; dialing them would reach the router's own host.
func blockedIP(ip netip.Addr) bool {
	return ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsMulticast() ||
		ip.IsUnspecified() || ip.IsInterfaceLocalMulticast()
}
