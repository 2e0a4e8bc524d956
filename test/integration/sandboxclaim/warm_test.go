package sandboxclaim

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

func TestWarmClaimBindsAReadyMemberWithoutRestartingItsPod(t *testing.T) {
	ns := startController(t)
	// The claim's annotation example.com/note is in a domain the template allows claims.
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().PodLabel("sandbox.users.io/team", "a").
		ClaimPolicy(extv1beta1.ClaimPolicy{AllowedAnnotationDomains: []string{"example.com"}}).Obj())
	env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(2).Obj())
	waitForPoolReady(t, ns, "pool", 2)
	members, err := poolMembers(t, ns, "pool")
	if err != nil {
		t.Fatal(err)
	}
	podUIDs := map[string]string{}
	for _, m := range members {
		podUIDs[m.Name] = string(framework.Read[corev1.Pod](t, env, ns, m.Name).UID)
	}

	const trace = `{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`
	env.Create(t, testutil.MakeClaim("c1", ns).WarmPool("pool").PodLabel("sandbox.users.io/user", "u1").PodAnnotation("example.com/note", "hi").
		Annotation(sandboxv1beta1.TraceContextAnnotation, trace).Obj())
	claim := waitReady(t, ns, "c1")

	name := claim.Status.Sandbox.Name
	if _, wasMember := podUIDs[name]; !wasMember {
		t.Fatalf("Claim bound Sandbox %q; want one of the pool's ready members %v", name, podUIDs)
	}
	if r := readyCondition(claim); r.Reason != sandboxv1beta1.SandboxReasonDependenciesReady {
		t.Errorf("Ready = %+v; want the sandbox's reason DependenciesReady", r)
	}
	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, name)
	if ok, desc := isBoundTo(sb, claim); !ok {
		t.Error(desc)
	}
	if _, ok := sb.Labels[sandboxv1beta1.WarmPoolSandboxLabel]; ok || sb.Labels[sandboxv1beta1.LaunchTypeLabel] != extv1beta1.LaunchTypeWarm {
		t.Errorf("Sandbox labels = %v; want no warm-pool-sandbox and launch-type=warm", sb.Labels)
	}
	if sb.Annotations[sandboxv1beta1.TraceContextAnnotation] != trace {
		t.Errorf("Sandbox trace context = %q; want the claim's %q", sb.Annotations[sandboxv1beta1.TraceContextAnnotation], trace)
	}
	if md := sb.Spec.PodTemplate.Metadata; md.Labels["sandbox.users.io/user"] != "u1" || md.Annotations["example.com/note"] != "hi" ||
		md.Annotations[extv1beta1.SafeToEvictAnnotation] != "" {
		t.Errorf("Sandbox pod metadata = %+v; want the claim's label and annotation, and no safe-to-evict", md)
	}
	pod := framework.Read[corev1.Pod](t, env, ns, name)
	if !slices.Equal(claim.Status.Sandbox.PodIPs, sb.Status.PodIPs) || len(sb.Status.PodIPs) == 0 || pod.Status.PodIP != sb.Status.PodIPs[0] {
		t.Errorf("Claim podIPs %v, Sandbox podIPs %v, Pod IP %s; want the Pod's IP in both", claim.Status.Sandbox.PodIPs, sb.Status.PodIPs, pod.Status.PodIP)
	}

	// The Sandbox controller relabels the running Pod in place: same Pod, new labels.
	framework.Eventually(t, func() (bool, string) {
		pod := framework.Read[corev1.Pod](t, env, ns, name)
		_, inPool := pod.Labels[sandboxv1beta1.WarmPoolSandboxLabel]
		ok := string(pod.UID) == podUIDs[name] && !inPool && pod.Labels[sandboxv1beta1.ClaimUIDLabel] == string(claim.UID) &&
			pod.Labels["sandbox.users.io/user"] == "u1" && pod.Labels["sandbox.users.io/team"] == "a" &&
			pod.Annotations["example.com/note"] == "hi" && pod.Annotations[extv1beta1.SafeToEvictAnnotation] == ""
		return ok, fmt.Sprintf("Pod %s uid %s (was %s), labels %v, annotations %v", name, pod.UID, podUIDs[name], pod.Labels, pod.Annotations)
	})
	env.WaitForEvent(t, ns, "SandboxClaim", "c1", corev1.EventTypeNormal, "SandboxAdopted", name)

	// The pool refills and never touches the bound sandbox again.
	waitForPoolReady(t, ns, "pool", 2)
	members, err = poolMembers(t, ns, "pool")
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(members, func(m sandboxv1beta1.Sandbox) bool { return m.Name == name }) {
		t.Errorf("Pool members %v include the bound Sandbox %s", members, name)
	}
	framework.Consistently(t, quiet, func() (bool, string) {
		c := framework.Read[extv1beta1.SandboxClaim](t, env, ns, "c1")
		sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, name)
		ok, desc := isBoundTo(sb, c)
		return ok && hasReady(metav1.ConditionTrue, "")(c), desc + "; " + describeClaim(c)
	})
}

func TestWarmClaimSkipsStaleMembers(t *testing.T) {
	ns := startController(t)
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(1).Obj()) // OnReplenish keeps stale members
	waitForPoolReady(t, ns, "pool", 1)

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		tpl := &extv1beta1.SandboxTemplate{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "python"}, tpl); err != nil {
			return err
		}
		tpl.Spec.PodTemplate.Spec.Containers[0].Image = "registry.invalid/busybox:2"
		return env.Client.Update(t.Context(), tpl)
	})
	if err != nil {
		t.Fatalf("Changing the template: %v", err)
	}
	// A claim made before the controllers' cache has the new template is bound from the old one,
	// as a claim made just before the change would be. The pool's status tells when the shared
	// cache has it: its one member no longer counts as updated.
	framework.WaitForObject(t, env, &extv1beta1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool"}},
		func(p *extv1beta1.SandboxWarmPool) (bool, string) {
			return p.Status.UpdatedReplicas == 0, fmt.Sprintf("pool status %+v; want updatedReplicas 0 after the template changed", p.Status)
		})
	env.Create(t, testutil.MakeClaim("c1", ns).WarmPool("pool").Obj())
	claim := waitReady(t, ns, "c1")
	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, claim.Status.Sandbox.Name)
	if sb.Name != "c1" || sb.Labels[sandboxv1beta1.LaunchTypeLabel] != extv1beta1.LaunchTypeCold ||
		sb.Spec.PodTemplate.Spec.Containers[0].Image != "registry.invalid/busybox:2" {
		t.Errorf("Claim got Sandbox %s (launch-type %s, image %s); want a cold Sandbox c1 from the current template",
			sb.Name, sb.Labels[sandboxv1beta1.LaunchTypeLabel], sb.Spec.PodTemplate.Spec.Containers[0].Image)
	}
	members, err := poolMembers(t, ns, "pool")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if strings.Contains(m.Labels[sandboxv1beta1.ClaimUIDLabel], string(claim.UID)) {
			t.Errorf("Stale member %s was bound", m.Name)
		}
	}
}

func TestWarmClaimStartsColdWhenThePoolHasNoReadyMember(t *testing.T) {
	ns := startController(t)
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakePool("empty", ns, "python").Replicas(0).Obj())
	env.Create(t, testutil.MakeClaim("c1", ns).WarmPool("empty").Obj())
	claim := waitReady(t, ns, "c1")
	if claim.Status.Sandbox.Name != "c1" {
		t.Fatalf("Claim sandbox = %q; want a cold Sandbox named like the claim", claim.Status.Sandbox.Name)
	}
	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, "c1")
	if ok, desc := isBoundTo(sb, claim); !ok {
		t.Error(desc)
	}
	if sb.Labels[sandboxv1beta1.LaunchTypeLabel] != extv1beta1.LaunchTypeCold {
		t.Errorf("Sandbox launch-type = %q; want cold", sb.Labels[sandboxv1beta1.LaunchTypeLabel])
	}
	if !meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady) {
		t.Errorf("Sandbox is not Ready while its claim is")
	}
}
