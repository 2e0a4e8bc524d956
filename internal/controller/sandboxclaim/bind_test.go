package sandboxclaim

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/google/go-cmp/cmp"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

func TestBindPatch(t *testing.T) {
	// A pool member as pools built them before members' pod templates became the template's
	// own: the pool's label and safe-to-evict in it, which the bind removes.
	poolMember := func() *sandboxv1beta1.Sandbox {
		sb := member("python-pool-abcde", "42")
		sb.Labels = map[string]string{
			"agents.x-k8s.io/warm-pool-sandbox":         "11111111",
			"agents.x-k8s.io/sandbox-template-ref-hash": "22222222",
			"agents.x-k8s.io/launch-type":               "warm",
		}
		sb.Spec.PodTemplate.Metadata.Labels = map[string]string{
			"agents.x-k8s.io/warm-pool-sandbox":         "11111111",
			"agents.x-k8s.io/sandbox-template-ref-hash": "22222222",
		}
		sb.Spec.PodTemplate.Metadata.Annotations = map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}
		return sb
	}
	owner := map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim", "name": "my-claim", "uid": "claim-uid",
		"controller": true, "blockOwnerDeletion": true,
	}
	metadata := func(extra map[string]any) map[string]any {
		md := map[string]any{
			"resourceVersion": "42",
			"ownerReferences": []any{owner},
			"labels": map[string]any{
				"agents.x-k8s.io/warm-pool-sandbox": nil,
				"agents.x-k8s.io/claim-uid":         "claim-uid",
				"agents.x-k8s.io/launch-type":       "warm",
			},
		}
		for k, v := range extra {
			md[k] = v
		}
		return md
	}
	cases := map[string]struct {
		claim    *extv1beta1.SandboxClaim
		template *extv1beta1.SandboxTemplate
		want     map[string]any
	}{
		"a plain claim takes the member, drops the pool label and safe-to-evict": {
			claim:    makeClaim().Obj(),
			template: makeTemplate().Obj(),
			want: map[string]any{
				"metadata": metadata(nil),
				"spec": map[string]any{"podTemplate": map[string]any{"metadata": map[string]any{
					"labels":      map[string]any{"agents.x-k8s.io/warm-pool-sandbox": nil},
					"annotations": map[string]any{"cluster-autoscaler.kubernetes.io/safe-to-evict": nil},
				}}},
			},
		},
		"safe-to-evict stays when the template sets it; the claim's metadata and trace context are added": {
			claim: makeClaim().PodLabel("sandbox.users.io/user", "u1").PodAnnotation("example.com/note", "hi").
				Annotation("opentelemetry.io/trace-context", `{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`).Obj(),
			template: makeTemplate().PodAnnotation("cluster-autoscaler.kubernetes.io/safe-to-evict", "true").Obj(),
			want: map[string]any{
				"metadata": metadata(map[string]any{"annotations": map[string]any{
					"opentelemetry.io/trace-context": `{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`,
				}}),
				"spec": map[string]any{"podTemplate": map[string]any{"metadata": map[string]any{
					"labels":      map[string]any{"agents.x-k8s.io/warm-pool-sandbox": nil, "sandbox.users.io/user": "u1"},
					"annotations": map[string]any{"example.com/note": "hi"},
				}}},
			},
		},
		"a claim may set safe-to-evict itself": {
			claim:    makeClaim().PodAnnotation("cluster-autoscaler.kubernetes.io/safe-to-evict", "false").Obj(),
			template: makeTemplate().Obj(),
			want: map[string]any{
				"metadata": metadata(nil),
				"spec": map[string]any{"podTemplate": map[string]any{"metadata": map[string]any{
					"labels":      map[string]any{"agents.x-k8s.io/warm-pool-sandbox": nil},
					"annotations": map[string]any{"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"},
				}}},
			},
		},
		"the claim's idlePolicy goes into the same patch": {
			claim: func() *extv1beta1.SandboxClaim {
				c := makeClaim().Obj()
				c.Spec.IdlePolicy = &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: 10 * time.Minute}, Wake: sandboxv1beta1.WakePolicyManual}
				return c
			}(),
			template: makeTemplate().Obj(),
			want: map[string]any{
				"metadata": metadata(nil),
				"spec": map[string]any{
					"podTemplate": map[string]any{"metadata": map[string]any{
						"labels":      map[string]any{"agents.x-k8s.io/warm-pool-sandbox": nil},
						"annotations": map[string]any{"cluster-autoscaler.kubernetes.io/safe-to-evict": nil},
					}},
					"idlePolicy": map[string]any{"suspendAfter": "10m0s", "wake": "Manual"},
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got map[string]any
			if err := json.Unmarshal(bindPatch(poolMember(), tc.claim, tc.template), &got); err != nil {
				t.Fatalf("bindPatch() is not JSON: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("bindPatch() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBindPatchWithoutPoolPodMetadata(t *testing.T) {
	// A member as the pool builds it, whose pod template carries nothing of the pool's: a plain
	// claim binds it with metadata only, so its spec and generation stay as they are (no status
	// write for a new observedGeneration).
	var got map[string]any
	if err := json.Unmarshal(bindPatch(member("m", "7"), makeClaim().Obj(), makeTemplate().Obj()), &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got["spec"]; ok {
		t.Errorf("bindPatch() = %v; want no spec change", got)
	}
}
