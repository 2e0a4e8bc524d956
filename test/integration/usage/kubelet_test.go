package usage

import (
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	ctrlusage "github.com/kubox-dev/kubox/internal/controller/usage"
	kuboxtestutil "github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/internal/usage"
)

// fakeKubelet serves /metrics/resource over TLS as a kubelet does, with the figures the test
// sets, and records whether each request carried credentials (a client certificate or a bearer
// token). It stands at the node boundary: the API server, the Nodes and Pods are real.
type fakeKubelet struct {
	*httptest.Server
	mu        sync.Mutex
	body      string
	status    int
	anonymous int
	requests  int
}

func startFakeKubelet(t *testing.T) *fakeKubelet {
	k := &fakeKubelet{status: http.StatusOK}
	k.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.requests++
		if len(r.TLS.PeerCertificates) == 0 && r.Header.Get("Authorization") == "" {
			k.anonymous++
		}
		if r.URL.Path != "/metrics/resource" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(k.status)
		_, _ = fmt.Fprint(w, k.body)
	}))
	k.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	k.StartTLS()
	t.Cleanup(k.Close)
	return k
}

func (k *fakeKubelet) serve(status int, body string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.status, k.body = status, body
}

// podFigure is one Pod's figures in a kubelet answer.
type podFigure struct {
	ns, pod       string
	cpu, memBytes float64
	at            time.Time
}

// kubeletAnswer is a kubelet's /metrics/resource answer with figs.
func kubeletAnswer(figs ...podFigure) string {
	cpu := "# TYPE pod_cpu_usage_seconds_total counter\n"
	mem := "# TYPE pod_memory_working_set_bytes gauge\n"
	for _, f := range figs {
		cpu += fmt.Sprintf("pod_cpu_usage_seconds_total{namespace=%q,pod=%q} %g %d\n", f.ns, f.pod, f.cpu, f.at.UnixMilli())
		mem += fmt.Sprintf("pod_memory_working_set_bytes{namespace=%q,pod=%q} %g %d\n", f.ns, f.pod, f.memBytes, f.at.UnixMilli())
	}
	return cpu + mem
}

// TestKubeletMeasuredUsage: the controller's kubelet source reads the kubelet of the node a
// sandbox's Pod runs on, with the controller's credentials and the kubelet's certificate checked,
// and integrates the Pod's CPU counter and working set into the sandbox's measured figures and
// metrics; a kubelet it cannot verify or that refuses it is counted as a failure and changes
// nothing.
func TestKubeletMeasuredUsage(t *testing.T) {
	ns := env.NewNamespace(t)
	kubelet := startFakeKubelet(t)
	node := nodeAt(t, ns, kubelet.Listener.Addr().String())

	sb := kuboxtestutil.MakeSandbox("measured", ns).Obj()
	env.Create(t, sb)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "measured", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: sandboxv1beta1.GroupVersion.String(), Kind: "Sandbox", Name: sb.Name, UID: sb.UID, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
	env.Create(t, pod)
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "not-a-sandbox", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
	env.Create(t, other)

	tracker := ctrlusage.NewTracker(ctrlusage.Config{})
	tracker.Observe(sb, time.Now())
	pods := client.NewNamespacedClient(env.Client, ns)
	caFile := filepath.Join(t.TempDir(), "kubelet-ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: kubelet.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := ctrlusage.NewKubeletSource(ctrlusage.KubeletConfig{CAFile: caFile}, env.Config, pods, env.Client, tracker, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := pod.CreationTimestamp.Time
	kubelet.serve(http.StatusOK, kubeletAnswer(podFigure{ns, "measured", 2, 1 << 30, start.Add(10 * time.Second)}, podFigure{ns, "not-a-sandbox", 99, 1 << 30, start}))
	src.ReadAll(t.Context())
	kubelet.serve(http.StatusOK, kubeletAnswer(podFigure{ns, "measured", 5, 1 << 30, start.Add(40 * time.Second)}))
	src.ReadAll(t.Context())

	// Refused (403) and unverifiable (the cluster CA does not sign this kubelet): nothing added.
	kubelet.serve(http.StatusForbidden, "nodes/metrics is forbidden")
	src.ReadAll(t.Context())
	kubelet.serve(http.StatusOK, kubeletAnswer(podFigure{ns, "measured", 50, 1 << 30, start.Add(90 * time.Second)}))
	unverified, err := ctrlusage.NewKubeletSource(ctrlusage.KubeletConfig{}, env.Config, pods, env.Client, tracker, nil)
	if err != nil {
		t.Fatal(err)
	}
	unverified.ReadAll(t.Context())

	// CPU: 2 from the Pod's start, then 3. Memory: 0 → 1 GiB over 10 s, then 1 GiB for 30 s.
	want := &usage.Measured{CPUSeconds: 5, MemoryGiBSeconds: 5 + 30, Samples: 2}
	cpu := metricValue(t, src.Collectors(), "kubox_usage_cpu_seconds_total")
	failures := metricValue(t, src.Collectors(), "kubox_usage_kubelet_read_failures_total")
	unverifiedFailures := metricValue(t, unverified.Collectors(), "kubox_usage_kubelet_read_failures_total")
	if d := cmp.Diff(want, src.Take(sb.UID), cmpopts.EquateApprox(0, 1e-9)); d != "" {
		t.Errorf("measured figures (-want +got):\n%s", d)
	}
	if cpu != 5 || failures != 1 || unverifiedFailures != 1 {
		t.Errorf("metrics: cpu seconds %v, read failures %v (unverified source %v); want 5, 1 and 1", cpu, failures, unverifiedFailures)
	}
	if unverified.Take(sb.UID) != nil {
		t.Errorf("a source that could not verify the kubelet measured something")
	}
	kubelet.mu.Lock()
	defer kubelet.mu.Unlock()
	if kubelet.anonymous != 0 || kubelet.requests != 3 {
		t.Errorf("kubelet: %d requests, %d without credentials; want 3 (one per read the TLS check let through), 0", kubelet.requests, kubelet.anonymous)
	}
}

// nodeAt creates a Node whose kubelet is at addr (its InternalIP and kubelet port).
func nodeAt(t *testing.T, ns, addr string) string {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kubelet-" + ns}}
	env.Create(t, node)
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), node) })
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "node-" + ns}, {Type: corev1.NodeInternalIP, Address: host}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(p)
	if err := env.Client.Status().Update(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	return node.Name
}

// metricValue sums the named counter's series among cs.
func metricValue(t *testing.T, cs []prometheus.Collector, name string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(cs...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
