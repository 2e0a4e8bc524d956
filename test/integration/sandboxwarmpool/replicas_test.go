package sandboxwarmpool

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/blueprint"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestPoolFillsToReplicas checks that a pool creates spec.replicas members as the contract with
// the claim controller describes them, and reports them in its status once they are Ready.
func TestPoolFillsToReplicas(t *testing.T) {
	t.Parallel()
	ns := startController(t, nil)
	env.StartKubelet(t, ns)
	tpl := testutil.MakeTemplate("tpl", ns).Unmanaged().PodLabel("app", "agent").Obj()
	env.Create(t, tpl)
	env.Create(t, testutil.MakePool("pool", ns, "tpl").Replicas(3).Obj())

	pool := waitForPool(t, ns, "pool", full(3))
	if got, want := pool.Status.Selector, "agents.x-k8s.io/warm-pool-sandbox=91dd7983"; got != want {
		t.Errorf("status.selector = %q; want %q", got, want)
	}
	if c := condition(t, pool, extv1beta1.WarmPoolConditionReady); c.Status != metav1.ConditionTrue || c.Message != "3 of 3 members are ready" {
		t.Errorf("Ready condition %+v; want True with message %q", c, "3 of 3 members are ready")
	}
	if c := condition(t, pool, extv1beta1.WarmPoolConditionProgressing); c.Status != metav1.ConditionTrue {
		t.Errorf("Progressing condition %+v; want True", c)
	}

	ms := members(t, ns, pool)
	if len(ms) != 3 {
		t.Fatalf("%d members; want 3", len(ms))
	}
	tpl = getTemplate(t, ns, "tpl")
	bp := blueprint.FromTemplate(tpl)
	wantLabels := map[string]string{
		"agents.x-k8s.io/warm-pool-sandbox":         "91dd7983", // FNV-1a of "pool"
		"agents.x-k8s.io/sandbox-template-ref-hash": "9d22159f", // FNV-1a of "tpl"
		"agents.x-k8s.io/sandbox-template-hash":     blueprint.Hash(&bp),
		"agents.x-k8s.io/launch-type":               "warm",
		"agents.x-k8s.io/created-by":                "controller",
	}
	for _, sb := range ms {
		if !strings.HasPrefix(sb.Name, "pool-") || sb.GenerateName != "pool-" {
			t.Errorf("Member %s (generateName %q); want generateName pool-", sb.Name, sb.GenerateName)
		}
		if diff := cmp.Diff(wantLabels, sb.Labels); diff != "" {
			t.Errorf("Labels of member %s (-want +got):\n%s", sb.Name, diff)
		}
		if got := sb.Annotations["agents.x-k8s.io/sandbox-template-ref"]; got != "tpl" {
			t.Errorf("Member %s annotation sandbox-template-ref = %q; want tpl", sb.Name, got)
		}
		ref := metav1.GetControllerOf(&sb)
		if ref.Kind != "SandboxWarmPool" || ref.Name != "pool" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
			t.Errorf("Member %s controller %+v; want SandboxWarmPool pool blocking owner deletion", sb.Name, *ref)
		}
		pt := sb.Spec.PodTemplate
		if got := pt.Spec.AutomountServiceAccountToken; got == nil || *got {
			t.Errorf("Member %s automountServiceAccountToken = %v; want false", sb.Name, got)
		}
		// The member's pod template is the template's own: what only an unclaimed member's Pod
		// carries comes from the member's labels, so a claim binds it without a spec change.
		if _, set := pt.Metadata.Annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"]; set ||
			!maps.Equal(pt.Metadata.Labels, map[string]string{"app": "agent"}) {
			t.Errorf("Member %s pod metadata %+v; want the template's: labels app=agent, no safe-to-evict", sb.Name, pt.Metadata)
		}
		if got := sb.Annotations["agents.x-k8s.io/pod-name"]; got != sb.Name {
			t.Errorf("Member %s annotation pod-name = %q; want its own name, from its creation", sb.Name, got)
		}
		if sb.Spec.ShutdownTime != nil {
			t.Errorf("Member %s has a shutdownTime: %v", sb.Name, sb.Spec.ShutdownTime)
		}
		pod := &corev1.Pod{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: sb.Name}, pod); err != nil {
			t.Fatalf("Reading the Pod of member %s: %v", sb.Name, err)
		}
		if pod.Labels["agents.x-k8s.io/warm-pool-sandbox"] != "91dd7983" || pod.Labels["agents.x-k8s.io/sandbox-template-ref-hash"] != "9d22159f" ||
			pod.Labels["app"] != "agent" {
			t.Errorf("Pod %s labels %v; want the template's, warm-pool-sandbox and sandbox-template-ref-hash", pod.Name, pod.Labels)
		}
		if got := pod.Annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"]; got != "true" {
			t.Errorf("Pod %s annotation safe-to-evict = %q; want true while unclaimed", pod.Name, got)
		}
	}

	// Nothing more happens once the pool is full.
	before := uids(ms)
	framework.Consistently(t, quiet, func() (bool, string) {
		got := uids(members(t, ns, pool))
		return cmp.Equal(before, got), fmt.Sprintf("members %v; want %v", got, before)
	})
}

// TestScale checks that editing spec.replicas, and scaling through the scale subresource as a
// HorizontalPodAutoscaler does, resizes the pool, and that a scale-down deletes members that are
// not Ready first, then the newest.
func TestScale(t *testing.T) {
	t.Parallel()
	ns := startController(t, nil)
	k := env.StartKubelet(t, ns)
	pool := createFullPool(t, ns, testutil.MakePool("pool", ns, "tpl").Replicas(2))
	oldest := members(t, ns, pool)
	// Creation timestamps have a resolution of a second: let the next members be visibly newer.
	framework.Eventually(t, func() (bool, string) {
		return time.Now().After(oldest[1].CreationTimestamp.Add(time.Second)), "waiting for the next second"
	})

	t.Log("Scale up to 4 through spec.replicas; the new members stay Pending")
	k.SetFate(func(*corev1.Pod) framework.Fate { return framework.LeavePending })
	framework.Update(t, env, pool, func(p *extv1beta1.SandboxWarmPool) { p.Spec.Replicas = ptr.To(int32(4)) })
	waitForPool(t, ns, "pool", poolState{Replicas: 4, Ready: 2, Updated: 4,
		ReadyReason: extv1beta1.WarmPoolReasonReplicasNotReady, ProgressReason: extv1beta1.WarmPoolReasonReplicasUpdating})

	t.Log("Scale down to 3 through the scale subresource: a Pending member goes")
	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(t.Context(), pool, scale); err != nil {
		t.Fatalf("Reading the scale subresource: %v", err)
	}
	if scale.Status.Replicas != 4 || scale.Status.Selector != "agents.x-k8s.io/warm-pool-sandbox=91dd7983" || scale.Spec.Replicas != 4 {
		t.Errorf("Scale %+v; want spec.replicas 4, status.replicas 4 and the pool's selector", scale)
	}
	scale.Spec.Replicas = 3
	if err := env.Client.SubResource("scale").Update(t.Context(), pool, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("Scaling through the scale subresource: %v", err)
	}
	waitForPool(t, ns, "pool", poolState{Replicas: 3, Ready: 2, Updated: 3,
		ReadyReason: extv1beta1.WarmPoolReasonReplicasNotReady, ProgressReason: extv1beta1.WarmPoolReasonReplicasUpdating})
	if got := framework.Read[extv1beta1.SandboxWarmPool](t, env, ns, "pool").Spec.Replicas; *got != 3 {
		t.Errorf("spec.replicas = %d after scaling to 3", *got)
	}

	t.Log("The Pending member becomes Ready; scale down to 1: the newer Ready members go first")
	k.SetFate(func(*corev1.Pod) framework.Fate { return framework.RunReady })
	waitForPool(t, ns, "pool", full(3))
	scale = &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(t.Context(), pool, scale); err != nil {
		t.Fatalf("Reading the scale subresource: %v", err)
	}
	scale.Spec.Replicas = 1
	if err := env.Client.SubResource("scale").Update(t.Context(), pool, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("Scaling through the scale subresource: %v", err)
	}
	pool = waitForPool(t, ns, "pool", full(1))
	left := members(t, ns, pool)
	if len(left) != 1 || !slices.Contains(uids(oldest), left[0].UID) {
		t.Errorf("Members left after scaling to 1: %v; want one of the first two, %v", uids(left), uids(oldest))
	}

	t.Log("Scale to 0")
	framework.Update(t, env, pool, func(p *extv1beta1.SandboxWarmPool) { p.Spec.Replicas = ptr.To(int32(0)) })
	waitForPool(t, ns, "pool", full(0))
}

func getTemplate(t *testing.T, ns, name string) *extv1beta1.SandboxTemplate {
	t.Helper()
	tpl := &extv1beta1.SandboxTemplate{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, tpl); err != nil {
		t.Fatalf("Reading SandboxTemplate %s: %v", name, err)
	}
	return tpl
}
