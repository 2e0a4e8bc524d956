package framework_test

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// podStatus is what the tests below check of a Pod's status.
type podStatus struct {
	Phase      corev1.PodPhase
	IP         string
	IPs        int
	Conditions map[corev1.PodConditionType]string // status/reason message
}

func statusOf(pod *corev1.Pod) podStatus {
	s := podStatus{Phase: pod.Status.Phase, IP: pod.Status.PodIP, IPs: len(pod.Status.PodIPs), Conditions: map[corev1.PodConditionType]string{}}
	for _, c := range pod.Status.Conditions {
		s.Conditions[c.Type] = fmt.Sprintf("%s/%s %s", c.Status, c.Reason, c.Message)
	}
	return s
}

// started is the status of a Pod the Kubelet ran, but for its IP.
func started(ip string) podStatus {
	return podStatus{Phase: corev1.PodRunning, IP: ip, IPs: 1, Conditions: map[corev1.PodConditionType]string{
		corev1.PodScheduled: "True/ ", corev1.ContainersReady: "True/ ", corev1.PodReady: "True/ ",
	}}
}

// waitForPodStatus waits until the Pod's status is want (any IP when want's is "*") and returns
// the Pod.
func waitForPodStatus(t *testing.T, ns, name string, want podStatus) *corev1.Pod {
	t.Helper()
	return framework.WaitForObject(t, env, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		func(pod *corev1.Pod) (bool, string) {
			got := statusOf(pod)
			if want.IP == "*" && got.IP != "" {
				got.IP = "*"
			}
			diff := cmp.Diff(want, got)
			return diff == "", fmt.Sprintf("Pod %s status (-want +got):\n%s", name, diff)
		})
}

// pendingFor checks, for a while, that the Pod stays Pending with status want.
func pendingFor(t *testing.T, ns, name string, want podStatus) {
	t.Helper()
	framework.Consistently(t, time.Second, func() (bool, string) {
		pod := framework.Read[corev1.Pod](t, env, ns, name)
		diff := cmp.Diff(want, statusOf(pod))
		return diff == "", fmt.Sprintf("Pod %s status (-want +got):\n%s", name, diff)
	})
}

func TestKubelet(t *testing.T) {
	ns := env.NewNamespace(t)
	k := env.StartKubelet(t, ns)
	const slowImage = "registry.invalid/slow:1"
	k.SetFate(framework.ImageFate(slowImage, framework.LeavePending))

	env.Create(t, testutil.MakePod("quick", ns).Obj())
	slow := testutil.MakePod("slow", ns).Obj()
	slow.Spec.Containers[0].Image = slowImage
	env.Create(t, slow)

	t.Log("A Pod runs Ready with an IP; one whose fate is LeavePending stays Pending")
	quick := waitForPodStatus(t, ns, "quick", started("*"))
	pending := podStatus{Phase: corev1.PodPending, Conditions: map[corev1.PodConditionType]string{}}
	pendingFor(t, ns, "slow", pending)

	t.Log("A new fate reaches the Pods waiting already")
	k.SetFate(func(*corev1.Pod) framework.Fate { return framework.Unschedulable })
	unschedulable := podStatus{Phase: corev1.PodPending, Conditions: map[corev1.PodConditionType]string{
		corev1.PodScheduled: "False/" + corev1.PodReasonUnschedulable + " " + framework.UnschedulableMessage,
	}}
	waitForPodStatus(t, ns, "slow", unschedulable)
	pendingFor(t, ns, "slow", unschedulable)
	k.SetFate(func(*corev1.Pod) framework.Fate { return framework.RunReady })
	slow = waitForPodStatus(t, ns, "slow", started("*"))
	if slow.Status.PodIP == quick.Status.PodIP {
		t.Errorf("Pods quick and slow have the same IP, %s; want one each", slow.Status.PodIP)
	}

	t.Log("A Pod a test moved on is left alone")
	env.UpdatePodStatus(t, ns, "quick", framework.Succeeded)
	done := started(quick.Status.PodIP)
	done.Phase = corev1.PodSucceeded
	done.Conditions[corev1.PodReady] = "False/PodCompleted "
	waitForPodStatus(t, ns, "quick", done)
	framework.Consistently(t, time.Second, func() (bool, string) {
		got := statusOf(framework.Read[corev1.Pod](t, env, ns, "quick"))
		return cmp.Equal(done, got), fmt.Sprintf("Pod quick: %+v; want it left %+v", got, done)
	})
}

func TestKubeletWithPodIP(t *testing.T) {
	ns := env.NewNamespace(t)
	env.StartKubelet(t, ns, framework.WithPodIP(framework.LoopbackIP))
	env.Create(t, testutil.MakePod("a", ns).Obj())
	env.Create(t, testutil.MakePod("b", ns).Obj())
	waitForPodStatus(t, ns, "a", started(framework.LoopbackIP))
	waitForPodStatus(t, ns, "b", started(framework.LoopbackIP))
}

func TestKubeletWithLoopbackPodIPs(t *testing.T) {
	ns := env.NewNamespace(t)
	env.StartKubelet(t, ns, framework.WithLoopbackPodIPs())
	env.Create(t, testutil.MakePod("a", ns).Obj())
	env.Create(t, testutil.MakePod("b", ns).Obj())
	a := waitForPodStatus(t, ns, "a", started("*")).Status.PodIP
	b := waitForPodStatus(t, ns, "b", started("*")).Status.PodIP
	for _, ip := range []string{a, b} {
		addr, err := netip.ParseAddr(ip)
		if err != nil || !addr.Is4() || !addr.IsLoopback() || addr.String() == framework.LoopbackIP ||
			addr.As4()[3] == 0 || addr.As4()[3] == 255 {
			t.Errorf("Pod IP %q; want a loopback IPv4 address other than %s, not ending in .0 or .255", ip, framework.LoopbackIP)
		}
	}
	if a == b {
		t.Errorf("Pods a and b have the same IP, %s; want one each", a)
	}
}

// TestLoopbackPodIPsAreTheProcesssOwn: two Kubelets of one test process (parallel tests, a
// namespace each) never give two Pods the same loopback IP. Their agents listen on each Pod's IP
// and on their test's agent port, a port FreePort found free on 127.0.0.1 only, so a later test
// can be given the same port; with the same IP too, its agent cannot listen, or the Kubelet
// probes, and the router reaches, the other test's agent.
func TestLoopbackPodIPsAreTheProcesssOwn(t *testing.T) {
	ips := map[string]string{}
	for _, name := range []string{"first", "second"} {
		ns := env.NewNamespace(t)
		env.StartKubelet(t, ns, framework.WithLoopbackPodIPs())
		env.Create(t, testutil.MakePod(name, ns).Obj())
		ip := waitForPodStatus(t, ns, name, started("*")).Status.PodIP
		if other, seen := ips[ip]; seen {
			t.Fatalf("Pods %s and %s of two Kubelets have the same IP %s; want an IP of its own for each Pod of the process", other, name, ip)
		}
		ips[ip] = name
	}
}

func TestPodStatusStandIns(t *testing.T) {
	ns := env.NewNamespace(t)
	env.Create(t, testutil.MakePod("p", ns).Obj())

	env.UpdatePodStatus(t, ns, "p", func(st *corev1.PodStatus) {
		framework.SetPodCondition(st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"})
	})
	env.UpdatePodStatus(t, ns, "p", framework.RunningAndReady())
	waitForPodStatus(t, ns, "p", podStatus{Phase: corev1.PodRunning, Conditions: map[corev1.PodConditionType]string{
		corev1.ContainersReady: "True/ ", corev1.PodReady: "True/ ",
	}})

	env.UpdatePodStatus(t, ns, "p", framework.RunningAndReady("10.1.2.3", "fd00::1"))
	pod := framework.Read[corev1.Pod](t, env, ns, "p")
	want := []corev1.PodIP{{IP: "10.1.2.3"}, {IP: "fd00::1"}}
	if diff := cmp.Diff(want, pod.Status.PodIPs); diff != "" || pod.Status.PodIP != "10.1.2.3" {
		t.Errorf("podIP %q, podIPs (-want +got):\n%s; want the first IP as podIP", pod.Status.PodIP, diff)
	}

	env.BindPod(t, ns, "p", "node-a")
	if got := framework.Read[corev1.Pod](t, env, ns, "p").Spec.NodeName; got != "node-a" {
		t.Errorf("nodeName %q after BindPod; want node-a", got)
	}
	// A bound Pod is deleted gracefully: it stays until ForceDelete.
	if err := env.Client.Delete(t.Context(), pod); err != nil {
		t.Fatalf("Deleting Pod p: %v", err)
	}
	if found, err := env.Get(t, pod); !found || err != nil || pod.DeletionTimestamp == nil {
		t.Fatalf("Bound Pod p after delete: found %t, err %v, deletionTimestamp %v; want it terminating", found, err, pod.DeletionTimestamp)
	}
	env.ForceDelete(t, pod)
	env.WaitGone(t, pod)
	env.ForceDelete(t, pod) // gone already: not an error
}

// TestKubeletWithReadinessProbes: a Pod with a readiness probe runs with its IP but is not Ready
// until its probe's port listens on that IP; a Pod without a probe is Ready at once.
func TestKubeletWithReadinessProbes(t *testing.T) {
	ns := env.NewNamespace(t)
	env.StartKubelet(t, ns, framework.WithLoopbackPodIPs(), framework.WithReadinessProbes())
	port := framework.FreePort(t)
	probed := testutil.MakePod("probed", ns).Obj()
	probed.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt(port)}}}
	env.Create(t, probed)
	env.Create(t, testutil.MakePod("plain", ns).Obj())
	waitForPodStatus(t, ns, "plain", started("*"))
	notReady := started("*")
	notReady.Conditions[corev1.ContainersReady], notReady.Conditions[corev1.PodReady] = "False/ ", "False/ "
	ip := waitForPodStatus(t, ns, "probed", notReady).Status.PodIP
	framework.Consistently(t, time.Second, func() (bool, string) {
		got := statusOf(framework.Read[corev1.Pod](t, env, ns, "probed"))
		return got.Conditions[corev1.PodReady] == "False/ ", fmt.Sprintf("Pod probed is %s before its port listens", got.Conditions[corev1.PodReady])
	})
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	waitForPodStatus(t, ns, "probed", started(ip))
}
