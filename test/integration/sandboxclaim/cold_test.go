package sandboxclaim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

func TestColdClaimFromATemplate(t *testing.T) {
	ns := startController(t)
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakeClaim("c1", ns).Template("python").PodLabel("sandbox.users.io/user", "u1").Obj())
	claim := waitReady(t, ns, "c1")

	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, "c1")
	if ok, desc := isBoundTo(sb, claim); !ok {
		t.Error(desc)
	}
	wantLabels := map[string]string{
		sandboxv1beta1.ClaimUIDLabel:               string(claim.UID),
		sandboxv1beta1.LaunchTypeLabel:             "cold",
		sandboxv1beta1.SandboxTemplateRefHashLabel: sandboxv1beta1.NameHash("python"),
		sandboxv1beta1.CreatedByLabel:              "controller",
	}
	if diff := cmp.Diff(wantLabels, sb.Labels); diff != "" {
		t.Errorf("Sandbox labels mismatch (-want +got):\n%s", diff)
	}
	if sb.Annotations[sandboxv1beta1.SandboxTemplateRefAnnotation] != "python" {
		t.Errorf("Sandbox annotations = %v; want sandbox-template-ref=python", sb.Annotations)
	}
	if !ptr.Equal(sb.Spec.PodTemplate.Spec.AutomountServiceAccountToken, ptr.To(false)) ||
		sb.Spec.PodTemplate.Metadata.Labels["sandbox.users.io/user"] != "u1" || sb.Spec.ShutdownTime != nil {
		t.Errorf("Sandbox spec = %+v; want the template's with automountServiceAccountToken false, the claim's label and no shutdown time", sb.Spec)
	}
	if len(claim.Status.Sandbox.PodIPs) != 1 || claim.Status.Sandbox.PodIPs[0] != framework.Read[corev1.Pod](t, env, ns, "c1").Status.PodIP {
		t.Errorf("Claim podIPs = %v; want the Pod's IP", claim.Status.Sandbox.PodIPs)
	}
	env.WaitForEvent(t, ns, "SandboxClaim", "c1", corev1.EventTypeNormal, "SandboxProvisioned", "c1")
}

func TestClaimWaitsForItsPoolOrTemplate(t *testing.T) {
	cases := map[string]struct {
		claim      func(ns string) *extv1beta1.SandboxClaim
		wantReason string
		// create makes what was missing.
		create func(t *testing.T, ns string)
	}{
		"a missing pool": {
			claim:      func(ns string) *extv1beta1.SandboxClaim { return testutil.MakeClaim("c1", ns).WarmPool("later").Obj() },
			wantReason: extv1beta1.ClaimReasonWarmPoolNotFound,
			create: func(t *testing.T, ns string) {
				env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
				env.Create(t, testutil.MakePool("later", ns, "python").Replicas(1).Obj())
			},
		},
		"a missing template": {
			claim:      func(ns string) *extv1beta1.SandboxClaim { return testutil.MakeClaim("c1", ns).Template("later").Obj() },
			wantReason: extv1beta1.ClaimReasonTemplateNotFound,
			create:     func(t *testing.T, ns string) { env.Create(t, testutil.MakeTemplate("later", ns).Unmanaged().Obj()) },
		},
		"a pool whose template is missing": {
			claim:      func(ns string) *extv1beta1.SandboxClaim { return testutil.MakeClaim("c1", ns).WarmPool("pool").Obj() },
			wantReason: extv1beta1.ClaimReasonTemplateNotFound,
			create:     func(t *testing.T, ns string) { env.Create(t, testutil.MakeTemplate("later", ns).Unmanaged().Obj()) },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := startController(t)
			if name == "a pool whose template is missing" {
				env.Create(t, testutil.MakePool("pool", ns, "later").Replicas(0).Obj())
			}
			env.Create(t, tc.claim(ns))
			c := waitNotReady(t, ns, "c1", tc.wantReason)
			if r := readyCondition(c); r.Message == "" {
				t.Errorf("Ready = %+v; want a message", r)
			}
			noSandboxNamed(t, ns, "c1")
			tc.create(t, ns)
			waitReady(t, ns, "c1")
		})
	}
}

func TestEnvVarsInjectionPolicy(t *testing.T) {
	cases := map[string]struct {
		policy     extv1beta1.EnvVarsInjectionPolicy
		env        [][3]string // name, value, container
		wantReason string
		wantEnv    []corev1.EnvVar // of the first container
	}{
		"Disallowed rejects the claim": {
			policy: extv1beta1.EnvVarsInjectionPolicyDisallowed, env: [][3]string{{"TOKEN", "x", ""}},
			wantReason: extv1beta1.ClaimReasonEnvVarsInjectionRejected,
		},
		"Allowed adds a variable": {
			policy: extv1beta1.EnvVarsInjectionPolicyAllowed, env: [][3]string{{"TOKEN", "x", ""}},
			wantEnv: []corev1.EnvVar{{Name: "MODE", Value: "prod"}, {Name: "TOKEN", Value: "x"}},
		},
		"Allowed refuses to replace the template's variable": {
			policy: extv1beta1.EnvVarsInjectionPolicyAllowed, env: [][3]string{{"MODE", "dev", ""}},
			wantReason: extv1beta1.ClaimReasonEnvVarsInjectionRejected,
		},
		"Overrides replaces the template's variable": {
			policy: extv1beta1.EnvVarsInjectionPolicyOverrides, env: [][3]string{{"MODE", "dev", testutil.DefaultContainer}},
			wantEnv: []corev1.EnvVar{{Name: "MODE", Value: "dev"}},
		},
		"a container the template does not have is rejected": {
			policy: extv1beta1.EnvVarsInjectionPolicyOverrides, env: [][3]string{{"TOKEN", "x", "nope"}},
			wantReason: extv1beta1.ClaimReasonEnvVarsInjectionRejected,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := startController(t)
			env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().EnvVarsInjectionPolicy(tc.policy).Env("MODE", "prod").Obj())
			// A pool with a ready member: a claim with env starts cold all the same.
			env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(1).Obj())
			waitForPoolReady(t, ns, "pool", 1)
			w := testutil.MakeClaim("c1", ns).WarmPool("pool")
			for _, e := range tc.env {
				w.Env(e[0], e[1], e[2])
			}
			env.Create(t, w.Obj())
			if tc.wantReason != "" {
				waitNotReady(t, ns, "c1", tc.wantReason)
				noSandboxNamed(t, ns, "c1")
				return
			}
			claim := waitReady(t, ns, "c1")
			if claim.Status.Sandbox.Name != "c1" {
				t.Fatalf("Claim sandbox = %q; want the cold Sandbox c1", claim.Status.Sandbox.Name)
			}
			if diff := cmp.Diff(tc.wantEnv, framework.Read[sandboxv1beta1.Sandbox](t, env, ns, "c1").Spec.PodTemplate.Spec.Containers[0].Env); diff != "" {
				t.Errorf("Sandbox env mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVolumeClaimTemplatesPolicy(t *testing.T) {
	cases := map[string]struct {
		policy     extv1beta1.VolumeClaimTemplatesPolicy
		claimVCTs  [][2]string // name, size
		wantReason string
		want       []sandboxv1beta1.PersistentVolumeClaimTemplate
	}{
		"Disallowed rejects the claim": {
			policy: extv1beta1.VolumeClaimTemplatesPolicyDisallowed, claimVCTs: [][2]string{{"cache", "2Gi"}},
			wantReason: extv1beta1.ClaimReasonVolumeClaimTemplatesError,
		},
		"Allowed appends a new one": {
			policy: extv1beta1.VolumeClaimTemplatesPolicyAllowed, claimVCTs: [][2]string{{"cache", "2Gi"}},
			want: []sandboxv1beta1.PersistentVolumeClaimTemplate{
				testutil.MakeVolumeClaimTemplate("workspace", "1Gi"), testutil.MakeVolumeClaimTemplate("cache", "2Gi"),
			},
		},
		"Allowed refuses to replace the template's": {
			policy: extv1beta1.VolumeClaimTemplatesPolicyAllowed, claimVCTs: [][2]string{{"workspace", "5Gi"}},
			wantReason: extv1beta1.ClaimReasonVolumeClaimTemplatesError,
		},
		"Overrides replaces the template's by name": {
			policy: extv1beta1.VolumeClaimTemplatesPolicyOverrides, claimVCTs: [][2]string{{"workspace", "5Gi"}},
			want: []sandboxv1beta1.PersistentVolumeClaimTemplate{testutil.MakeVolumeClaimTemplate("workspace", "5Gi")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := startController(t)
			env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().VolumeClaimTemplatesPolicy(tc.policy).VolumeClaimTemplate("workspace", "1Gi").Obj())
			w := testutil.MakeClaim("c1", ns).Template("python")
			for _, v := range tc.claimVCTs {
				w.VolumeClaimTemplate(v[0], v[1])
			}
			env.Create(t, w.Obj())
			if tc.wantReason != "" {
				waitNotReady(t, ns, "c1", tc.wantReason)
				noSandboxNamed(t, ns, "c1")
				return
			}
			waitReady(t, ns, "c1")
			got := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, "c1").Spec.VolumeClaimTemplates
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b sandboxv1beta1.PersistentVolumeClaimTemplate) bool {
				return a.Metadata.Name == b.Metadata.Name && a.Spec.Resources.Requests.Storage().Equal(*b.Spec.Resources.Requests.Storage())
			})); diff != "" {
				t.Errorf("Sandbox volumeClaimTemplates mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvalidMetadata(t *testing.T) {
	cases := map[string]struct {
		claim       func(*testutil.ClaimWrapper) *testutil.ClaimWrapper
		wantMessage string
	}{
		"a label outside the allowed domains": {
			claim:       func(w *testutil.ClaimWrapper) *testutil.ClaimWrapper { return w.PodLabel("example.com/team", "b") },
			wantMessage: "additionalPodMetadata.labels key example.com/team is not in a label domain allowed for SandboxTemplate python (allowed: sandbox.users.io)",
		},
		"a label the template sets to another value": {
			claim:       func(w *testutil.ClaimWrapper) *testutil.ClaimWrapper { return w.PodLabel("sandbox.users.io/team", "b") },
			wantMessage: `additionalPodMetadata.labels key sandbox.users.io/team=b would override the value "a" that SandboxTemplate python sets`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := startController(t)
			env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().PodLabel("sandbox.users.io/team", "a").Obj())
			env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(1).Obj())
			waitForPoolReady(t, ns, "pool", 1)
			env.Create(t, tc.claim(testutil.MakeClaim("c1", ns).WarmPool("pool")).Obj())
			c := waitNotReady(t, ns, "c1", extv1beta1.ClaimReasonInvalidMetadata)
			if r := readyCondition(c); !strings.Contains(r.Message, tc.wantMessage) {
				t.Errorf("Ready message = %q; want it to contain %q", r.Message, tc.wantMessage)
			}
			// Neither a member nor a cold sandbox is taken.
			framework.Consistently(t, quiet, func() (bool, string) {
				members, err := poolMembers(t, ns, "pool")
				if err != nil {
					return false, err.Error()
				}
				found, err := env.Get(t, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"}})
				return err == nil && !found && len(members) == 1, fmt.Sprintf("pool members %d, cold sandbox %t, err %v", len(members), found, err)
			})
		})
	}
}

func TestAdoptionConflict(t *testing.T) {
	ns := startController(t)
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakeSandbox("c1", ns).Label("team", "other").Obj())
	env.Create(t, testutil.MakeClaim("c1", ns).Template("python").Obj())
	c := waitNotReady(t, ns, "c1", extv1beta1.ClaimReasonAdoptionConflict)
	if r := readyCondition(c); !strings.Contains(r.Message, "Sandbox c1 already exists") {
		t.Errorf("Ready message = %q; want it to name the conflicting Sandbox", r.Message)
	}
	framework.Consistently(t, quiet, func() (bool, string) {
		sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, "c1")
		_, claimed := sb.Labels[sandboxv1beta1.ClaimUIDLabel]
		return len(sb.OwnerReferences) == 0 && !claimed && sb.Labels["team"] == "other",
			fmt.Sprintf("foreign Sandbox c1: owner references %v, labels %v", sb.OwnerReferences, sb.Labels)
	})
	if c := framework.Read[extv1beta1.SandboxClaim](t, env, ns, "c1"); c.Status.Sandbox.Name != "" {
		t.Errorf("Claim sandbox = %q; want none", c.Status.Sandbox.Name)
	}
}
