package sandboxclaim

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

func TestComputeStatus(t *testing.T) {
	const sbName = "python-pool-abcde"
	ips := []string{"10.0.0.7"}
	sbReady := sbCond(sandboxv1beta1.SandboxConditionReady, metav1.ConditionTrue, "DependenciesReady", "Pod is Ready", testEarlier)
	sbNotReady := sbCond(sandboxv1beta1.SandboxConditionReady, metav1.ConditionFalse, "DependenciesNotReady", "Pod exists with phase: Pending", testEarlier)
	sbExpired := sbCond(sandboxv1beta1.SandboxConditionReady, metav1.ConditionFalse, "SandboxExpired", "Sandbox has expired", testEarlier)
	sbFinished := sbCond(sandboxv1beta1.SandboxConditionFinished, metav1.ConditionTrue, "PodSucceeded", "Pod completed successfully", testEarlier)
	expiredAt := time.Date(2026, 3, 1, 11, 30, 0, 0, time.UTC)

	claimReady := claimCond(extv1beta1.ClaimConditionReady, metav1.ConditionTrue, "DependenciesReady", "Pod is Ready", testNow)
	claimFinished := claimCond(extv1beta1.ClaimConditionFinished, metav1.ConditionTrue, "PodSucceeded", "Pod completed successfully", testEarlier)
	notReady := func(reason, msg string) metav1.Condition {
		return claimCond(extv1beta1.ClaimConditionReady, metav1.ConditionFalse, reason, msg, testNow)
	}
	status := func(name string, ips []string, conds ...metav1.Condition) extv1beta1.SandboxClaimStatus {
		return extv1beta1.SandboxClaimStatus{ObservedGeneration: testGeneration, Conditions: conds,
			Sandbox: extv1beta1.ClaimSandboxStatus{Name: name, PodIPs: ips}}
	}

	cases := map[string]struct {
		claim *extv1beta1.SandboxClaim
		obs   observed
		want  extv1beta1.SandboxClaimStatus
	}{
		"a ready sandbox makes the claim Ready with its reason, message, name and IPs": {
			claim: makeClaim().Obj(),
			obs:   observed{sandbox: sandboxWith(sbName, ips, sbReady)},
			want:  status(sbName, ips, claimReady),
		},
		"the sandbox's Service name is mirrored (agent-sandbox v1's status.sandbox.serviceFQDN)": {
			claim: makeClaim().Obj(),
			obs: observed{sandbox: func() *sandboxv1beta1.Sandbox {
				sb := sandboxWith(sbName, ips, sbReady)
				sb.Status.ServiceFQDN = sbName + ".ns.svc.cluster.local"
				return sb
			}()},
			want: func() extv1beta1.SandboxClaimStatus {
				st := status(sbName, ips, claimReady)
				st.Sandbox.ServiceFQDN = sbName + ".ns.svc.cluster.local"
				return st
			}(),
		},
		"a sandbox that is not ready is mirrored as it is": {
			claim: makeClaim().Obj(),
			obs:   observed{sandbox: sandboxWith(sbName, nil, sbNotReady)},
			want:  status(sbName, nil, notReady("DependenciesNotReady", "Pod exists with phase: Pending")),
		},
		"a sandbox without a Ready condition yet gives SandboxNotReady": {
			claim: makeClaim().Obj(),
			obs:   observed{sandbox: sandboxWith("my-claim", nil)},
			want:  status("my-claim", nil, notReady("SandboxNotReady", "Sandbox my-claim has not reported whether it is ready yet")),
		},
		"a sandbox that expired on its own gives SandboxExpired": {
			claim: makeClaim().Obj(),
			obs:   observed{sandbox: sandboxWith(sbName, nil, sbExpired)},
			want:  status(sbName, nil, notReady("SandboxExpired", "Sandbox has expired")),
		},
		"a finished sandbox's Finished condition is mirrored with its transition time": {
			claim: makeClaim().Obj(),
			obs: observed{sandbox: sandboxWith(sbName, nil, sbFinished,
				sbCond(sandboxv1beta1.SandboxConditionReady, metav1.ConditionFalse, "PodSucceeded", "Pod completed successfully", testEarlier))},
			want: status(sbName, nil, claimFinished, notReady("PodSucceeded", "Pod completed successfully")),
		},
		// agent-sandbox v1.0.13: the sandbox keeps Finished=True while suspended; the claim keeps
		// its time, from which ttlSecondsAfterFinished counts.
		"a suspended sandbox's Finished=True is kept with its time": {
			claim: makeClaim().Condition(claimFinished).Obj(),
			obs: observed{sandbox: sandboxWith(sbName, nil, sbFinished,
				sbCond(sandboxv1beta1.SandboxConditionReady, metav1.ConditionFalse, "SandboxSuspended", "Sandbox is suspended", testEarlier))},
			want: status(sbName, nil, claimFinished, notReady("SandboxSuspended", "Sandbox is suspended")),
		},
		"a resumed sandbox's Finished=False/NotFinished is mirrored with its time": {
			claim: makeClaim().Condition(claimFinished).Obj(),
			obs: observed{sandbox: sandboxWith(sbName, ips, sbReady, sbCond(sandboxv1beta1.SandboxConditionFinished,
				metav1.ConditionFalse, "NotFinished", "The sandbox's current Pod has not finished; an earlier Pod did", testNow))},
			want: status(sbName, ips, claimCond(extv1beta1.ClaimConditionFinished, metav1.ConditionFalse, "NotFinished",
				"The sandbox's current Pod has not finished; an earlier Pod did", testNow), claimReady),
		},
		"Finished goes when the sandbox no longer reports it": {
			claim: makeClaim().Condition(claimFinished).Obj(),
			obs:   observed{sandbox: sandboxWith(sbName, ips, sbReady)},
			want:  status(sbName, ips, claimReady),
		},
		"Ready keeps its transition time while its status does not change": {
			claim: makeClaim().Condition(claimCond("Ready", metav1.ConditionTrue, "DependenciesReady", "Pod is Ready; Service Exists", testEarlier)).Obj(),
			obs:   observed{sandbox: sandboxWith(sbName, ips, sbReady)},
			want:  status(sbName, ips, claimCond("Ready", metav1.ConditionTrue, "DependenciesReady", "Pod is Ready", testEarlier)),
		},
		"a missing template is reported with its claim reason": {
			claim: makeClaim().Obj(),
			obs:   observed{failure: fail("TemplateNotFound", "SandboxTemplate python not found")},
			want:  status("", nil, notReady("TemplateNotFound", "SandboxTemplate python not found")),
		},
		"a vanished sandbox loses its name and IPs, and keeps Finished": {
			claim: makeClaim().SandboxStatus(sbName, ips...).Condition(claimFinished).Obj(),
			obs:   observed{sandboxName: sbName, failure: fail("SandboxMissing", "gone")},
			want:  status("", nil, claimFinished, notReady("SandboxMissing", "gone")),
		},
		"an error is a ReconcilerError, even with a ready sandbox": {
			claim: makeClaim().Obj(),
			obs:   observed{sandbox: sandboxWith(sbName, ips, sbReady), err: errors.New("etcd is down")},
			want:  status(sbName, ips, notReady("ReconcilerError", "Error seen: etcd is down")),
		},
		"an expired claim under Retain says when, keeps the name and drops the IPs": {
			claim: makeClaim().SandboxStatus(sbName, ips...).Obj(),
			obs:   observed{sandbox: sandboxWith(sbName, ips, sbReady), expiredAt: &expiredAt},
			want: status(sbName, nil, notReady("ClaimExpired",
				"Claim expired at 2026-03-01T11:30:00Z; its sandbox was deleted (shutdownPolicy Retain)")),
		},
		"expiry beats a missing sandbox, whose name goes": {
			claim: makeClaim().SandboxStatus(sbName).Condition(claimFinished).Obj(),
			obs:   observed{sandboxName: sbName, failure: fail("SandboxMissing", "gone"), expiredAt: &expiredAt},
			want: status("", nil, claimFinished, notReady("ClaimExpired",
				"Claim expired at 2026-03-01T11:30:00Z; its sandbox was deleted (shutdownPolicy Retain)")),
		},
		"a claim waiting for the cache keeps its status as it is": {
			claim: makeClaim().Condition(claimCond("Ready", metav1.ConditionFalse, "SandboxNotReady", "x", testEarlier)).Obj(),
			obs:   observed{state: stateWaiting},
			want: extv1beta1.SandboxClaimStatus{Conditions: []metav1.Condition{
				claimCond("Ready", metav1.ConditionFalse, "SandboxNotReady", "x", testEarlier)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := computeStatus(tc.claim, &tc.obs, testNow)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("computeStatus() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
