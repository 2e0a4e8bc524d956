//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/devenv"
)

var templates = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxtemplates"}

// netpolProbe runs in a sandbox: for each argument kind:host:port it prints the argument and
// "open" (a TCP connection was accepted), "answered" (a DNS query over UDP got its answer) or the
// error's type; "timeout" when nothing answered in 3 s, as when a policy drops the first packet.
const netpolProbe = `
import concurrent.futures, socket, sys
QUERY = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x05kubox\x04test\x00\x00\x01\x00\x01"
def tcp(host, port):
    socket.create_connection((host, port), timeout=3).close()
    return "open"
def dns(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    s.sendto(QUERY, (host, port))
    return "answered" if s.recv(512)[:2] == QUERY[:2] else "wrong-answer"
def probe(target):
    kind, host, port = target.split(":")
    try:
        return target + " " + {"tcp": tcp, "dns": dns}[kind](host, int(port))
    except TimeoutError:
        return target + " timeout"
    except Exception as e:
        return target + " " + type(e).__name__
with concurrent.futures.ThreadPoolExecutor(16) as pool:
    for line in pool.map(probe, sys.argv[1:]):
        print(line)
`

// dnsStandIn answers DNS queries on UDP 53 (an empty NXDOMAIN answer) and accepts TCP connections
// on 53 and 8080: the cluster DNS server the secure default lets sandboxes query, and a port of
// the same Pod that it does not.
const dnsStandIn = `
import socket, threading
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", 53))
    while True:
        q, peer = s.recvfrom(512)
        s.sendto(q[:2] + b"\x81\x83" + q[4:], peer)
def tcp(port):
    s = socket.create_server(("0.0.0.0", port))
    while True:
        s.accept()[0].close()
threading.Thread(target=udp, daemon=True).start()
threading.Thread(target=tcp, args=(8080,), daemon=True).start()
tcp(53)
`

// TestNetworkPolicySecureDefault checks, with real gVisor sandboxes on the local node where
// kube-network-policies enforces NetworkPolicy, what a Managed template's secure-default policy
// promises (internal/controller/sandboxtemplate/securedefault.go): a sandbox cannot open a
// connection to another sandbox (its agent port), to the node (the kubelet), to the API server or
// to kubox-router's metrics and health ports; nothing but the router (here a host-network Pod,
// so the Pod's local node) reaches it; and it still reaches what the template allows, the
// cluster DNS servers on port 53 over UDP and TCP, and only that port of them.
//
// The API server and the router listen on 127.0.0.1 here, out of every Pod's reach whatever
// the policy; in a cluster they listen on node or Pod addresses. The test publishes them on the
// node's bridge address for its duration (a TCP forwarder), so the policy, not the loopback
// binding, is what has to stop the sandbox. Every blocked target is first shown reachable from a
// Pod that no policy selects (or, for the agent port that the policy closes to every Pod, from
// the node).
//
// KUBOX_E2E_NETWORK_POLICY=off stops kube-network-policies before the checks: every "blocked"
// assertion then fails, which shows that they test the policy and not the network around it.
func TestNetworkPolicySecureDefault(t *testing.T) {
	requireController(t)
	if os.Getenv("KUBOX_E2E_NETWORK_POLICY") == "off" {
		stopPolicyDaemon(t)
	}
	ns := namespace(t)
	createSecureTemplate(t, ns, "netpol")
	dnsIP := dnsServer(t)
	outsider := createPod(t, ns, pythonPod("outsider", "runc", "sleep", "infinity"))
	for _, name := range []string{"sb-a", "sb-b"} {
		claimFromTemplate(t, ns, name, "netpol")
	}
	waitRunning(t, ns, outsider.Name)
	a, b := policedSandboxIP(t, ns, "sb-a", "netpol"), policedSandboxIP(t, ns, "sb-b", "netpol")

	c := devenv.DefaultConfig()
	node := c.NodeIP().String()
	agent := strconv.Itoa(int(configv1alpha1.DefaultAgentPort))
	tcp := func(host, port string) string { return "tcp:" + net.JoinHostPort(host, port) }
	blocked := map[string]string{
		tcp(b, agent):                                      "another sandbox's agent",
		tcp(node, strconv.Itoa(c.Ports.Kubelet)):           "the kubelet on the node's address",
		tcp(node, forward(t, node, c.Ports.APIServer)):     "the API server",
		tcp(node, forward(t, node, c.Ports.RouterMetrics)): "kubox-router's metrics port",
		tcp(node, forward(t, node, c.Ports.RouterHealth)):  "kubox-router's health port",
		tcp(dnsIP, "8080"):                                 "a cluster DNS Pod on a port other than 53",
	}
	allowed := map[string]string{
		tcp(dnsIP, "53"):                       "cluster DNS over TCP",
		"dns:" + net.JoinHostPort(dnsIP, "53"): "cluster DNS over UDP",
	}

	// Controls: every target is up, and the path to it is open to traffic no policy governs.
	if err := dial(net.JoinHostPort(b, agent)); err != nil {
		t.Fatalf("the node cannot reach sb-b's agent at %s:%s: %v", b, agent, err)
	}
	var fromOutsider []string
	for target := range blocked {
		if target != tcp(b, agent) {
			fromOutsider = append(fromOutsider, target)
		}
	}
	for target, result := range probeInPod(t, ns, outsider.Name, fromOutsider...) {
		if result != "open" {
			t.Fatalf("control: a Pod no policy selects cannot reach %s (%s): %s", target, blocked[target], result)
		}
	}

	// Through the router: the policy admits the router, and the probe runs in sb-a.
	tok := serviceAccountWithConnect(t, ns, "prober", "sb-a")
	targets := append(keys(blocked), keys(allowed)...)
	results := probeThroughRouter(t, ns, "sb-a", tok, targets...)
	for target, what := range blocked {
		if got := results[target]; got != "timeout" {
			t.Errorf("sb-a reaches %s at %s: %s, want timeout (the policy drops it)", what, target, got)
		}
	}
	for target, what := range allowed {
		want := "open"
		if strings.HasPrefix(target, "dns:") {
			want = "answered"
		}
		if got := results[target]; got != want {
			t.Errorf("sb-a cannot reach %s at %s, which its template allows: %s, want %s", what, target, got, want)
		}
	}
	// Ingress: only the router (the local node) may connect; a Pod no policy confines may not.
	if got := probeInPod(t, ns, outsider.Name, tcp(a, agent))[tcp(a, agent)]; got != "timeout" {
		t.Errorf("a Pod outside the template reaches sb-a's agent at %s: %s, want timeout", tcp(a, agent), got)
	}
}

// createSecureTemplate creates a Managed SandboxTemplate without spec.networkPolicy (so its
// Pods get the secure default) for Python under gVisor with kubox-agent, and waits until the
// controller has created its NetworkPolicy.
func createSecureTemplate(t *testing.T, ns, name string) {
	t.Helper()
	createTemplate(t, ns, name, nil)
	waitFor(t, "the NetworkPolicy of template "+name, func(ctx context.Context) (bool, error) {
		_, err := clientset.NetworkingV1().NetworkPolicies(ns).Get(ctx, extv1beta1.NetworkPolicyName(name), metav1.GetOptions{})
		return err == nil, err
	})
}

// createTemplate creates a SandboxTemplate for Python under gVisor with kubox-agent, with
// spec.egress when egress is not nil.
func createTemplate(t *testing.T, ns, name string, egress map[string]any) {
	t.Helper()
	spec := newSandbox(name, "gvisor", withPython, withAgent).Object["spec"].(map[string]any)
	if egress != nil {
		spec["egress"] = egress
	}
	createTemplateWith(t, ns, name, spec)
}

// claimFromTemplate claims a cold sandbox named name from the template.
func claimFromTemplate(t *testing.T, ns, name, template string) {
	t.Helper()
	claimWithEgress(t, ns, name, template, nil)
}

// claimWithEgress claims a cold sandbox named name from the template, with spec.egress when
// egress is not nil.
func claimWithEgress(t *testing.T, ns, name, template string, egress map[string]any) {
	t.Helper()
	spec := map[string]any{"sandboxTemplateRef": map[string]any{"name": template}}
	if egress != nil {
		spec["egress"] = egress
	}
	claim := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	if _, err := dyn.Resource(claims).Namespace(ns).Create(context.Background(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create SandboxClaim %s/%s: %v", ns, name, err)
	}
}

// policedSandboxIP waits until the claimed sandbox is Ready and its Pod is selected by the
// template's NetworkPolicy, and returns the Pod's IP.
func policedSandboxIP(t *testing.T, ns, name, template string) string {
	t.Helper()
	waitSandboxReady(t, ns, name)
	pod, err := clientset.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Pod of Sandbox %s: %v", name, err)
	}
	np, err := clientset.NetworkingV1().NetworkPolicies(ns).Get(context.Background(), extv1beta1.NetworkPolicyName(template), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
		t.Fatalf("NetworkPolicy %s (selector %v) does not select Pod %s (labels %v)", np.Name, sel, name, pod.Labels)
	}
	return pod.Status.PodIP
}

// dnsServer runs the DNS stand-in as a Pod labelled like the cluster DNS servers the controller
// is configured with (kube-system, k8s-app=kube-dns; there is no CoreDNS on the local node) and
// returns its IP.
func dnsServer(t *testing.T) string {
	t.Helper()
	ns := configv1alpha1.DefaultClusterDNSNamespace
	pod := pythonPod("e2e-dns-"+rand.String(5), "runc", "python3", "-c", dnsStandIn)
	pod.Labels = configv1alpha1.DefaultClusterDNSPodLabels()
	createPod(t, ns, pod)
	t.Cleanup(func() {
		_ = clientset.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{})
	})
	return waitRunning(t, ns, pod.Name).Status.PodIP
}

// pythonPod runs command in kubox.local/python:dev under runtimeClass.
func pythonPod(name, runtimeClass string, command ...string) *corev1.Pod {
	pod := busyboxPod(name, runtimeClass)
	pod.Spec.Containers[0].Image = python
	pod.Spec.Containers[0].Command = command
	return pod
}

// probeThroughRouter runs netpolProbe in the sandbox through kubox-router and returns each
// target's result.
func probeThroughRouter(t *testing.T, ns, sandbox, tok string, targets ...string) map[string]string {
	t.Helper()
	res, err := runThroughRouter(ns, sandbox, tok, append([]string{"python3", "-c", netpolProbe}, targets...)...)
	if err != nil {
		t.Fatalf("run the probe in %s through the router (which the policy must admit): %v", sandbox, err)
	}
	return probeResults(t, string(res.GetStdout())+string(res.GetStderr()), targets)
}

// probeInPod runs netpolProbe in a Pod with kubectl exec.
func probeInPod(t *testing.T, ns, pod string, targets ...string) map[string]string {
	t.Helper()
	out := kubectlExec(t, ns, pod, append([]string{"python3", "-c", netpolProbe}, targets...)...)
	return probeResults(t, out, targets)
}

func probeResults(t *testing.T, out string, targets []string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if target, result, ok := strings.Cut(line, " "); ok {
			got[target] = result
		}
	}
	for _, target := range targets {
		if _, ok := got[target]; !ok {
			t.Fatalf("the probe printed no result for %s:\n%s", target, out)
		}
	}
	return got
}

// forward listens on host:0 and forwards each connection to 127.0.0.1:port until the test ends;
// it returns the port it listens on.
func forward(t *testing.T, host string, port int) string {
	t.Helper()
	return forwardTo(t, host, fmt.Sprintf("127.0.0.1:%d", port))
}

// forwardTo listens on host:0 and forwards each connection to the address to until the test
// ends; it returns the port it listens on.
func forwardTo(t *testing.T, host, to string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", host, err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go pipe(conn, to)
		}
	}()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

func pipe(in net.Conn, to string) {
	defer func() { _ = in.Close() }()
	out, err := net.DialTimeout("tcp", to, 3*time.Second)
	if err != nil {
		return
	}
	defer func() { _ = out.Close() }()
	go func() { _, _ = io.Copy(out, in) }()
	_, _ = io.Copy(in, out)
}

func dial(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err == nil {
		_ = conn.Close()
	}
	return err
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// stopPolicyDaemon stops kube-network-policies by its pidfile; on SIGTERM it deletes its
// nftables rules, so nothing enforces NetworkPolicy afterwards.
func stopPolicyDaemon(t *testing.T) {
	t.Helper()
	l := devenv.NewLayout(stateDir)
	proc, ok, err := devenv.ReadPidFile(l.PidFile(devenv.NetworkPolicies))
	if err != nil || !ok {
		t.Fatalf("no pidfile of %s in %s: %v", devenv.NetworkPolicies, filepath.Dir(l.PidFile(devenv.NetworkPolicies)), err)
	}
	if err := proc.Stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("KUBOX_E2E_NETWORK_POLICY=off: stopped %s (pid %d); the blocked checks below must fail", devenv.NetworkPolicies, proc.PID)
}
