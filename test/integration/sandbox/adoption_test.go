package sandbox

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandbox"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// adoptionKind is one kind of child a Sandbox may find already existing under its name.
type adoptionKind struct {
	// object returns the pre-existing child of Sandbox name in ns, labelled with labels.
	object func(ns, name string, labels map[string]string) client.Object
	// sandbox returns the Sandbox that wants that child.
	sandbox func(ns, name string) *sandboxv1beta1.Sandbox
	// kind is the child's kind as events and messages name it.
	kind string
}

const adoptionVCT = "data"

var adoptionKinds = map[string]adoptionKind{
	"Pod": {
		kind: "Pod",
		object: func(ns, name string, labels map[string]string) client.Object {
			return testutil.MakePod(name, ns).Labels(labels).Obj()
		},
		sandbox: func(ns, name string) *sandboxv1beta1.Sandbox { return testutil.MakeSandbox(name, ns).Obj() },
	},
	"Service": {
		kind: "Service",
		object: func(ns, name string, labels map[string]string) client.Object {
			return testutil.MakeService(name, ns).Labels(labels).Selector(map[string]string{"app": "old"}).Obj()
		},
		sandbox: func(ns, name string) *sandboxv1beta1.Sandbox {
			return testutil.MakeSandbox(name, ns).Service(true).Container("main", testutil.DefaultImage, 8080).Obj()
		},
	},
	"PersistentVolumeClaim": {
		kind: "PersistentVolumeClaim",
		object: func(ns, name string, labels map[string]string) client.Object {
			return testutil.MakePVC(sandboxv1beta1.PVCName(adoptionVCT, name), ns).Labels(labels).Obj()
		},
		sandbox: func(ns, name string) *sandboxv1beta1.Sandbox {
			return testutil.MakeSandbox(name, ns).VolumeClaimTemplate(adoptionVCT, "1Gi").Obj()
		},
	},
}

// TestAdoption covers, for each kind of child, the adoption rules: an unowned object named like the
// child is adopted when labelled adoptable or with the Sandbox's name hash; otherwise, or when
// another controller owns it, it is left alone and the Sandbox reports why.
func TestAdoption(t *testing.T) {
	t.Parallel()
	const name = "heir"
	hash := sandboxv1beta1.NameHash(name)
	adoptable := map[string]map[string]string{
		"labelled adoptable":     {sandboxv1beta1.AdoptableLabel: "true", "origin": "pool"},
		"carrying the name hash": {sandboxv1beta1.SandboxNameHashLabel: hash, "origin": "pool"},
		"labelled adoptable with another sandbox's hash": {sandboxv1beta1.AdoptableLabel: "true",
			sandboxv1beta1.SandboxNameHashLabel: sandboxv1beta1.NameHash("other"), "origin": "pool"},
	}
	refused := map[string]map[string]string{
		"unlabelled":                      {"origin": "elsewhere"},
		"labelled adoptable=false":        {sandboxv1beta1.AdoptableLabel: "false"},
		"carrying another sandbox's hash": {sandboxv1beta1.SandboxNameHashLabel: sandboxv1beta1.NameHash("other")},
	}
	for kindName, k := range adoptionKinds {
		t.Run(kindName, func(t *testing.T) {
			t.Parallel()
			for caseName, labels := range adoptable {
				t.Run("adopts one "+caseName, func(t *testing.T) {
					t.Parallel()
					testAdopted(t, k, name, labels)
				})
			}
			for caseName, labels := range refused {
				t.Run("refuses one "+caseName, func(t *testing.T) {
					t.Parallel()
					testRefused(t, k, name, func(ns string) client.Object { return k.object(ns, name, labels) },
						"already exists and is not controlled by this Sandbox")
				})
			}
			t.Run("leaves one owned by another controller alone", func(t *testing.T) {
				t.Parallel()
				testOwnedByOther(t, k, name)
			})
		})
	}
}

func testAdopted(t *testing.T, k adoptionKind, name string, labels map[string]string) {
	ns := startController(t)
	obj := k.object(ns, name, labels)
	env.Create(t, obj)
	env.Create(t, k.sandbox(ns, name))
	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, name)

	adopted := framework.WaitForObject(t, env, obj.DeepCopyObject().(client.Object), func(o client.Object) (bool, string) {
		ok, msg := env.IsControlledBy(o, sb)
		if ok && o.GetLabels()[sandboxv1beta1.SandboxNameHashLabel] != sandboxv1beta1.NameHash(name) {
			return false, fmt.Sprintf("adopted %s has labels %v; want the name-hash label, which the controller's cache selects on",
				o.GetName(), o.GetLabels())
		}
		return ok, msg
	})
	if adopted.GetUID() != obj.GetUID() {
		t.Fatalf("%s %s was replaced (uid %s, now %s); want the existing one adopted", k.kind, obj.GetName(), obj.GetUID(), adopted.GetUID())
	}
	if adopted.GetLabels()["origin"] != "pool" {
		t.Errorf("Adopted %s lost its own labels: %v", k.kind, adopted.GetLabels())
	}
	env.WaitForEvent(t, ns, "Sandbox", name, corev1.EventTypeNormal, sandbox.EventAdopted, fmt.Sprintf("Adopted existing %s %s", k.kind, obj.GetName()))

	switch o := adopted.(type) {
	case *corev1.Service:
		// The adopted Service is brought to what the Sandbox's own would be.
		want := map[string]string{sandboxv1beta1.SandboxNameLabel: name}
		framework.WaitForObject(t, env, o, func(s *corev1.Service) (bool, string) {
			return cmp.Equal(want, s.Spec.Selector) && len(s.Spec.Ports) == 1 && s.Spec.Ports[0].Port == 8080,
				fmt.Sprintf("selector %v, ports %v; want selector %v and port 8080", s.Spec.Selector, s.Spec.Ports, want)
		})
	case *corev1.PersistentVolumeClaim:
		pod := waitForPod(t, ns, name)
		if v := podVolume(pod, adoptionVCT); v == nil || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != o.Name {
			t.Errorf("Pod volume %s = %+v; want the adopted claim %s", adoptionVCT, v, o.Name)
		}
	}

	// The Sandbox proceeds with the adopted child: no error, and once its Pod is ready, Ready.
	waitForPod(t, ns, name)
	env.UpdatePodStatus(t, ns, name, framework.RunningAndReady("10.0.0.3"))
	msg := "Pod is Ready"
	if _, ok := adopted.(*corev1.Service); ok {
		msg += "; Service Exists"
	}
	waitForConditions(t, ns, name, readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, msg))
	framework.WaitForObject(t, env, adopted, func(o client.Object) (bool, string) { return env.IsControlledBy(o, sb) })
}

// testRefused checks that the object made by existing is left as it is and that the Sandbox reports
// a ReconcilerError whose message contains wantMsg.
func testRefused(t *testing.T, k adoptionKind, name string, existing func(ns string) client.Object, wantMsg string) {
	ns := startController(t)
	obj := existing(ns)
	env.Create(t, obj)
	env.Create(t, k.sandbox(ns, name))

	sb := waitForSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) (bool, string) {
		c := findCondition(sb, sandboxv1beta1.SandboxConditionReady)
		ok := c != nil && c.Status == metav1.ConditionFalse && c.Reason == sandboxv1beta1.SandboxReasonReconcilerError &&
			strings.HasPrefix(c.Message, "Error seen: ") && strings.Contains(c.Message, obj.GetName()) &&
			strings.Contains(c.Message, wantMsg)
		return ok, describe(sb)
	})
	if k.kind != "Service" {
		// The pass stopped before it saw a Pod of its own. (A Service is reconciled after the
		// Pod, whose conditions its error leaves as they are.)
		if ok, desc := conditionsMatch(sb, []wantCondition{notSuspended, scheduledCond(metav1.ConditionUnknown,
			sandboxv1beta1.SandboxReasonPodSchedulingUnknown, "Pod state is unknown. Pod scheduling cannot be determined"),
		}); !ok {
			t.Errorf("Conditions while a %s cannot be adopted: %s", k.kind, desc)
		}
	}
	framework.Consistently(t, quiet, func() (bool, string) {
		cur := obj.DeepCopyObject().(client.Object)
		found, err := env.Get(t, cur)
		return found && err == nil && cur.GetResourceVersion() == obj.GetResourceVersion(),
			fmt.Sprintf("%s %s was changed or deleted (found %t, err %v, owners %v)", k.kind, obj.GetName(), found, err, cur.GetOwnerReferences())
	})
	if _, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		// The claims come first: without its claim, no Pod is made.
		if found, err := env.Get(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); found || err != nil {
			t.Errorf("Pod %s was created although its claim could not be adopted (err %v)", name, err)
		}
	}
}

func testOwnedByOther(t *testing.T, k adoptionKind, name string) {
	testRefused(t, k, name, func(ns string) client.Object {
		owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-owner"}}
		env.Create(t, owner)
		obj := k.object(ns, name, map[string]string{
			sandboxv1beta1.AdoptableLabel:       "true",
			sandboxv1beta1.SandboxNameHashLabel: sandboxv1beta1.NameHash(name),
		})
		ref := metav1.NewControllerRef(owner, corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		obj.SetOwnerReferences([]metav1.OwnerReference{*ref})
		return obj
	}, "is controlled by ConfigMap other-owner")
}

// TestAdoptionRefusesANonHeadlessService: a Service with a cluster IP cannot become a Sandbox's
// headless Service (clusterIP is immutable), even when labelled adoptable.
func TestAdoptionRefusesANonHeadlessService(t *testing.T) {
	t.Parallel()
	const name = "routed"
	k := adoptionKinds["Service"]
	testRefused(t, k, name, func(ns string) client.Object {
		svc := testutil.MakeService(name, ns).Labels(map[string]string{sandboxv1beta1.AdoptableLabel: "true"}).Obj()
		svc.Spec.ClusterIP = ""
		svc.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80}}
		return svc
	}, "is not headless")
}
