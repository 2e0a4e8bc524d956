package egress

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// The attacks of issue #36 on how kubox-egress tells a sandbox by its source address: the
// Pods are written here as the kubelet would (no controller runs), each controlled by its
// Sandbox, at loopback addresses of their own (127.0.200.0/24, which no test kubelet gives out).

// egressSandbox creates the Sandbox name whose egress allows allowed.test on port, and its Pod,
// running at ip (with hostNetwork: the node's address), and returns the Pod.
func egressSandbox(t *testing.T, ns, name, ip string, port int32, hostNetwork bool) *corev1.Pod {
	t.Helper()
	sb := testutil.MakeSandbox(name, ns).Obj()
	sb.Spec.Egress = &sandboxv1beta1.EgressPolicy{AllowDomains: []string{"allowed.test"}, Ports: []int32{port}}
	env.Create(t, sb)
	pod := testutil.MakePod(name, ns).Label(sandboxv1beta1.SandboxNameLabel, name).ControlledBy(sb, testutil.SandboxKind).Obj()
	pod.Spec.HostNetwork = hostNetwork
	env.Create(t, pod)
	env.BindPod(t, ns, name, "node-a") // bound: deleting it leaves it Terminating, as a kubelet would
	env.UpdatePodStatus(t, ns, name, func(st *corev1.PodStatus) {
		framework.RunningAndReady(ip)(st)
		st.HostIP, st.HostIPs = ip, []corev1.HostIP{{IP: ip}} // a hostNetwork Pod's IP is its node's
		if !hostNetwork {
			st.HostIP, st.HostIPs = "127.0.200.254", []corev1.HostIP{{IP: "127.0.200.254"}}
		}
	})
	return pod
}

// plainUpstream is allowed.test over plain HTTP on 127.0.0.1, counting requests.
func plainUpstream(t *testing.T) (*httptest.Server, int32) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello from %s", r.Host) }))
	t.Cleanup(srv.Close)
	p, _ := strconv.Atoi(srv.URL[strings.LastIndex(srv.URL, ":")+1:])
	return srv, int32(p)
}

// awaitIdentified waits until the proxy knows the sandbox at ip, which was written after every
// Pod change before it: the proxy's informer has then seen those too (one watch, in order).
func awaitIdentified(t *testing.T, client *http.Client, u string) {
	t.Helper()
	framework.Eventually(t, func() (bool, string) {
		code, body, err := get(client, u)
		return err == nil && code == http.StatusOK, fmt.Sprintf("the sentinel sandbox's request: %d %q %v", code, body, err)
	})
}

// TestAttackTerminatingPodIPReused: sandbox a's Pod is Terminating (deletionTimestamp set, its
// containers stopping): its IP may be given to another Pod, here a Pod that is no sandbox (a
// source the proxy must refuse). The proxy must stop treating the address as sandbox a.
func TestAttackTerminatingPodIPReused(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	_, port := plainUpstream(t)
	proxy, _ := startEgress(t, ns, nil)
	u := fmt.Sprintf("http://allowed.test:%d/", port)

	pod := egressSandbox(t, ns, "a", "127.0.200.1", port, false)
	awaitIdentified(t, sandboxClient(proxy, "127.0.200.1", nil), u) // a's own request, while it is live

	if err := env.Client.Delete(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	env.WaitDeleting(t, pod)
	egressSandbox(t, ns, "sentinel", "127.0.200.2", port, false)
	awaitIdentified(t, sandboxClient(proxy, "127.0.200.2", nil), u)

	// Another Pod now holds 127.0.200.1.
	code, body, err := get(sandboxClient(proxy, "127.0.200.1", nil), u)
	if err != nil || code != http.StatusForbidden || !strings.Contains(body, "not a sandbox") {
		t.Errorf("a request from the address of sandbox a's terminating Pod: %d %q %v; want 403, the source is not a sandbox", code, body, err)
	}
}

// TestAttackHostNetworkSandboxIsTheNode: a sandbox with hostNetwork has its node's address,
// which every process on the node (and every Pod whose traffic leaves through it) shares. The
// proxy must refuse that address, saying why, rather than give all of them the sandbox's policy.
func TestAttackHostNetworkSandboxIsTheNode(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	_, port := plainUpstream(t)
	proxy, log := startEgress(t, ns, nil)
	u := fmt.Sprintf("http://allowed.test:%d/", port)

	egressSandbox(t, ns, "h", "127.0.200.9", port, true)
	egressSandbox(t, ns, "sentinel", "127.0.200.10", port, false)
	awaitIdentified(t, sandboxClient(proxy, "127.0.200.10", nil), u)

	code, body, err := get(sandboxClient(proxy, "127.0.200.9", nil), u)
	if err != nil || code != http.StatusForbidden || !strings.Contains(body, "hostNetwork") {
		t.Errorf("a request from the node address of hostNetwork sandbox h: %d %q %v; want 403 naming hostNetwork", code, body, err)
	}
	if !strings.Contains(log.String(), ns+"/h") {
		t.Errorf("the proxy's log does not name the hostNetwork sandbox %s/h:\n%s", ns, log.String())
	}
}
