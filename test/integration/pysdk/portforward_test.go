package pysdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/utils/ptr"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

// routerService is the Service, in the test's namespace, whose EndpointSlice names the router's
// stand-in Pod: the SDK's port-forward mode finds the Pod through it.
const routerService = "kubox-router"

// portForwardRules let an identity find the router's Pod (its Service and EndpointSlices) and
// open a port-forward to it, as the SDK's port-forward mode needs.
var portForwardRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get"}},
	{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list"}},
	// A WebSocket port-forward is a GET that the API server authorizes as create.
	{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"get", "create"}},
}

// servePortForward makes the router, which listens at routerURL, reachable through the API
// server's port-forward: a Node whose kubelet endpoint is an HTTPS server on 127.0.0.1 that
// serves the kubelet's own port-forward handler (k8s.io/cri-streaming, which speaks SPDY and the
// v4.channel.k8s.io WebSocket protocol), a Pod "kubox-router" on that Node, and the Service
// routerService with an EndpointSlice naming the Pod and the router's port (and routerService
// "-down" with a port nothing listens on). Connections the handler forwards to the Pod go to
// the router's address.
func (e *pyEnv) servePortForward(t *testing.T, routerURL string) {
	t.Helper()
	u, err := url.Parse(routerURL)
	if err != nil {
		t.Fatalf("Parsing the router's URL %q: %v", routerURL, err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("The router's URL %q has no port: %v", routerURL, err)
	}
	kubelet := httptest.NewTLSServer(&forwarder{host: u.Hostname()})
	t.Cleanup(kubelet.Close)
	kubeletPort := kubelet.Listener.Addr().(*net.TCPAddr).Port

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kubelet-" + e.ns}}
	env.Create(t, node)
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(kubeletPort)
	if err := env.Client.Status().Update(t.Context(), node); err != nil {
		t.Fatalf("Setting Node %s's kubelet endpoint: %v", node.Name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kubox-router", Namespace: e.ns},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "router",
			Image: "kubox.local/kubox-router:dev", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}}}}
	env.Create(t, pod)
	e.addRouterService(t, routerService, pod, port)
	// The same Pod behind a Service whose port nothing listens on: the kubelet reports the error.
	e.addRouterService(t, routerService+"-down", pod, framework.FreePort(t))
}

// addRouterService creates the Service name (port 8080, "http") and an EndpointSlice that names pod,
// with the Service's port at port. The endpoint's address is a documentation address (an
// EndpointSlice refuses loopback ones): port-forwarding goes to the Pod by name.
func (e *pyEnv) addRouterService(t *testing.T, name string, pod *corev1.Pod, port int) {
	t.Helper()
	env.Create(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}})
	env.Create(t, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: e.ns,
			Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.10"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: e.ns, Name: pod.Name, UID: pod.UID}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(port))}},
	})
}

// forwarder plays the container runtime's side of a port-forward: it copies each forwarded
// stream to and from host:port, where the Pod's port listens.
type forwarder struct{ host string }

// ServeHTTP answers the API server's requests for /portForward/<namespace>/<pod> with the
// kubelet's port-forward handler.
func (f *forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, found := strings.CutPrefix(r.URL.Path, "/portForward/")
	_, pod, ok := strings.Cut(rest, "/")
	if !found || !ok || pod == "" {
		http.Error(w, "not a port-forward: "+r.URL.Path, http.StatusNotFound)
		return
	}
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	portforward.ServePortForward(w, r, f, pod, "", opts, time.Minute, 30*time.Second, portforward.SupportedProtocols)
}

// PortForward copies stream to and from the Pod's port until the Pod's side ends; the stream
// ending closes the Pod's side for writing.
func (f *forwarder) PortForward(ctx context.Context, _ string, _ string, port int32, stream io.ReadWriteCloser) error {
	defer func() { _ = stream.Close() }()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(f.host, strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("connecting to port %d of the Pod: %w", port, err)
	}
	defer func() { _ = conn.Close() }()
	go func() {
		_, _ = io.Copy(conn, stream)
		_ = conn.(*net.TCPConn).CloseWrite()
	}()
	if _, err := io.Copy(stream, conn); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("copying from port %d of the Pod: %w", port, err)
	}
	return nil
}

var _ portforward.PortForwarder = (*forwarder)(nil)
