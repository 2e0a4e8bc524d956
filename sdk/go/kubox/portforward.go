package kubox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// portForwardReadyTimeout bounds how long a new port-forward may take to listen.
const portForwardReadyTimeout = 30 * time.Second

// portForward is a running port-forward from 127.0.0.1 to the router's Pod.
type portForward struct {
	url    string
	cancel context.CancelFunc
	done   chan struct{}
}

func (p *portForward) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *portForward) stop() {
	p.cancel()
	<-p.done
}

// forwardURL returns the local URL of the port-forward to the router, starting it (again, when
// it died) first.
func (c *Client) forwardURL(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return "", errors.New("kubox: the Client is closed: its port-forward to the router is stopped")
	}
	if c.forward != nil && c.forward.alive() {
		return c.forward.url, nil
	}
	pf, err := c.startPortForward(ctx)
	if err != nil {
		return "", err
	}
	c.forward = pf
	return pf.url, nil
}

// startPortForward finds a ready Pod behind the router's Service and forwards a local port on
// 127.0.0.1 to the Pod's port behind the Service's port.
func (c *Client) startPortForward(ctx context.Context) (*portForward, error) {
	ns, svcName := c.opts.RouterNamespace, c.opts.RouterService
	svcObj := "Service " + ns + "/" + svcName
	pod, port, err := c.routerPod(ctx, ns, svcName)
	if err != nil {
		return nil, err
	}
	u, err := portForwardURL(c.cfg, ns, pod)
	if err != nil {
		return nil, err
	}
	rt, upgrader, err := spdy.RoundTripperFor(c.cfg)
	if err != nil {
		return nil, fmt.Errorf("kubox: port-forwarding to the router (%s): %w", svcObj, err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	// The port-forward outlives ctx (the call that started it): Client.Close stops it.
	fwdCtx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	fw, err := portforward.NewOnAddressesWithContext(fwdCtx, dialer, []string{"127.0.0.1"},
		[]string{"0:" + strconv.Itoa(int(port))}, ready, io.Discard, io.Discard)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("kubox: port-forwarding to the router (%s): %w", svcObj, err)
	}
	p := &portForward{cancel: cancel, done: make(chan struct{})}
	errc := make(chan error, 1)
	go func() {
		defer close(p.done)
		errc <- fw.ForwardPorts()
	}()
	timer := time.NewTimer(portForwardReadyTimeout)
	defer timer.Stop()
	select {
	case <-ready:
	case err := <-errc:
		cancel()
		return nil, fmt.Errorf("kubox: port-forwarding to router Pod %s/%s (behind %s): %w; "+
			"the identity needs RBAC create on pods/portforward in %s", ns, pod, svcObj, err, ns)
	case <-ctx.Done():
		p.stop()
		return nil, fmt.Errorf("kubox: port-forwarding to router Pod %s/%s: %w", ns, pod, ctx.Err())
	case <-timer.C:
		p.stop()
		return nil, fmt.Errorf("kubox: port-forwarding to router Pod %s/%s: %w: not listening after %s", ns, pod, ErrTimeout, portForwardReadyTimeout)
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		p.stop()
		return nil, fmt.Errorf("kubox: port-forwarding to router Pod %s/%s: no local port: %v", ns, pod, err)
	}
	p.url = "http://127.0.0.1:" + strconv.Itoa(int(ports[0].Local))
	return p, nil
}

// routerPod returns a ready Pod behind Service ns/name, and the Pod's port behind the Service's
// port DefaultRouterPort (or its only port), read from the Service's EndpointSlices.
func (c *Client) routerPod(ctx context.Context, ns, name string) (string, int32, error) {
	svcObj := "Service " + ns + "/" + name
	svc := &corev1.Service{}
	if err := c.kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		return "", 0, kubeError(err, "kubox: reading the router's", svcObj,
			"get on services in "+ns+"; is kubox-router installed? Set Options.RouterNamespace/RouterService, or Options.RouterURL")
	}
	sp, err := routerServicePort(svc)
	if err != nil {
		return "", 0, err
	}
	slices := &discoveryv1.EndpointSliceList{}
	if err := c.kube.List(ctx, slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: name}); err != nil {
		return "", 0, kubeError(err, "kubox: listing the EndpointSlices of", svcObj, "list on endpointslices (discovery.k8s.io) in "+ns)
	}
	pod, port := readyEndpoint(slices.Items, sp)
	if pod == "" {
		return "", 0, fmt.Errorf("kubox: no ready Pod behind the router's %s: %w; check `kubectl -n %s get pods,endpointslices -l app.kubernetes.io/name=kubox-router`",
			svcObj, ErrNotReady, ns)
	}
	return pod, port, nil
}

// routerServicePort picks the Service's port DefaultRouterPort, or its only port.
func routerServicePort(svc *corev1.Service) (corev1.ServicePort, error) {
	for _, p := range svc.Spec.Ports {
		if p.Port == DefaultRouterPort {
			return p, nil
		}
	}
	if len(svc.Spec.Ports) == 1 {
		return svc.Spec.Ports[0], nil
	}
	return corev1.ServicePort{}, fmt.Errorf("kubox: the router's Service %s/%s has no port %d", svc.Namespace, svc.Name, DefaultRouterPort)
}

// readyEndpoint returns the first ready Pod endpoint of slices and its port for the Service
// port sp ("" when there is none).
func readyEndpoint(slices []discoveryv1.EndpointSlice, sp corev1.ServicePort) (string, int32) {
	for _, s := range slices {
		var port int32
		for _, p := range s.Ports {
			if ptr.Deref(p.Name, "") == sp.Name && p.Port != nil {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.TargetRef == nil || e.TargetRef.Kind != "Pod" || !ptr.Deref(e.Conditions.Ready, true) {
				continue
			}
			return e.TargetRef.Name, port
		}
	}
	return "", 0
}

// portForwardURL is the URL of the portforward subresource of Pod ns/pod.
func portForwardURL(cfg *rest.Config, ns, pod string) (*url.URL, error) {
	c := rest.CopyConfig(cfg)
	c.APIPath = "/api"
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("kubox: port-forwarding to router Pod %s/%s: %w", ns, pod, err)
	}
	return rc.Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL(), nil
}
