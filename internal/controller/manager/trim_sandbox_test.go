package manager

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/json"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// warmMember returns a Sandbox shaped as a Ready warm-pool member of the scale benchmark
// (test/bench/claims -only scale), as the API server sends it: JSON. applied adds the annotation
// kubectl apply writes.
func warmMember(i int, applied bool) []byte {
	lastApplied := ""
	if applied {
		lastApplied = fmt.Sprintf(`,"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"agents.x-k8s.io/v1beta1\",\"kind\":\"Sandbox\",\"metadata\":{\"annotations\":{},\"name\":\"pool-07-x%05d\",\"namespace\":\"scale\"},\"spec\":{\"podTemplate\":{\"spec\":{\"containers\":[{\"command\":[\"sleep\",\"infinity\"],\"image\":\"kubox.local/busybox:dev\",\"name\":\"main\"}]}}}}\n"`, i)
	}
	return fmt.Appendf(nil, `{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{
"name":"pool-07-x%05d","generateName":"pool-07-","namespace":"scale","uid":"1b4e28ba-2fa1-11d2-883f-%012d",
"resourceVersion":"%d","generation":1,"creationTimestamp":"2026-12-05T00:20:00Z",
"labels":{"agents.x-k8s.io/warm-pool-sandbox":"a1b2c3d4","agents.x-k8s.io/sandbox-template-ref-hash":"e5f6a7b8",
"agents.x-k8s.io/sandbox-template-hash":"5d8f9c7b6a","agents.x-k8s.io/launch-type":"warm","agents.x-k8s.io/created-by":"controller"},
"annotations":{"agents.x-k8s.io/sandbox-template-ref":"scale","agents.x-k8s.io/pod-name":"pool-07-x%05d"%s},
"ownerReferences":[{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxWarmPool","name":"pool-07",
"uid":"9c8b7a6d-5e4f-3a2b-1c0d-000000000007","controller":true,"blockOwnerDeletion":true}]},
"spec":{"podTemplate":{"metadata":{"labels":{"agents.x-k8s.io/warm-pool-sandbox":"a1b2c3d4","agents.x-k8s.io/sandbox-template-ref-hash":"e5f6a7b8"},
"annotations":{"cluster-autoscaler.kubernetes.io/safe-to-evict":"true"}},
"spec":{"containers":[{"name":"main","image":"kubox.local/busybox:dev","command":["sleep","infinity"],"resources":{}}]}}},
"status":{"serviceFQDN":"pool-07-x%05d.scale.svc.cluster.local","service":"pool-07-x%05d",
"selector":"agents.x-k8s.io/sandbox-name-hash=f00d%04d","podIPs":["10.0.%d.%d"],"nodeName":"kwok-node-%d","observedGeneration":1,
"conditions":[{"type":"Ready","status":"True","observedGeneration":1,"lastTransitionTime":"2026-12-05T00:20:05Z","reason":"DependenciesReady","message":"Pod is Ready; Service Exists"},
{"type":"PodScheduled","status":"True","observedGeneration":1,"lastTransitionTime":"2026-12-05T00:20:01Z","reason":"Scheduled","message":""}]}}`,
		i, i, 1000+i, i, lastApplied, i, i, i%10000, i/256, i%256, i/500)
}

func decodeSandbox(t testing.TB, data []byte) *sandboxv1beta1.Sandbox {
	t.Helper()
	sb := &sandboxv1beta1.Sandbox{}
	if err := json.UnmarshalCaseSensitivePreserveInts(data, sb); err != nil {
		t.Fatal(err)
	}
	return sb
}

func TestTrimSandbox(t *testing.T) {
	a, b := decodeSandbox(t, warmMember(1, true)), decodeSandbox(t, warmMember(2, true))
	a.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}}
	want := a.DeepCopy()
	want.ManagedFields = nil
	delete(want.Annotations, corev1.LastAppliedConfigAnnotation)
	for _, sb := range []*sandboxv1beta1.Sandbox{a, b} {
		if _, err := TrimSandbox(sb); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("TrimSandbox changed more than managedFields and last-applied-configuration (-want +got):\n%s", diff)
	}
	// The values both Sandboxes have are held once.
	same := func(what, x, y string) {
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are not one interned string", what, x, y)
		}
	}
	same("a label value", a.Labels[sandboxv1beta1.LaunchTypeLabel], b.Labels[sandboxv1beta1.LaunchTypeLabel])
	for k := range a.Labels {
		for k2 := range b.Labels {
			if k == k2 {
				same("a label key", k, k2)
			}
		}
	}
	same("the owner's name", a.OwnerReferences[0].Name, b.OwnerReferences[0].Name)
	same("the image", a.Spec.PodTemplate.Spec.Containers[0].Image, b.Spec.PodTemplate.Spec.Containers[0].Image)
	same("the command", a.Spec.PodTemplate.Spec.Containers[0].Command[1], b.Spec.PodTemplate.Spec.Containers[0].Command[1])
	same("a condition message", a.Status.Conditions[0].Message, b.Status.Conditions[0].Message)
	same("the namespace", a.Namespace, b.Namespace)
	if a.Name == b.Name {
		t.Fatal("the two Sandboxes should differ in name")
	}
	if got, err := TrimSandbox(&corev1.Pod{}); err != nil || got.(*corev1.Pod) == nil {
		t.Errorf("TrimSandbox(Pod) = %v, %v; want the Pod unchanged", got, err)
	}
}

// BenchmarkTrimSandboxHeap measures the heap 12,000 warm members decoded from JSON hold with and
// without TrimSandbox, in bytes per Sandbox (the figures in docs/benchmarks.md):
//
//	go test -run '^$' -bench BenchmarkTrimSandboxHeap -benchtime 1x ./internal/controller/manager/
func BenchmarkTrimSandboxHeap(b *testing.B) {
	const n = 12000
	for _, applied := range []bool{false, true} {
		for _, trim := range []bool{false, true} {
			b.Run(fmt.Sprintf("last-applied=%v/trimmed=%v", applied, trim), func(b *testing.B) {
				for range b.N {
					held := make([]*sandboxv1beta1.Sandbox, n)
					before := liveHeap()
					for i := range held {
						held[i] = decodeSandbox(b, warmMember(i, applied))
						if trim {
							_, _ = TrimSandbox(held[i])
						}
					}
					after := liveHeap()
					b.ReportMetric(float64(after-before)/n, "bytes/Sandbox")
					runtime.KeepAlive(held)
				}
			})
		}
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestTrimPodInterns checks that two Pods decoded apart hold one copy of the values they share.
func TestTrimPodInterns(t *testing.T) {
	pod := func() *corev1.Pod {
		// strings.Clone: each Pod gets its own copies, as from a decoder.
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: strings.Clone("scale"),
				Labels: map[string]string{strings.Clone("agents.x-k8s.io/warm-pool-sandbox"): strings.Clone("a1b2c3d4")}},
			Spec: corev1.PodSpec{NodeName: strings.Clone("kwok-node-1")},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
				Reason: strings.Clone("ContainersReady")}}},
		}
	}
	a, b := pod(), pod()
	for _, p := range []*corev1.Pod{a, b} {
		if _, err := TrimPod(p); err != nil {
			t.Fatal(err)
		}
	}
	for what, pair := range map[string][2]string{
		"namespace":   {a.Namespace, b.Namespace},
		"label value": {a.Labels["agents.x-k8s.io/warm-pool-sandbox"], b.Labels["agents.x-k8s.io/warm-pool-sandbox"]},
		"node name":   {a.Spec.NodeName, b.Spec.NodeName},
		"reason":      {a.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason},
	} {
		if pair[0] == "" || unsafe.StringData(pair[0]) != unsafe.StringData(pair[1]) {
			t.Errorf("%s: %q and %q are not one interned string", what, pair[0], pair[1])
		}
	}
}
