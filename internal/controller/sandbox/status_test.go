package sandbox

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

// Expected reasons and messages in this file are agent-sandbox's (API.md "Conditions": "Messages as
// agent-sandbox writes them"; inventory 1.7, and agent-sandbox v1beta1 controller tests for the
// Suspended, PodScheduled and Finished messages the inventory does not spell out). They are written
// out literally, never taken from the code under test.

const (
	testNS         = "team-a"
	testName       = "my-sandbox"
	testNameHash   = "374de8f5" // FNV-1a of testName
	testGeneration = int64(3)
	testDomain     = "example.org"
)

var (
	testNow     = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	testEarlier = metav1.NewTime(time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC))
)

func testSandbox() *testutil.SandboxWrapper {
	return testutil.MakeSandbox(testName, testNS)
}

// withMeta gives a built Sandbox the metadata the API server would have set.
func withMeta(sb *sandboxv1beta1.Sandbox) *sandboxv1beta1.Sandbox {
	sb.Generation = testGeneration
	sb.UID = types.UID("sandbox-uid")
	return sb
}

func testPod() *testutil.PodWrapper {
	return testutil.MakePod(testName, testNS)
}

func testService() *corev1.Service {
	return testutil.MakeService(testName, testNS).Obj()
}

// cond is a condition as computeStatus writes it on a first pass: with the sandbox's generation
// and transitioning now.
func cond(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: testGeneration, LastTransitionTime: testNow}
}

func readyCond(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return cond(sandboxv1beta1.SandboxConditionReady, status, reason, msg)
}

func notReady(msg string) metav1.Condition {
	return readyCond(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonDependenciesNotReady, msg)
}

var (
	notSuspendedCond = cond(sandboxv1beta1.SandboxConditionSuspended, metav1.ConditionFalse,
		sandboxv1beta1.SandboxReasonNotSuspended, "Sandbox is not suspended")
	podTerminatingCond = cond(sandboxv1beta1.SandboxConditionSuspended, metav1.ConditionFalse,
		sandboxv1beta1.SandboxReasonPodTerminating, "Pod is terminating. Sandbox is suspending")
	podTerminatedCond = cond(sandboxv1beta1.SandboxConditionSuspended, metav1.ConditionTrue,
		sandboxv1beta1.SandboxReasonPodTerminated, "Pod has been terminated. Sandbox is suspended")
	schedulingUnknownCond = cond(sandboxv1beta1.SandboxConditionPodScheduled, metav1.ConditionUnknown,
		sandboxv1beta1.SandboxReasonPodSchedulingUnknown, "Pod has not reported a PodScheduled condition yet")
	scheduledCond = cond(sandboxv1beta1.SandboxConditionPodScheduled, metav1.ConditionTrue,
		sandboxv1beta1.SandboxReasonPodScheduled, "")
	podStateUnknownSchedulingCond = cond(sandboxv1beta1.SandboxConditionPodScheduled, metav1.ConditionUnknown,
		sandboxv1beta1.SandboxReasonPodSchedulingUnknown, "Pod state is unknown. Pod scheduling cannot be determined")
	podAbsentCond = cond(sandboxv1beta1.SandboxConditionPodScheduled, metav1.ConditionFalse,
		sandboxv1beta1.SandboxReasonPodAbsent, "Sandbox has no Pod")
)

// scenario is what one reconcile pass could observe. Each scenario is checked by every test below,
// one per part of the status, so a wrong message fails one test, not all of them.
type scenario struct {
	sandbox func() *sandboxv1beta1.Sandbox
	obs     func() *observed
}

var errBoom = errors.New("boom")

func readyPod() *testutil.PodWrapper {
	return testPod().Phase(corev1.PodRunning).Scheduled().Ready()
}

var scenarios = map[string]scenario{
	"no pod": {
		sandbox: testSandbox().Obj,
		obs:     func() *observed { return &observed{} },
	},
	"no pod, service required": {
		sandbox: testSandbox().Running().Service(true).Obj,
		obs:     func() *observed { return &observed{} },
	},
	"no pod, service exists": {
		sandbox: testSandbox().Service(true).Obj,
		obs:     func() *observed { return &observed{service: testService()} },
	},
	"pending, no PodScheduled condition": {
		sandbox: testSandbox().Service(true).Obj,
		obs: func() *observed {
			return &observed{ownedPods: 1, pod: testPod().Phase(corev1.PodPending).Obj(), service: testService()}
		},
	},
	"pending, unschedulable": {
		sandbox: testSandbox().Obj,
		obs: func() *observed {
			return &observed{ownedPods: 1, pod: testPod().Phase(corev1.PodPending).Condition(corev1.PodCondition{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient cpu.",
			}).Obj()}
		},
	},
	"pending, not scheduled without a reason": {
		sandbox: testSandbox().Obj,
		obs: func() *observed {
			return &observed{ownedPods: 1, pod: testPod().Phase(corev1.PodPending).Condition(corev1.PodCondition{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			}).Obj()}
		},
	},
	"phase Unknown": {
		sandbox: testSandbox().Obj,
		obs: func() *observed {
			return &observed{ownedPods: 1, pod: testPod().Phase(corev1.PodUnknown).Scheduled().NodeName("node-1").Obj()}
		},
	},
	"running, not ready": {
		sandbox: testSandbox().Service(true).Obj,
		obs: func() *observed {
			return &observed{ownedPods: 1, service: testService(), pod: testPod().Phase(corev1.PodRunning).Scheduled().
				Condition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}).
				IP("10.244.0.7").NodeName("node-1").Obj()}
		},
	},
	"running, no Ready condition yet": {
		sandbox: testSandbox().Obj,
		obs: func() *observed {
			return &observed{ownedPods: 1, pod: testPod().Phase(corev1.PodRunning).Scheduled().IP("10.244.0.7").Obj()}
		},
	},
	"ready, no podIPs": {
		sandbox: testSandbox().Service(true).Obj,
		obs: func() *observed {
			return &observed{ownedPods: 1, service: testService(), pod: readyPod().NodeName("node-1").Obj()}
		},
	},
	"ready, dual-stack, service exists": {
		sandbox: testSandbox().Service(true).Obj,
		obs: func() *observed {
			p := readyPod().NodeName("node-1").Obj()
			p.Status.PodIP = "10.244.0.5"
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.0.5"}, {IP: "fd00::5"}}
			return &observed{ownedPods: 1, service: testService(), pod: p}
		},
	},
	"ready, service required but missing": {
		sandbox: testSandbox().Service(true).Obj,
		obs: func() *observed {
			return &observed{ownedPods: 1, pod: readyPod().IP("10.244.0.5").NodeName("node-1").Obj()}
		},
	},
	"ready, service not requested": {
		sandbox: testSandbox().Obj,
		obs: func() *observed {
			return &observed{ownedPods: 1, pod: readyPod().IP("10.244.0.5").NodeName("node-1").Obj()}
		},
	},
	"ready, service false": {
		sandbox: testSandbox().Service(false).Obj,
		obs:     func() *observed { return &observed{ownedPods: 1, pod: readyPod().IP("10.244.0.5").Obj()} },
	},
	"ready, service not requested but a kept one exists": {
		sandbox: testSandbox().Obj,
		obs: func() *observed {
			return &observed{ownedPods: 1, service: testService(), pod: readyPod().IP("10.244.0.5").Obj()}
		},
	},
	"ready, status.podIP only": {
		sandbox: testSandbox().Obj,
		obs: func() *observed {
			p := readyPod().Obj()
			p.Status.PodIP = "10.244.0.9"
			return &observed{ownedPods: 1, pod: p}
		},
	},
	"succeeded": {
		sandbox: testSandbox().Service(true).Obj,
		obs: func() *observed {
			return &observed{ownedPods: 1, service: testService(),
				pod: testPod().Phase(corev1.PodSucceeded).Scheduled().NodeName("node-1").Obj()}
		},
	},
	"failed": {
		sandbox: testSandbox().Obj,
		obs: func() *observed {
			return &observed{ownedPods: 1, pod: testPod().Phase(corev1.PodFailed).Scheduled().NodeName("node-1").Obj()}
		},
	},
	"suspending, owned pod still exists": {
		sandbox: testSandbox().Suspended().Service(true).Obj,
		obs: func() *observed {
			return &observed{ownedPods: 1, service: testService(), pod: testPod().Phase(corev1.PodRunning).Ready().Obj()}
		},
	},
	"suspended, pod gone": {
		sandbox: func() *sandboxv1beta1.Sandbox {
			sb := testSandbox().Suspended().Service(true).Obj()
			// What the last Running pass wrote: the pod's IPs and node go with the pod; the
			// selector stays (agent-sandbox v1 keeps it once set).
			sb.Status = sandboxv1beta1.SandboxStatus{
				LabelSelector: testSelector, PodIPs: []string{"10.244.0.5"}, NodeName: "node-1",
				Conditions: []metav1.Condition{{Type: sandboxv1beta1.SandboxConditionPodScheduled,
					Status: metav1.ConditionTrue, Reason: "PodScheduled", LastTransitionTime: testEarlier}},
			}
			return sb
		},
		obs: func() *observed { return &observed{service: testService()} },
	},
	"suspending, a pod the sandbox does not own holds its name": {
		sandbox: testSandbox().Suspended().Obj,
		obs:     func() *observed { return &observed{foreignPod: true} },
	},
	"suspended, pod state unreadable": {
		sandbox: testSandbox().Suspended().Obj,
		obs:     func() *observed { return &observed{err: errBoom} },
	},
	"suspending, deleting the owned pod failed": {
		sandbox: testSandbox().Suspended().Obj,
		obs: func() *observed {
			return &observed{err: errBoom, ownedPods: 1, pod: testPod().Phase(corev1.PodRunning).Obj()}
		},
	},
	"running, error before the pod was seen": {
		sandbox: testSandbox().Obj,
		obs:     func() *observed { return &observed{err: errBoom} },
	},
	"running, error after a ready pod was seen": {
		sandbox: testSandbox().Service(true).Obj,
		obs: func() *observed {
			return &observed{err: errBoom, ownedPods: 1, pod: readyPod().IP("10.244.0.5").NodeName("node-1").Obj()}
		},
	},
	"expired after the pod finished": {
		sandbox: func() *sandboxv1beta1.Sandbox {
			sb := testSandbox().Service(true).Obj()
			sb.Status = sandboxv1beta1.SandboxStatus{
				Service: testName, ServiceFQDN: testFQDN, LabelSelector: testSelector,
				PodIPs: []string{"10.244.0.5"}, NodeName: "node-1",
				Conditions: []metav1.Condition{
					{Type: sandboxv1beta1.SandboxConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: 2,
						Reason: sandboxv1beta1.SandboxReasonPodSucceeded, Message: "Pod completed successfully", LastTransitionTime: testEarlier},
					{Type: sandboxv1beta1.SandboxConditionSuspended, Status: metav1.ConditionFalse, ObservedGeneration: 2,
						Reason: sandboxv1beta1.SandboxReasonNotSuspended, Message: "Sandbox is not suspended", LastTransitionTime: testEarlier},
					{Type: sandboxv1beta1.SandboxConditionPodScheduled, Status: metav1.ConditionTrue, ObservedGeneration: 2,
						Reason: "PodScheduled", LastTransitionTime: testEarlier},
					{Type: sandboxv1beta1.SandboxConditionFinished, Status: metav1.ConditionTrue, ObservedGeneration: 2,
						Reason: sandboxv1beta1.SandboxReasonPodSucceeded, Message: "Pod completed successfully", LastTransitionTime: testEarlier},
				},
			}
			return sb
		},
		obs: func() *observed { return &observed{expired: true} },
	},
	"expired while ready": {
		sandbox: testSandbox().Condition(metav1.Condition{Type: sandboxv1beta1.SandboxConditionReady,
			Status: metav1.ConditionTrue, Reason: sandboxv1beta1.SandboxReasonDependenciesReady, LastTransitionTime: testEarlier}).Obj,
		obs: func() *observed { return &observed{expired: true} },
	},
}

const (
	testSelector = sandboxv1beta1.SandboxNameHashLabel + "=" + testNameHash
	testFQDN     = testName + "." + testNS + ".svc." + testDomain
)

// runScenarios checks part of the status computed for every scenario. want must name every
// scenario, so a new scenario cannot go unchecked.
func runScenarios[T any](t *testing.T, want map[string]T, part func(sandboxv1beta1.SandboxStatus) T, opts ...cmp.Option) {
	t.Helper()
	for name := range scenarios {
		if _, ok := want[name]; !ok {
			t.Errorf("scenario %q has no expectation", name)
		}
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			sc, ok := scenarios[name]
			if !ok {
				t.Fatalf("no scenario %q", name)
			}
			got := computeStatus(withMeta(sc.sandbox()), sc.obs(), testDomain, testNow)
			if diff := cmp.Diff(w, part(got), opts...); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// statusFields is the status without its conditions.
type statusFields struct {
	Service, ServiceFQDN, Selector, NodeName string
	PodIPs                                   []string
	ObservedGeneration                       int64
}

func TestComputeStatusFields(t *testing.T) {
	var (
		none       = statusFields{}
		svcOnly    = statusFields{Service: testName, ServiceFQDN: testFQDN}
		podOnly    = statusFields{Selector: testSelector}
		podAndNode = statusFields{Selector: testSelector, NodeName: "node-1"}
	)
	with := func(f statusFields, mutate func(*statusFields)) statusFields {
		mutate(&f)
		return f
	}
	runScenarios(t, map[string]statusFields{
		"no pod":                                  none,
		"no pod, service required":                none,
		"no pod, service exists":                  svcOnly,
		"pending, no PodScheduled condition":      with(svcOnly, func(f *statusFields) { f.Selector = testSelector }),
		"pending, unschedulable":                  podOnly,
		"pending, not scheduled without a reason": podOnly,
		"phase Unknown":                           podAndNode,
		"running, not ready": {Service: testName, ServiceFQDN: testFQDN, Selector: testSelector,
			NodeName: "node-1", PodIPs: []string{"10.244.0.7"}},
		"running, no Ready condition yet": {Selector: testSelector, PodIPs: []string{"10.244.0.7"}},
		"ready, no podIPs":                {Service: testName, ServiceFQDN: testFQDN, Selector: testSelector, NodeName: "node-1"},
		"ready, dual-stack, service exists": {Service: testName, ServiceFQDN: testFQDN, Selector: testSelector,
			NodeName: "node-1", PodIPs: []string{"10.244.0.5", "fd00::5"}},
		"ready, service required but missing": {Selector: testSelector, NodeName: "node-1", PodIPs: []string{"10.244.0.5"}},
		"ready, service not requested":        {Selector: testSelector, NodeName: "node-1", PodIPs: []string{"10.244.0.5"}},
		"ready, service false":                {Selector: testSelector, PodIPs: []string{"10.244.0.5"}},
		"ready, service not requested but a kept one exists": {Service: testName, ServiceFQDN: testFQDN,
			Selector: testSelector, PodIPs: []string{"10.244.0.5"}},
		"ready, status.podIP only":           {Selector: testSelector, PodIPs: []string{"10.244.0.9"}},
		"succeeded":                          with(svcOnly, func(f *statusFields) { f.Selector, f.NodeName = testSelector, "node-1" }),
		"failed":                             podAndNode,
		"suspending, owned pod still exists": with(svcOnly, func(f *statusFields) { f.Selector = testSelector }),
		"suspended, pod gone":                with(svcOnly, func(f *statusFields) { f.Selector = testSelector }),
		"suspending, a pod the sandbox does not own holds its name": none,
		"suspended, pod state unreadable":                           none,
		"suspending, deleting the owned pod failed":                 podOnly,
		"running, error before the pod was seen":                    none,
		"running, error after a ready pod was seen":                 {Selector: testSelector, NodeName: "node-1", PodIPs: []string{"10.244.0.5"}},
		// Retain keeps the Sandbox with conditions and the selector only: no service, no pod.
		"expired after the pod finished": podOnly,
		"expired while ready":            none,
	}, func(st sandboxv1beta1.SandboxStatus) statusFields {
		if st.ObservedGeneration != testGeneration {
			t.Errorf("observedGeneration = %d, want %d", st.ObservedGeneration, testGeneration)
		}
		return statusFields{Service: st.Service, ServiceFQDN: st.ServiceFQDN, Selector: st.LabelSelector,
			NodeName: st.NodeName, PodIPs: st.PodIPs}
	}, cmpopts.EquateEmpty())
}

// findCondition returns the condition of type typ, or nil when it is absent.
func findCondition(typ string) func(sandboxv1beta1.SandboxStatus) *metav1.Condition {
	return func(st sandboxv1beta1.SandboxStatus) *metav1.Condition {
		return meta.FindStatusCondition(st.Conditions, typ)
	}
}

// ignoreMessage leaves messages to TestComputeStatusMessages, so that a wording difference fails
// once there rather than in every scenario.
var ignoreMessage = cmpopts.IgnoreFields(metav1.Condition{}, "Message")

func ptrTo(c metav1.Condition) *metav1.Condition { return &c }

func TestComputeStatusReady(t *testing.T) {
	ready := func(msg string) *metav1.Condition {
		return ptrTo(readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, msg))
	}
	notReadyP := func(msg string) *metav1.Condition { return ptrTo(notReady(msg)) }
	falseWith := func(reason, msg string) *metav1.Condition {
		return ptrTo(readyCond(metav1.ConditionFalse, reason, msg))
	}
	runScenarios(t, map[string]*metav1.Condition{
		"no pod":                                             notReadyP("Pod does not exist"),
		"no pod, service required":                           notReadyP("Pod does not exist; Service does not exist"),
		"no pod, service exists":                             notReadyP("Pod does not exist; Service Exists"),
		"pending, no PodScheduled condition":                 notReadyP("Pod exists with phase: Pending; Service Exists"),
		"pending, unschedulable":                             notReadyP("Pod exists with phase: Pending"),
		"pending, not scheduled without a reason":            notReadyP("Pod exists with phase: Pending"),
		"phase Unknown":                                      notReadyP("Pod exists with phase: Unknown"),
		"running, not ready":                                 notReadyP("Pod is Running but not Ready; Service Exists"),
		"running, no Ready condition yet":                    notReadyP("Pod is Running but not Ready"),
		"ready, no podIPs":                                   notReadyP("Pod is Ready but has no podIPs yet; Service Exists"),
		"ready, dual-stack, service exists":                  ready("Pod is Ready; Service Exists"),
		"ready, service required but missing":                notReadyP("Pod is Ready; Service does not exist"),
		"ready, service not requested":                       ready("Pod is Ready"),
		"ready, service false":                               ready("Pod is Ready"),
		"ready, service not requested but a kept one exists": ready("Pod is Ready; Service Exists"),
		"ready, status.podIP only":                           ready("Pod is Ready"),
		"succeeded":                                          falseWith(sandboxv1beta1.SandboxReasonPodSucceeded, "Pod completed successfully"),
		"failed":                                             falseWith(sandboxv1beta1.SandboxReasonPodFailed, "Pod failed"),
		"suspending, owned pod still exists":                 falseWith(sandboxv1beta1.SandboxReasonSuspended, "Sandbox is suspending"),
		"suspended, pod gone":                                falseWith(sandboxv1beta1.SandboxReasonSuspended, "Sandbox is suspended"),
		// Not suspended yet: a running pod still holds the name.
		"suspending, a pod the sandbox does not own holds its name": falseWith(sandboxv1beta1.SandboxReasonSuspended, "Sandbox is suspending"),
		"suspended, pod state unreadable":                           falseWith(sandboxv1beta1.SandboxReasonReconcilerError, "Error seen: boom"),
		"suspending, deleting the owned pod failed":                 falseWith(sandboxv1beta1.SandboxReasonReconcilerError, "Error seen: boom"),
		"running, error before the pod was seen":                    falseWith(sandboxv1beta1.SandboxReasonReconcilerError, "Error seen: boom"),
		"running, error after a ready pod was seen":                 falseWith(sandboxv1beta1.SandboxReasonReconcilerError, "Error seen: boom"),
		// Ready stays False, so its transition time is kept.
		"expired after the pod finished": {Type: sandboxv1beta1.SandboxConditionReady, Status: metav1.ConditionFalse,
			ObservedGeneration: testGeneration, Reason: sandboxv1beta1.SandboxReasonExpired, Message: "Sandbox has expired",
			LastTransitionTime: testEarlier},
		"expired while ready": falseWith(sandboxv1beta1.SandboxReasonExpired, "Sandbox has expired"),
	}, findCondition(sandboxv1beta1.SandboxConditionReady))
}

func TestComputeStatusSuspended(t *testing.T) {
	notSuspended, terminating := ptrTo(notSuspendedCond), ptrTo(podTerminatingCond)
	runScenarios(t, map[string]*metav1.Condition{
		"no pod":                                             notSuspended,
		"no pod, service required":                           notSuspended,
		"no pod, service exists":                             notSuspended,
		"pending, no PodScheduled condition":                 notSuspended,
		"pending, unschedulable":                             notSuspended,
		"pending, not scheduled without a reason":            notSuspended,
		"phase Unknown":                                      notSuspended,
		"running, not ready":                                 notSuspended,
		"running, no Ready condition yet":                    notSuspended,
		"ready, no podIPs":                                   notSuspended,
		"ready, dual-stack, service exists":                  notSuspended,
		"ready, service required but missing":                notSuspended,
		"ready, service not requested":                       notSuspended,
		"ready, service false":                               notSuspended,
		"ready, service not requested but a kept one exists": notSuspended,
		"ready, status.podIP only":                           notSuspended,
		"succeeded":                                          notSuspended,
		"failed":                                             notSuspended,
		"suspending, owned pod still exists":                 terminating,
		"suspended, pod gone":                                ptrTo(podTerminatedCond),
		"suspending, a pod the sandbox does not own holds its name": ptrTo(cond(sandboxv1beta1.SandboxConditionSuspended,
			metav1.ConditionFalse, sandboxv1beta1.SandboxReasonPodNotOwned, "Refused to delete pod because it is not owned by this sandbox")),
		"suspended, pod state unreadable": ptrTo(cond(sandboxv1beta1.SandboxConditionSuspended, metav1.ConditionUnknown,
			sandboxv1beta1.SandboxReasonPodStateUnknown, "Pod state is unknown. Sandbox suspension cannot be confirmed")),
		// The pod is known to exist, so the suspension is still in progress, not unknown.
		"suspending, deleting the owned pod failed": terminating,
		"running, error before the pod was seen":    notSuspended,
		"running, error after a ready pod was seen": notSuspended,
		// Expiry leaves the other conditions as they were.
		"expired after the pod finished": {Type: sandboxv1beta1.SandboxConditionSuspended, Status: metav1.ConditionFalse,
			ObservedGeneration: 2, Reason: sandboxv1beta1.SandboxReasonNotSuspended, Message: "Sandbox is not suspended",
			LastTransitionTime: testEarlier},
		"expired while ready": nil,
	}, findCondition(sandboxv1beta1.SandboxConditionSuspended), ignoreMessage)
}

func TestComputeStatusPodScheduled(t *testing.T) {
	unknown, scheduled := ptrTo(schedulingUnknownCond), ptrTo(scheduledCond)
	stateUnknown := ptrTo(podStateUnknownSchedulingCond)
	// agent-sandbox v1.0.13 (#2142): PodScheduled stays present, False/PodAbsent without a Pod and
	// False/SandboxExpired after expiry.
	podAbsent := ptrTo(podAbsentCond)
	expired := ptrTo(cond(sandboxv1beta1.SandboxConditionPodScheduled, metav1.ConditionFalse,
		sandboxv1beta1.SandboxReasonExpired, "Sandbox has expired; it has no Pod"))
	runScenarios(t, map[string]*metav1.Condition{
		"no pod":                             podAbsent,
		"no pod, service required":           podAbsent,
		"no pod, service exists":             podAbsent,
		"pending, no PodScheduled condition": unknown,
		"pending, unschedulable": ptrTo(cond(sandboxv1beta1.SandboxConditionPodScheduled, metav1.ConditionFalse,
			corev1.PodReasonUnschedulable, "0/3 nodes are available: 3 Insufficient cpu.")),
		// A reason is required; a pod that is not scheduled must not get the reason "PodScheduled".
		"pending, not scheduled without a reason": ptrTo(cond(sandboxv1beta1.SandboxConditionPodScheduled, metav1.ConditionFalse,
			sandboxv1beta1.SandboxReasonPodSchedulingUnknown, "")),
		"phase Unknown":                                      scheduled,
		"running, not ready":                                 scheduled,
		"running, no Ready condition yet":                    scheduled,
		"ready, no podIPs":                                   scheduled,
		"ready, dual-stack, service exists":                  scheduled,
		"ready, service required but missing":                scheduled,
		"ready, service not requested":                       scheduled,
		"ready, service false":                               scheduled,
		"ready, service not requested but a kept one exists": scheduled,
		"ready, status.podIP only":                           scheduled,
		"succeeded":                                          scheduled,
		"failed":                                             scheduled,
		"suspending, owned pod still exists":                 unknown,
		// The Pod was scheduled; now there is none: the condition turns False (time moves).
		"suspended, pod gone": podAbsent,
		// The Pod holding the name is not the sandbox's: the sandbox has none.
		"suspending, a pod the sandbox does not own holds its name": podAbsent,
		// A failed read does not prove the pod is gone (inventory 1.7: Unknown on pod read error).
		"suspended, pod state unreadable":           stateUnknown,
		"suspending, deleting the owned pod failed": unknown,
		"running, error before the pod was seen":    stateUnknown,
		"running, error after a ready pod was seen": scheduled,
		"expired after the pod finished":            expired,
		"expired while ready":                       expired,
	}, findCondition(sandboxv1beta1.SandboxConditionPodScheduled), ignoreMessage)
}

func TestComputeStatusFinished(t *testing.T) {
	runScenarios(t, map[string]*metav1.Condition{
		"no pod":                                             nil,
		"no pod, service required":                           nil,
		"no pod, service exists":                             nil,
		"pending, no PodScheduled condition":                 nil,
		"pending, unschedulable":                             nil,
		"pending, not scheduled without a reason":            nil,
		"phase Unknown":                                      nil,
		"running, not ready":                                 nil,
		"running, no Ready condition yet":                    nil,
		"ready, no podIPs":                                   nil,
		"ready, dual-stack, service exists":                  nil,
		"ready, service required but missing":                nil,
		"ready, service not requested":                       nil,
		"ready, service false":                               nil,
		"ready, service not requested but a kept one exists": nil,
		"ready, status.podIP only":                           nil,
		"succeeded": ptrTo(cond(sandboxv1beta1.SandboxConditionFinished, metav1.ConditionTrue,
			sandboxv1beta1.SandboxReasonPodSucceeded, "Pod completed successfully")),
		"failed": ptrTo(cond(sandboxv1beta1.SandboxConditionFinished, metav1.ConditionTrue,
			sandboxv1beta1.SandboxReasonPodFailed, "Pod failed")),
		"suspending, owned pod still exists":                        nil,
		"suspended, pod gone":                                       nil,
		"suspending, a pod the sandbox does not own holds its name": nil,
		"suspended, pod state unreadable":                           nil,
		"suspending, deleting the owned pod failed":                 nil,
		"running, error before the pod was seen":                    nil,
		"running, error after a ready pod was seen":                 nil,
		// Finished survives expiry (inventory 1.7; v1.0.13: never removed once present), its
		// time kept and its generation the current one.
		"expired after the pod finished": {Type: sandboxv1beta1.SandboxConditionFinished, Status: metav1.ConditionTrue,
			ObservedGeneration: testGeneration, Reason: sandboxv1beta1.SandboxReasonPodSucceeded, Message: "Pod completed successfully",
			LastTransitionTime: testEarlier},
		"expired while ready": nil,
	}, findCondition(sandboxv1beta1.SandboxConditionFinished), ignoreMessage)
}

// TestComputeStatusMessages pins the messages of the Suspended, PodScheduled and Finished
// conditions, one scenario per message, to agent-sandbox's wording (API.md: "Messages as
// agent-sandbox writes them"); clients and agent-sandbox's e2e tests match on them.
func TestComputeStatusMessages(t *testing.T) {
	cases := []struct {
		scenario, condition, want string
	}{
		{"no pod", sandboxv1beta1.SandboxConditionSuspended, "Sandbox is not suspended"},
		{"suspending, owned pod still exists", sandboxv1beta1.SandboxConditionSuspended, "Pod is terminating. Sandbox is suspending"},
		{"suspended, pod gone", sandboxv1beta1.SandboxConditionSuspended, "Pod has been terminated. Sandbox is suspended"},
		{"suspending, a pod the sandbox does not own holds its name", sandboxv1beta1.SandboxConditionSuspended,
			"Refused to delete pod because it is not owned by this sandbox"},
		{"suspended, pod state unreadable", sandboxv1beta1.SandboxConditionSuspended,
			"Pod state is unknown. Sandbox suspension cannot be confirmed"},
		{"pending, no PodScheduled condition", sandboxv1beta1.SandboxConditionPodScheduled,
			"Pod has not reported a PodScheduled condition yet"},
		{"running, error before the pod was seen", sandboxv1beta1.SandboxConditionPodScheduled,
			"Pod state is unknown. Pod scheduling cannot be determined"},
		{"pending, unschedulable", sandboxv1beta1.SandboxConditionPodScheduled, "0/3 nodes are available: 3 Insufficient cpu."},
		{"running, not ready", sandboxv1beta1.SandboxConditionPodScheduled, ""},
		// kubox's wording: agent-sandbox v1.0.13's notes give the reasons, not the messages.
		{"no pod", sandboxv1beta1.SandboxConditionPodScheduled, "Sandbox has no Pod"},
		{"suspended, pod gone", sandboxv1beta1.SandboxConditionPodScheduled, "Sandbox is suspended; it has no Pod"},
		{"expired while ready", sandboxv1beta1.SandboxConditionPodScheduled, "Sandbox has expired; it has no Pod"},
		{"succeeded", sandboxv1beta1.SandboxConditionFinished, "Pod completed successfully"},
		{"failed", sandboxv1beta1.SandboxConditionFinished, "Pod failed"},
	}
	for _, tc := range cases {
		t.Run(tc.condition+"/"+tc.scenario, func(t *testing.T) {
			sc := scenarios[tc.scenario]
			got := computeStatus(withMeta(sc.sandbox()), sc.obs(), testDomain, testNow)
			c := meta.FindStatusCondition(got.Conditions, tc.condition)
			if c == nil {
				t.Fatalf("no %s condition in %+v", tc.condition, got.Conditions)
			}
			if c.Message != tc.want {
				t.Errorf("%s message = %q, want %q", tc.condition, c.Message, tc.want)
			}
		})
	}
}

// More than one owned Pod is an error the user must fix; the message is kubox's own, so only the
// status, reason and the absence of pod-derived fields are asserted.
func TestComputeStatusMultiplePods(t *testing.T) {
	sb := withMeta(testSandbox().Service(true).Obj())
	sb.Status.PodIPs, sb.Status.NodeName = []string{"10.244.0.5"}, "node-1"
	sb.Status.Conditions = []metav1.Condition{{Type: sandboxv1beta1.SandboxConditionPodScheduled,
		Status: metav1.ConditionTrue, Reason: "PodScheduled", LastTransitionTime: testEarlier}}
	obs := &observed{ownedPods: 2, service: testService()}

	got := computeStatus(sb, obs, testDomain, testNow)

	ready := meta.FindStatusCondition(got.Conditions, sandboxv1beta1.SandboxConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != sandboxv1beta1.SandboxReasonMultiplePods {
		t.Errorf("Ready = %+v, want False/%s", ready, sandboxv1beta1.SandboxReasonMultiplePods)
	}
	if ready != nil && ready.Message == "" {
		t.Errorf("Ready has no message; it must tell the user what to do")
	}
	// No single Pod to mirror: PodScheduled stays present (v1.0.13) but cannot say more than
	// Unknown, and Finished, absent before, stays absent.
	if c := meta.FindStatusCondition(got.Conditions, sandboxv1beta1.SandboxConditionPodScheduled); c == nil ||
		c.Status != metav1.ConditionUnknown || c.Reason != sandboxv1beta1.SandboxReasonPodSchedulingUnknown {
		t.Errorf("PodScheduled = %+v, want Unknown/%s: no single pod to mirror", c, sandboxv1beta1.SandboxReasonPodSchedulingUnknown)
	}
	if c := meta.FindStatusCondition(got.Conditions, sandboxv1beta1.SandboxConditionFinished); c != nil {
		t.Errorf("Finished = %+v, want it absent: no Pod of the sandbox has finished", c)
	}
	if got.PodIPs != nil || got.NodeName != "" {
		t.Errorf("podIPs, nodeName = %v, %q; want them cleared with no single owned pod", got.PodIPs, got.NodeName)
	}
}

func TestComputeStatusServiceFQDNUsesClusterDomain(t *testing.T) {
	sb := withMeta(testSandbox().Service(true).Obj())
	svc := testutil.MakeService("svc-name", "other-ns").Obj()
	for domain, want := range map[string]string{
		"cluster.local":       "svc-name.other-ns.svc.cluster.local",
		"corp.example.com":    "svc-name.other-ns.svc.corp.example.com",
		"kubox-dev.internal.": "svc-name.other-ns.svc.kubox-dev.internal.",
	} {
		got := computeStatus(sb, &observed{service: svc}, domain, testNow)
		if got.ServiceFQDN != want || got.Service != "svc-name" {
			t.Errorf("domain %q: service, serviceFQDN = %q, %q; want %q, %q", domain, got.Service, got.ServiceFQDN, "svc-name", want)
		}
	}
}

// A condition's lastTransitionTime moves only when its status changes (metav1.Condition's
// contract); reason, message and observedGeneration are always refreshed.
func TestComputeStatusTransitionTimes(t *testing.T) {
	readyPod := testPod().Phase(corev1.PodRunning).Scheduled().Ready().IP("10.244.0.5").Obj()
	pendingPod := testPod().Phase(corev1.PodPending).Scheduled().Obj()
	previous := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: "old",
			ObservedGeneration: 1, LastTransitionTime: testEarlier}
	}

	cases := map[string]struct {
		previous metav1.Condition
		sandbox  *testutil.SandboxWrapper
		obs      observed
		want     metav1.Condition
	}{
		"Ready stays False with a new reason: time kept": {
			previous: previous(sandboxv1beta1.SandboxConditionReady, metav1.ConditionFalse, sandboxv1beta1.SandboxReasonReconcilerError),
			sandbox:  testSandbox(),
			obs:      observed{ownedPods: 1, pod: pendingPod},
			want: metav1.Condition{Type: sandboxv1beta1.SandboxConditionReady, Status: metav1.ConditionFalse,
				Reason: sandboxv1beta1.SandboxReasonDependenciesNotReady, Message: "Pod exists with phase: Pending",
				ObservedGeneration: testGeneration, LastTransitionTime: testEarlier},
		},
		"Ready turns True: time moves": {
			previous: previous(sandboxv1beta1.SandboxConditionReady, metav1.ConditionFalse, sandboxv1beta1.SandboxReasonDependenciesNotReady),
			sandbox:  testSandbox(),
			obs:      observed{ownedPods: 1, pod: readyPod},
			want:     readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"),
		},
		"Ready stays True: time kept": {
			previous: previous(sandboxv1beta1.SandboxConditionReady, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady),
			sandbox:  testSandbox(),
			obs:      observed{ownedPods: 1, pod: readyPod},
			want: metav1.Condition{Type: sandboxv1beta1.SandboxConditionReady, Status: metav1.ConditionTrue,
				Reason: sandboxv1beta1.SandboxReasonDependenciesReady, Message: "Pod is Ready",
				ObservedGeneration: testGeneration, LastTransitionTime: testEarlier},
		},
		"Suspended stays False while running: time kept": {
			previous: previous(sandboxv1beta1.SandboxConditionSuspended, metav1.ConditionFalse, sandboxv1beta1.SandboxReasonNotSuspended),
			sandbox:  testSandbox(),
			obs:      observed{ownedPods: 1, pod: readyPod},
			want: metav1.Condition{Type: sandboxv1beta1.SandboxConditionSuspended, Status: metav1.ConditionFalse,
				Reason: sandboxv1beta1.SandboxReasonNotSuspended, Message: "Sandbox is not suspended",
				ObservedGeneration: testGeneration, LastTransitionTime: testEarlier},
		},
		"Suspended turns True when the pod is gone: time moves": {
			previous: previous(sandboxv1beta1.SandboxConditionSuspended, metav1.ConditionFalse, sandboxv1beta1.SandboxReasonPodTerminating),
			sandbox:  testSandbox().Suspended(),
			obs:      observed{},
			want:     podTerminatedCond,
		},
		"Suspended back to False on resume: time moves": {
			previous: previous(sandboxv1beta1.SandboxConditionSuspended, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodTerminated),
			sandbox:  testSandbox().Running(),
			obs:      observed{},
			want:     notSuspendedCond,
		},
		"Finished stays True: time kept": {
			previous: previous(sandboxv1beta1.SandboxConditionFinished, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodSucceeded),
			sandbox:  testSandbox(),
			obs:      observed{ownedPods: 1, pod: testPod().Phase(corev1.PodSucceeded).Obj()},
			want: metav1.Condition{Type: sandboxv1beta1.SandboxConditionFinished, Status: metav1.ConditionTrue,
				Reason: sandboxv1beta1.SandboxReasonPodSucceeded, Message: "Pod completed successfully",
				ObservedGeneration: testGeneration, LastTransitionTime: testEarlier},
		},
		"PodScheduled stays True: time kept": {
			previous: previous(sandboxv1beta1.SandboxConditionPodScheduled, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodScheduled),
			sandbox:  testSandbox(),
			obs:      observed{ownedPods: 1, pod: pendingPod},
			want: metav1.Condition{Type: sandboxv1beta1.SandboxConditionPodScheduled, Status: metav1.ConditionTrue,
				Reason: sandboxv1beta1.SandboxReasonPodScheduled, ObservedGeneration: testGeneration, LastTransitionTime: testEarlier},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb := withMeta(tc.sandbox.Condition(tc.previous).Obj())
			got := computeStatus(sb, &tc.obs, testDomain, testNow)
			c := meta.FindStatusCondition(got.Conditions, tc.want.Type)
			if c == nil {
				t.Fatalf("no %s condition in %+v", tc.want.Type, got.Conditions)
			}
			if diff := cmp.Diff(tc.want, *c, ignoreMessage); diff != "" {
				t.Errorf("%s condition (-want +got):\n%s", tc.want.Type, diff)
			}
		})
	}
}

// computeStatus is pure: it must not write into the Sandbox it reads, or a failed status write
// would leave the informer cache's copy changed.
func TestComputeStatusDoesNotMutateSandbox(t *testing.T) {
	sb := withMeta(testSandbox().Service(true).Obj())
	sb.Status = sandboxv1beta1.SandboxStatus{
		PodIPs: []string{"10.0.0.1"},
		Conditions: []metav1.Condition{
			{Type: sandboxv1beta1.SandboxConditionReady, Status: metav1.ConditionTrue, Reason: "DependenciesReady", LastTransitionTime: testEarlier},
			{Type: sandboxv1beta1.SandboxConditionPodScheduled, Status: metav1.ConditionTrue, Reason: "PodScheduled", LastTransitionTime: testEarlier},
			{Type: sandboxv1beta1.SandboxConditionFinished, Status: metav1.ConditionTrue, Reason: "PodSucceeded", LastTransitionTime: testEarlier},
		},
	}
	before := sb.DeepCopy()
	for _, obs := range []*observed{
		{err: errors.New("boom")},
		{expired: true},
		{ownedPods: 1, pod: testPod().Phase(corev1.PodPending).Obj()},
	} {
		_ = computeStatus(sb, obs, testDomain, testNow)
		if diff := cmp.Diff(before, sb); diff != "" {
			t.Fatalf("computeStatus(%+v) changed the Sandbox (-before +after):\n%s", obs, diff)
		}
	}
}

// Every status carries the preview id kubox-router serves the sandbox's ports under, derived
// from the UID, so a recreated sandbox of the same name gets another one.
func TestComputeStatusPreviewID(t *testing.T) {
	sb := withMeta(testSandbox().Obj())
	sb.UID = "0b6f3c2e-5f57-4e0b-9a55-6a0c1b7d9e11"
	got := computeStatus(sb, &observed{}, testDomain, testNow)
	if want := contract.PreviewID(sb.UID); got.PreviewID != want || len(want) != contract.PreviewIDLength {
		t.Errorf("previewID = %q, want %q", got.PreviewID, want)
	}
	sb.UID = "7d1e0f4a-2c3b-4d5e-8f60-718293a4b5c6"
	if again := computeStatus(sb, &observed{}, testDomain, testNow); again.PreviewID == got.PreviewID {
		t.Errorf("two UIDs share the preview id %q", got.PreviewID)
	}
}

// TestComputeStatusReadyV1 covers agent-sandbox v1's Ready rules: not Ready while the Pod
// terminates (even if it still reports Ready), and InvalidConfiguration when the API server
// refused a child as invalid, a permanent error unlike ReconcilerError.
func TestComputeStatusReadyV1(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, testName, field.ErrorList{
		field.Invalid(field.NewPath("spec", "containers").Index(0).Child("image"), "", "must not be empty")})
	cases := map[string]struct {
		obs  *observed
		want metav1.Condition
	}{
		"a Ready Pod that is terminating": {
			obs: &observed{ownedPods: 1,
				pod: readyPod().IP("10.244.0.5").Obj(), service: testService()},
			want: notReady("Pod is terminating; Service Exists"),
		},
		"a child refused as invalid": {
			obs: &observed{err: fmt.Errorf("creating Pod %s: %w", testName, invalid)},
			want: readyCond(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonInvalidConfiguration,
				"The Sandbox's configuration is invalid; fix the spec: creating Pod "+testName+": "+invalid.Error()),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.obs.pod != nil {
				tc.obs.pod.DeletionTimestamp = &testEarlier
			}
			st := computeStatus(withMeta(testSandbox().Service(true).Obj()), tc.obs, testDomain, testNow)
			got := meta.FindStatusCondition(st.Conditions, sandboxv1beta1.SandboxConditionReady)
			if diff := cmp.Diff(&tc.want, got); diff != "" {
				t.Errorf("Ready (-want +got):\n%s", diff)
			}
		})
	}
}

// A Sandbox that waits for the objects of an earlier Sandbox of its name (deleted, not yet
// garbage-collected) is not in error: Ready says it waits and for what, with the usual
// not-ready reason, while a real error, alone or beside the wait, stays a ReconcilerError.
func TestReadyWhileWaitingForAPredecessor(t *testing.T) {
	wait := &predecessorWait{kind: "Pod", name: "sb", owner: "sb", uid: "old-uid"}
	cases := map[string]struct {
		err        error
		wantReason string
	}{
		"waiting for the earlier Sandbox's Pod": {err: wait, wantReason: sandboxv1beta1.SandboxReasonDependenciesNotReady},
		"the wait wrapped":                      {err: fmt.Errorf("creating pod: %w", wait), wantReason: sandboxv1beta1.SandboxReasonDependenciesNotReady},
		"a real error beside the wait":          {err: errors.Join(wait, errors.New("boom")), wantReason: sandboxv1beta1.SandboxReasonReconcilerError},
		"a real error":                          {err: errors.New("boom"), wantReason: sandboxv1beta1.SandboxReasonReconcilerError},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := readyCondition(withMeta(testSandbox().Obj()), &observed{err: tc.err})
			if c.Status != metav1.ConditionFalse || c.Reason != tc.wantReason {
				t.Errorf("Ready = %s/%s %q, want False/%s", c.Status, c.Reason, c.Message, tc.wantReason)
			}
			if tc.wantReason == sandboxv1beta1.SandboxReasonDependenciesNotReady && !strings.Contains(c.Message, "old-uid") {
				t.Errorf("Ready message %q does not name the earlier Sandbox's UID", c.Message)
			}
		})
	}
}
