package framework

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The test environment runs no scheduler and no kubelet: a Pod stays Pending, unscheduled and
// without an IP until a test writes its status. The stand-ins below write it as those components
// would, either one step at a time (UpdatePodStatus with RunningAndReady or Succeeded, BindPod,
// ForceDelete) or for every Pod of a namespace in the background (StartKubelet).

// UpdatePodStatus plays the kubelet: it changes the status of the Pod called name with mutate,
// retrying on conflicts (controllers write the Pod too).
func (e *Env) UpdatePodStatus(t testing.TB, ns, name string, mutate func(*corev1.PodStatus)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod := &corev1.Pod{}
		if err := e.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
			return err
		}
		mutate(&pod.Status)
		return e.Client.Status().Update(t.Context(), pod)
	})
	if err != nil {
		t.Fatalf("Updating the status of Pod %s: %v", name, err)
	}
}

// SetPodCondition sets one Pod condition, replacing one of the same type.
func SetPodCondition(st *corev1.PodStatus, c corev1.PodCondition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// RunningAndReady makes a Pod Running, with its containers and itself Ready, and ips as its IPs
// (the first one is status.podIP), as the kubelet reports it. With no ips the Pod has no IP yet.
func RunningAndReady(ips ...string) func(*corev1.PodStatus) {
	return func(st *corev1.PodStatus) {
		st.Phase = corev1.PodRunning
		SetPodCondition(st, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue})
		SetPodCondition(st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
		st.PodIP, st.PodIPs = "", nil
		for _, ip := range ips {
			st.PodIPs = append(st.PodIPs, corev1.PodIP{IP: ip})
		}
		if len(ips) > 0 {
			st.PodIP = ips[0]
		}
	}
}

// Succeeded makes a Pod's containers have exited successfully: phase Succeeded, not Ready
// (reason PodCompleted).
func Succeeded(st *corev1.PodStatus) {
	st.Phase = corev1.PodSucceeded
	SetPodCondition(st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodCompleted"})
}

// BindPod plays the scheduler: it binds the Pod called name to node through the binding
// subresource, which sets spec.nodeName and PodScheduled=True. Once bound, a Pod is deleted
// gracefully: it stays Terminating until ForceDelete, the kubelet's part, removes it.
func (e *Env) BindPod(t testing.TB, ns, name, node string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := e.Client.SubResource("binding").Create(t.Context(), pod, binding); err != nil {
		t.Fatalf("Binding Pod %s to node %s: %v", name, node, err)
	}
}

// ForceDelete removes a terminating object at once, as the kubelet removes a Pod once its
// containers have stopped. An object already gone is not an error.
func (e *Env) ForceDelete(t testing.TB, obj client.Object) {
	t.Helper()
	if err := e.Client.Delete(t.Context(), obj, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		t.Fatalf("Deleting %T %s: %v", obj, obj.GetName(), err)
	}
}

// Fate is what a Kubelet does with a Pod that has not started.
type Fate int

const (
	// RunReady starts the Pod: scheduled, Running and Ready, with an IP no other Pod of the
	// Kubelet has (or the Kubelet's WithPodIP).
	RunReady Fate = iota
	// LeavePending leaves the Pod Pending, as a kubelet still pulling its image would.
	LeavePending
	// Unschedulable marks the Pod PodScheduled=False/Unschedulable with UnschedulableMessage, as
	// the scheduler does when no node fits.
	Unschedulable
)

// UnschedulableMessage is the scheduler's message on the Pods a Kubelet leaves Unschedulable.
const UnschedulableMessage = "0/3 nodes are available: 3 Insufficient cpu."

// ImageFate gives the Pods whose first container runs image the fate f, and runs every other Pod
// Ready.
func ImageFate(image string, f Fate) func(*corev1.Pod) Fate {
	return func(pod *corev1.Pod) Fate {
		if pod.Spec.Containers[0].Image == image {
			return f
		}
		return RunReady
	}
}

// Kubelet plays the scheduler and the kubelet for every Pod of one namespace. It follows the
// namespace's Pods with a watch and gives every Pod that has not started (phase Pending, not being
// deleted) its Fate, RunReady unless SetFate says otherwise. A Pod that has started, or that a
// test moved on (Succeeded, Failed), is left alone.
type Kubelet struct {
	t      testing.TB
	ns     string
	c      client.WithWatch
	resync chan struct{}

	// podIP, when set, is the IP of every Pod the Kubelet starts.
	podIP string
	// loopback gives every Pod the Kubelet starts an IP of its own in 127.0.0.0/8.
	loopback bool
	// probe starts Pods Running but not Ready, Ready once their readiness-probe ports listen.
	probe bool

	mu     sync.Mutex
	fateOf func(*corev1.Pod) Fate
	nextIP uint32
}

// KubeletOption changes how a Kubelet starts Pods.
type KubeletOption func(*Kubelet)

// WithPodIP gives every Pod the Kubelet starts the IP ip, such as LoopbackIP where the tests'
// agents (StartAgent) listen, instead of an IP of its own in 10.0.0.0/8 that nothing reaches.
func WithPodIP(ip string) KubeletOption { return func(k *Kubelet) { k.podIP = ip } }

// WithLoopbackPodIPs gives every Pod the Kubelet starts a loopback IP no other Pod of the test
// process had, 127.B.1.1, 127.B.1.2, ... with B from the process's PID (never in 127.0.0.0/16,
// never .0 or .255), instead of one in 10.0.0.0/8: the test process can listen on each, as
// ServeSandboxAgents does, and the Pods, also those of parallel tests, do not share a port.
// WithPodIP, when given too, wins.
func WithLoopbackPodIPs() KubeletOption { return func(k *Kubelet) { k.loopback = true } }

// WithReadinessProbes makes the Kubelet probe as the kubelet does: a Pod it starts is Running with
// its IP but not Ready, and becomes Ready once every port its containers' readiness probes name
// (HTTP GET or TCP) accepts a connection on that IP, as when the test's agent for the Pod's
// Sandbox (ServeSandboxAgents, which starts once the Sandbox reports the IP) listens. Without it a
// Pod is Ready at once, before anything serves it.
func WithReadinessProbes() KubeletOption { return func(k *Kubelet) { k.probe = true } }

// StartKubelet starts a Kubelet for ns, which exists already; it stops when t ends. A status
// write it fails to make, other than one that lost a race with another writer, fails the test.
func (e *Env) StartKubelet(t testing.TB, ns string, opts ...KubeletOption) *Kubelet {
	t.Helper()
	c, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatalf("Creating a watching client: %v", err)
	}
	k := &Kubelet{t: t, ns: ns, c: c, resync: make(chan struct{}, 1), fateOf: func(*corev1.Pod) Fate { return RunReady }}
	for _, o := range opts {
		o(k)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { k.run(ctx) })
	if k.probe {
		wg.Go(func() { wait.UntilWithContext(ctx, k.probePass, PollInterval) })
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return k
}

// SetFate decides what happens from now on to the Pods that have not started, those waiting now
// included. Pods that have started stay as they are.
func (k *Kubelet) SetFate(fate func(*corev1.Pod) Fate) {
	k.mu.Lock()
	k.fateOf = fate
	k.mu.Unlock()
	select {
	case k.resync <- struct{}{}:
	default: // a resync is already due
	}
}

// run makes a pass over the namespace's Pods every PollInterval until ctx ends.
func (k *Kubelet) run(ctx context.Context) {
	wait.UntilWithContext(ctx, k.pass, PollInterval)
}

// pass lists the namespace's Pods and handles each, then handles every change the watch reports,
// until the watch ends or SetFate asks for a new pass.
func (k *Kubelet) pass(ctx context.Context) {
	pods := &corev1.PodList{}
	if err := k.c.List(ctx, pods, client.InNamespace(k.ns)); err != nil {
		k.errorf(ctx, "listing Pods: %v", err)
		return
	}
	for i := range pods.Items {
		k.handle(ctx, &pods.Items[i])
	}
	w, err := k.c.Watch(ctx, &corev1.PodList{}, client.InNamespace(k.ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: pods.ResourceVersion}})
	if err != nil {
		k.errorf(ctx, "watching Pods: %v", err)
		return
	}
	defer w.Stop()
	// Until the watch ends or SetFate asks for a new pass.
	followWatch(ctx, w, k.resync, func(t watch.EventType, pod *corev1.Pod) {
		if t == watch.Added || t == watch.Modified {
			k.handle(ctx, pod)
		}
	})
}

// handle writes the status pod's fate gives it, unless it has that status already. A write that
// conflicts is dropped: the watch brings the newer Pod, which is handled in turn.
func (k *Kubelet) handle(ctx context.Context, pod *corev1.Pod) {
	if pod.DeletionTimestamp != nil || (pod.Status.Phase != "" && pod.Status.Phase != corev1.PodPending) {
		return
	}
	k.mu.Lock()
	fate := k.fateOf(pod)
	k.mu.Unlock()
	st := pod.Status.DeepCopy()
	switch fate {
	case RunReady:
		SetPodCondition(st, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
		RunningAndReady(k.newIP())(st)
		if k.probe && len(probePorts(pod)) > 0 {
			setReady(st, corev1.ConditionFalse)
		}
	case Unschedulable:
		c := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: UnschedulableMessage}
		if hasPodCondition(st, c) {
			return
		}
		SetPodCondition(st, c)
	case LeavePending:
		return
	}
	pod.Status = *st
	if err := k.c.Status().Update(ctx, pod); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		k.errorf(ctx, "updating the status of Pod %s: %v", pod.Name, err)
	}
}

// probePass marks Ready each Running Pod of the namespace that is not Ready yet and whose
// readiness-probe ports all accept a connection on its IP (WithReadinessProbes).
func (k *Kubelet) probePass(ctx context.Context) {
	pods := &corev1.PodList{}
	if err := k.c.List(ctx, pods, client.InNamespace(k.ns)); err != nil {
		k.errorf(ctx, "listing Pods to probe: %v", err)
		return
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" ||
			hasPodCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}) ||
			!listening(ctx, pod.Status.PodIP, probePorts(pod)) {
			continue
		}
		setReady(&pod.Status, corev1.ConditionTrue)
		if err := k.c.Status().Update(ctx, pod); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			k.errorf(ctx, "marking Pod %s Ready: %v", pod.Name, err)
		}
	}
}

// probePorts are the numeric ports of pod's containers' HTTP GET and TCP readiness probes.
func probePorts(pod *corev1.Pod) []int32 {
	var ports []int32
	for _, c := range pod.Spec.Containers {
		switch p := c.ReadinessProbe; {
		case p == nil:
		case p.HTTPGet != nil && p.HTTPGet.Port.IntVal != 0:
			ports = append(ports, p.HTTPGet.Port.IntVal)
		case p.TCPSocket != nil && p.TCPSocket.Port.IntVal != 0:
			ports = append(ports, p.TCPSocket.Port.IntVal)
		}
	}
	return ports
}

// listening reports whether every port accepts a TCP connection on ip.
func listening(ctx context.Context, ip string, ports []int32) bool {
	for _, port := range ports {
		d := net.Dialer{Timeout: time.Second}
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(int(port))))
		if err != nil {
			return false
		}
		_ = conn.Close()
	}
	return true
}

// setReady sets a Pod's Ready and ContainersReady conditions to status.
func setReady(st *corev1.PodStatus, status corev1.ConditionStatus) {
	SetPodCondition(st, corev1.PodCondition{Type: corev1.ContainersReady, Status: status})
	SetPodCondition(st, corev1.PodCondition{Type: corev1.PodReady, Status: status})
}

// newIP returns the Kubelet's WithPodIP, or else an IP that no Pod of this Kubelet had before: in
// 10.0.0.0/8, or with WithLoopbackPodIPs one that no Pod of any Kubelet of the process had
// (loopbackPodIPs).
func (k *Kubelet) newIP() string {
	if k.podIP != "" {
		return k.podIP
	}
	if k.loopback {
		return loopbackPodIP(uint32(os.Getpid()), loopbackPodIPs.Add(1))
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.nextIP++
	n := k.nextIP
	return fmt.Sprintf("10.%d.%d.%d", (n>>16)&0xff, (n>>8)&0xff, n&0xff)
}

// loopbackPodIPs counts the loopback Pod IPs the process's Kubelets have handed out. The agents
// of parallel tests listen on their own port on each IP, a port FreePort found free on 127.0.0.1
// only: nothing stops two tests, or two test processes, from being given the same port, so no two
// Pods may share an IP either.
var loopbackPodIPs atomic.Uint32

// loopbackPodIP is the nth (from 1) loopback Pod IP of process pid: 127.B.1.1 to 127.B.1.254,
// then 127.B.2.1, and so on, where B (1 to 254) comes from pid, so that test processes running
// side by side (go test runs packages in parallel) mostly use IPs of their own too. The last
// octet is never 0 or 255, and nothing is in 127.0.0.0/16.
func loopbackPodIP(pid, n uint32) string {
	i := n - 1
	block := i/254%254 + 1 // the third octet, from 1
	return fmt.Sprintf("127.%d.%d.%d", pid%254+1, block, i%254+1)
}

// errorf fails the test with what went wrong, unless the Kubelet is stopping.
func (k *Kubelet) errorf(ctx context.Context, format string, args ...any) {
	if ctx.Err() == nil {
		k.t.Errorf("Kubelet in %s: "+format, append([]any{k.ns}, args...)...)
	}
}

// hasPodCondition reports whether st has condition c: same type, status, reason and message.
func hasPodCondition(st *corev1.PodStatus, c corev1.PodCondition) bool {
	for _, got := range st.Conditions {
		if got.Type == c.Type {
			return got.Status == c.Status && got.Reason == c.Reason && got.Message == c.Message
		}
	}
	return false
}
