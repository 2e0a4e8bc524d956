package sandboxclaim

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// The attacks of issue #15 on what a claim adds to its sandbox: an annotation that a CNI plugin, a
// service mesh or the container runtime acts on, and a volume claim template that reads another
// user's data or lands on a storage class the template's owner did not choose.

// dangerousAnnotations are annotations a claim must not put on its Pod unless its template allows
// their domain: a multus network attachment and an Istio sidecar opt-out.
var dangerousAnnotations = map[string]string{
	"k8s.v1.cni.cncf.io/networks": "other-team/secret-net",
	"sidecar.istio.io/inject":     "false",
}

func TestClaimAnnotationOutsideTheAllowedDomainsNeverReachesThePod(t *testing.T) {
	cases := map[string]struct {
		warm bool
	}{
		"cold": {},
		"warm": {warm: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := startController(t)
			env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
			claim := testutil.MakeClaim("c1", ns).Template("python")
			if tc.warm {
				env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(1).Obj())
				waitForPoolReady(t, ns, "pool", 1)
				claim = testutil.MakeClaim("c1", ns).WarmPool("pool")
			}
			for k, v := range dangerousAnnotations {
				claim.PodAnnotation(k, v)
			}
			env.Create(t, claim.Obj())

			c := waitNotReady(t, ns, "c1", extv1beta1.ClaimReasonInvalidMetadata)
			msg := readyCondition(c).Message
			for _, want := range []string{"k8s.v1.cni.cncf.io/networks", "SandboxTemplate python", "spec.claimPolicy.allowedAnnotationDomains"} {
				if !strings.Contains(msg, want) {
					t.Errorf("Ready message %q does not name %q", msg, want)
				}
			}
			if c.Status.Sandbox.Name != "" {
				t.Errorf("Claim status names Sandbox %q; want none", c.Status.Sandbox.Name)
			}
			noSandboxNamed(t, ns, "c1")
			framework.Consistently(t, quiet, func() (bool, string) { return noPodAnnotated(t, ns) })
		})
	}
}

func TestClaimAnnotationTheTemplateAllowsReachesThePod(t *testing.T) {
	ns := startController(t)
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().
		ClaimPolicy(extv1beta1.ClaimPolicy{AllowedAnnotationDomains: []string{"istio.io"}}).Obj())
	env.Create(t, testutil.MakeClaim("c1", ns).Template("python").PodAnnotation("sidecar.istio.io/inject", "false").
		PodAnnotation("sandbox.users.io/note", "hi").Obj())
	waitReady(t, ns, "c1")
	framework.Eventually(t, func() (bool, string) {
		pod := framework.Read[corev1.Pod](t, env, ns, "c1")
		return pod.Annotations["sidecar.istio.io/inject"] == "false" && pod.Annotations["sandbox.users.io/note"] == "hi",
			fmt.Sprintf("Pod c1 annotations %v; want sidecar.istio.io/inject=false (allowed by the template) and sandbox.users.io/note=hi (allowed by the controller)", pod.Annotations)
	})
}

// TestClaimAnnotationWithoutADomainReachesThePod is the regression of agent-sandbox v1.0.13's own
// SDK: it names its claims' annotations without a domain (owner, note), keys that are the end
// user's, so they reach the Pod, warm and cold, with no claimPolicy; a runtime's dotted key without
// a slash (CRI-O's) is still refused.
func TestClaimAnnotationWithoutADomainReachesThePod(t *testing.T) {
	for name, warm := range map[string]bool{"cold": false, "warm": true} {
		t.Run(name, func(t *testing.T) {
			ns := startController(t)
			env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
			claim := testutil.MakeClaim("c1", ns).Template("python")
			if warm {
				env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(1).Obj())
				waitForPoolReady(t, ns, "pool", 1)
				claim = testutil.MakeClaim("c1", ns).WarmPool("pool")
			}
			env.Create(t, claim.PodAnnotation("owner", "alice").PodAnnotation("note", "run 7").Obj())
			c := waitReady(t, ns, "c1")
			framework.Eventually(t, func() (bool, string) {
				pod := framework.Read[corev1.Pod](t, env, ns, c.Status.Sandbox.Name)
				return pod.Annotations["owner"] == "alice" && pod.Annotations["note"] == "run 7",
					fmt.Sprintf("Pod %s annotations %v; want owner=alice and note=run 7", pod.Name, pod.Annotations)
			})

			env.Create(t, testutil.MakeClaim("c2", ns).Template("python").PodAnnotation("io.kubernetes.cri-o.userns-mode", "auto").Obj())
			msg := readyCondition(waitNotReady(t, ns, "c2", extv1beta1.ClaimReasonInvalidMetadata)).Message
			if !strings.Contains(msg, "io.kubernetes.cri-o.userns-mode") {
				t.Errorf("Ready message %q does not name the refused key io.kubernetes.cri-o.userns-mode", msg)
			}
		})
	}
}

// noPodAnnotated reports whether no Pod, and no Sandbox's pod template, of ns carries one of
// dangerousAnnotations.
func noPodAnnotated(t *testing.T, ns string) (bool, string) {
	pods := &corev1.PodList{}
	if err := env.Client.List(t.Context(), pods, client.InNamespace(ns)); err != nil {
		return false, err.Error()
	}
	for _, p := range pods.Items {
		for k := range dangerousAnnotations {
			if _, ok := p.Annotations[k]; ok {
				return false, fmt.Sprintf("Pod %s has annotation %s: %v", p.Name, k, p.Annotations)
			}
		}
	}
	sbs, err := sandboxes(t, ns)
	if err != nil {
		return false, err.Error()
	}
	for _, sb := range sbs {
		for k := range dangerousAnnotations {
			if _, ok := sb.Spec.PodTemplate.Metadata.Annotations[k]; ok {
				return false, fmt.Sprintf("Sandbox %s's pod template has annotation %s", sb.Name, k)
			}
		}
	}
	return true, ""
}

func TestClaimVolumeReadingOtherDataIsRefusedAtAdmission(t *testing.T) {
	ns := startController(t)
	// Another user's data, in the same namespace.
	env.Create(t, testutil.MakePVC("victim-data", ns).Obj())
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().VolumeClaimTemplatesPolicy(extv1beta1.VolumeClaimTemplatesPolicyAllowed).Obj())
	snapshotGroup := "snapshot.storage.k8s.io"
	cases := map[string]struct {
		mutate    func(*corev1.PersistentVolumeClaimSpec)
		wantField string
	}{
		"dataSourceRef to another user's PVC": {
			mutate: func(s *corev1.PersistentVolumeClaimSpec) {
				s.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "victim-data"}
			},
			wantField: "spec.dataSourceRef",
		},
		"dataSource from another user's VolumeSnapshot": {
			mutate: func(s *corev1.PersistentVolumeClaimSpec) {
				s.DataSource = &corev1.TypedLocalObjectReference{APIGroup: &snapshotGroup, Kind: "VolumeSnapshot", Name: "victim-snap"}
			},
			wantField: "spec.dataSource",
		},
		"volumeName of a free PersistentVolume": {
			mutate:    func(s *corev1.PersistentVolumeClaimSpec) { s.VolumeName = "pv-of-another-team" },
			wantField: "spec.volumeName",
		},
		"selector of PersistentVolumes": {
			mutate: func(s *corev1.PersistentVolumeClaimSpec) {
				s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "other"}}
			},
			wantField: "spec.selector",
		},
		"volumeAttributesClassName": {
			mutate:    func(s *corev1.PersistentVolumeClaimSpec) { s.VolumeAttributesClassName = ptr.To("gold") },
			wantField: "spec.volumeAttributesClassName",
		},
	}
	i := 0
	for name, tc := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			claim := testutil.MakeClaim(fmt.Sprintf("c%d", i), ns).Template("python").VolumeClaimTemplateWith("stolen", "1Gi", tc.mutate).Obj()
			err := env.Client.Create(t.Context(), claim)
			if err == nil {
				t.Fatalf("Creating claim %s with a volume claim template setting %s succeeded; want it refused at admission", claim.Name, tc.wantField)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.volumeClaimTemplates") ||
				!strings.Contains(err.Error(), "volumeClaimTemplates[]."+tc.wantField+" must not be set in a claim") {
				t.Errorf("Creating claim %s: %v; want an Invalid error naming spec.volumeClaimTemplates and %s", claim.Name, err, tc.wantField)
			}
		})
	}
	// Nothing was created from the victim's data.
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := env.Client.List(t.Context(), pvcs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(pvcs.Items) != 1 {
		t.Errorf("Namespace has %d PVCs; want only victim-data", len(pvcs.Items))
	}
}

func TestClaimStorageClassIsBoundedByTheTemplate(t *testing.T) {
	class := func(name string) func(*corev1.PersistentVolumeClaimSpec) {
		return func(s *corev1.PersistentVolumeClaimSpec) { s.StorageClassName = ptr.To(name) }
	}
	cases := map[string]struct {
		mutate      func(*corev1.PersistentVolumeClaimSpec)
		policy      *extv1beta1.ClaimPolicy // the template's claimPolicy
		wantRefused string                  // the class the message names; empty: accepted
	}{
		"a class the template lists": {
			mutate: class("premium-rwx"), policy: &extv1beta1.ClaimPolicy{AllowedStorageClassNames: []string{"premium-rwx"}},
		},
		"a class the template used, when its list names others": {
			mutate: class("standard"), policy: &extv1beta1.ClaimPolicy{AllowedStorageClassNames: []string{"premium-rwx"}}, wantRefused: `"standard"`,
		},
		"a class the template does not use":                {mutate: class("premium-rwx"), wantRefused: `"premium-rwx"`},
		"no class, to bind a free static PersistentVolume": {mutate: class(""), wantRefused: `""`},
		"the class the template uses":                      {mutate: class("standard")},
		"the cluster's default class":                      {mutate: func(*corev1.PersistentVolumeClaimSpec) {}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := startController(t)
			tpl := testutil.MakeTemplate("python", ns).Unmanaged().VolumeClaimTemplatesPolicy(extv1beta1.VolumeClaimTemplatesPolicyAllowed).
				VolumeClaimTemplateWith("workspace", "1Gi", class("standard"))
			if tc.policy != nil {
				tpl.ClaimPolicy(*tc.policy)
			}
			env.Create(t, tpl.Obj())
			env.Create(t, testutil.MakeClaim("c1", ns).Template("python").VolumeClaimTemplateWith("cache", "1Gi", tc.mutate).Obj())
			if tc.wantRefused == "" {
				waitForClaim(t, ns, "c1", func(c *extv1beta1.SandboxClaim) bool { return c.Status.Sandbox.Name == "c1" })
				return
			}
			c := waitNotReady(t, ns, "c1", extv1beta1.ClaimReasonVolumeClaimTemplatesError)
			msg := readyCondition(c).Message
			for _, want := range []string{"volumeClaimTemplate cache", tc.wantRefused, "SandboxTemplate python", "spec.claimPolicy.allowedStorageClassNames"} {
				if !strings.Contains(msg, want) {
					t.Errorf("Ready message %q does not name %s", msg, want)
				}
			}
			noSandboxNamed(t, ns, "c1")
		})
	}
}
