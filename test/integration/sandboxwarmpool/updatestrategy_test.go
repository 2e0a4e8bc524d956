package sandboxwarmpool

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/blueprint"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

const newImage = "registry.invalid/busybox:2"

// changeImage changes the image of the template's first container, which makes every member stale.
func changeImage(t *testing.T, ns, name, image string) string {
	t.Helper()
	tpl := &extv1beta1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	framework.Update(t, env, tpl, func(tpl *extv1beta1.SandboxTemplate) { tpl.Spec.PodTemplate.Spec.Containers[0].Image = image })
	bp := blueprint.FromTemplate(tpl)
	return blueprint.Hash(&bp)
}

func image(sb *sandboxv1beta1.Sandbox) string { return sb.Spec.PodTemplate.Spec.Containers[0].Image }

// waitForRollout waits until the API server shows n Ready members of pool, all built from the
// blueprint with staleness hash, and then for the pool's status to say so (the status alone
// cannot tell whether the pool has seen the template change yet).
func waitForRollout(t *testing.T, ns string, pool *extv1beta1.SandboxWarmPool, hash string, n int32) *extv1beta1.SandboxWarmPool {
	t.Helper()
	framework.Eventually(t, func() (bool, string) {
		ms := members(t, ns, pool)
		updated, ready := 0, 0
		for i := range ms {
			if ms[i].Labels[sandboxv1beta1.SandboxTemplateHashLabel] == hash {
				updated++
			}
			if isReady(&ms[i]) {
				ready++
			}
		}
		return len(ms) == int(n) && updated == int(n) && ready == int(n),
			fmt.Sprintf("pool %s has %d members, %d ready, %d with hash %s; want %d of each", pool.Name, len(ms), ready, updated, hash, n)
	})
	return waitForPool(t, ns, pool.Name, full(n))
}

// TestOnReplenish checks that a template change leaves the members of an OnReplenish pool alone,
// and that their replacements are built from the new template.
func TestOnReplenish(t *testing.T) {
	t.Parallel()
	ns := startController(t, nil)
	env.StartKubelet(t, ns)
	pool := createFullPool(t, ns, testutil.MakePool("pool", ns, "tpl").Replicas(2))
	before := members(t, ns, pool)

	hash := changeImage(t, ns, "tpl", newImage)
	pool = waitForPool(t, ns, "pool", poolState{Replicas: 2, Ready: 2, Updated: 0,
		ReadyReason: extv1beta1.WarmPoolReasonReplicasReady, ProgressReason: extv1beta1.WarmPoolReasonReplicasUpToDate})
	framework.Consistently(t, quiet, func() (bool, string) {
		got := uids(members(t, ns, pool))
		return slices.Equal(got, uids(before)), fmt.Sprintf("members %v; want the stale ones kept, %v", got, uids(before))
	})

	bindFresh(t, before[0])
	waitForPool(t, ns, "pool", poolState{Replicas: 2, Ready: 2, Updated: 1,
		ReadyReason: extv1beta1.WarmPoolReasonReplicasReady, ProgressReason: extv1beta1.WarmPoolReasonReplicasUpToDate})
	for _, sb := range members(t, ns, pool) {
		switch {
		case sb.UID == before[1].UID:
		case sb.Labels[sandboxv1beta1.SandboxTemplateHashLabel] != hash || image(&sb) != newImage:
			t.Errorf("Replacement %s has hash %s and image %s; want %s and %s", sb.Name,
				sb.Labels[sandboxv1beta1.SandboxTemplateHashLabel], image(&sb), hash, newImage)
		}
	}
}

// TestRecreate checks that a template change replaces every member of a Recreate pool at once,
// and that a change of the template's metadata alone replaces none.
func TestRecreate(t *testing.T) {
	t.Parallel()
	ns := startController(t, nil)
	env.StartKubelet(t, ns)
	pool := createFullPool(t, ns, testutil.MakePool("pool", ns, "tpl").Replicas(3).Strategy(extv1beta1.WarmPoolUpdateStrategyRecreate))
	before := members(t, ns, pool)

	t.Log("Labels of the pod template and of the template change: no member is stale")
	framework.Update(t, env, &extv1beta1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tpl"}}, func(tpl *extv1beta1.SandboxTemplate) {
		tpl.Labels = map[string]string{"team": "b"}
		tpl.Spec.PodTemplate.Metadata.Labels = map[string]string{"app": "agent"}
	})
	framework.Consistently(t, quiet, func() (bool, string) {
		got := uids(members(t, ns, pool))
		return slices.Equal(got, uids(before)), fmt.Sprintf("members %v after a metadata change; want %v", got, uids(before))
	})

	t.Log("The image changes: every member is replaced")
	hash := changeImage(t, ns, "tpl", newImage)
	pool = waitForRollout(t, ns, pool, hash, 3)
	after := members(t, ns, pool)
	for _, sb := range after {
		if slices.Contains(uids(before), sb.UID) || sb.Labels[sandboxv1beta1.SandboxTemplateHashLabel] != hash || image(&sb) != newImage {
			t.Errorf("Member %s (hash %s, image %s) after the change; want only new members with hash %s and image %s",
				sb.Name, sb.Labels[sandboxv1beta1.SandboxTemplateHashLabel], image(&sb), hash, newImage)
		}
	}
	env.WaitForEvent(t, ns, "SandboxWarmPool", "pool", corev1.EventTypeNormal, "DeletedStaleMembers", "updateStrategy Recreate")
}

// TestRollingUpdate changes the template of a RollingUpdate pool and checks, after every change
// the API server records, that the pool never has more than replicas + maxSurge members nor fewer
// than replicas - maxUnavailable Ready ones, and that it ends with every member rebuilt.
func TestRollingUpdate(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		maxSurge, maxUnavailable intstr.IntOrString
		surge, unavailable       int // resolved against replicas
	}{
		"surge only":       {intstr.FromInt32(1), intstr.FromInt32(0), 1, 0},
		"unavailable only": {intstr.FromInt32(0), intstr.FromInt32(2), 0, 2},
		"percentages (25% of 5: 2 surge, 1 unavailable)": {intstr.FromString("25%"), intstr.FromString("25%"), 2, 1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const replicas = 5
			ns := startController(t, nil)
			env.StartKubelet(t, ns)
			pool := createFullPool(t, ns, testutil.MakePool("pool", ns, "tpl").Replicas(replicas).RollingUpdate(&tc.maxSurge, &tc.maxUnavailable))
			before := members(t, ns, pool)

			w := watchSandboxes(t, ns)
			poolUID := pool.UID
			w.setCheck(func(sbs []*sandboxv1beta1.Sandbox) string {
				total, ready := memberCounts(sbs, poolUID)
				if total > replicas+tc.surge || ready < replicas-tc.unavailable {
					return fmt.Sprintf("the pool has %d members, %d Ready; want at most %d and at least %d Ready,",
						total, ready, replicas+tc.surge, replicas-tc.unavailable)
				}
				return ""
			})
			hash := changeImage(t, ns, "tpl", newImage)
			pool = waitForRollout(t, ns, pool, hash, replicas)
			w.verify(t)
			for _, sb := range members(t, ns, pool) {
				if slices.Contains(uids(before), sb.UID) || sb.Labels[sandboxv1beta1.SandboxTemplateHashLabel] != hash {
					t.Errorf("Member %s (hash %s) after the rollout; want only new members with hash %s",
						sb.Name, sb.Labels[sandboxv1beta1.SandboxTemplateHashLabel], hash)
				}
			}
			if got := w.addedCount(); got != replicas {
				t.Errorf("%d members created by the rollout; want %d", got, replicas)
			}
		})
	}
}

// TestProgressDeadline checks that a rollout whose new members never get Ready turns Progressing
// False/ProgressDeadlineExceeded after progressDeadlineSeconds, with a Warning event, while the
// stale members keep the pool available; and that it resumes once the new members start.
func TestProgressDeadline(t *testing.T) {
	t.Parallel()
	ns := startController(t, nil)
	k := env.StartKubelet(t, ns)
	k.SetFate(framework.ImageFate(newImage, framework.LeavePending))
	env.Create(t, testutil.MakeTemplate("tpl", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakePool("pool", ns, "tpl").Replicas(2).ProgressDeadlineSeconds(2).
		RollingUpdate(ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(0))).Obj())
	waitForPool(t, ns, "pool", full(2))

	changeImage(t, ns, "tpl", newImage)
	pool := waitForPool(t, ns, "pool", poolState{Replicas: 3, Ready: 2, Updated: 1,
		ReadyReason: extv1beta1.WarmPoolReasonReplicasReady, ProgressReason: extv1beta1.WarmPoolReasonProgressDeadlineExceeded})
	if c := condition(t, pool, extv1beta1.WarmPoolConditionProgressing); c.Status != metav1.ConditionFalse {
		t.Errorf("Progressing condition %+v; want False", c)
	}
	env.WaitForEvent(t, ns, "SandboxWarmPool", "pool", corev1.EventTypeWarning, "ProgressDeadlineExceeded", "made no progress for 2s")

	k.SetFate(func(*corev1.Pod) framework.Fate { return framework.RunReady })
	waitForPool(t, ns, "pool", full(2))
}
