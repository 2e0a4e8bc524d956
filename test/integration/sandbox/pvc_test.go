package sandbox

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandbox"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestVolumeClaimTemplates checks that each template becomes a claim <template>-<sandbox>, owned by
// the Sandbox and labelled as its template says, and that the Pod mounts it through a volume named
// like the template, replacing a same-named volume of the pod spec.
func TestVolumeClaimTemplates(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	const name = "disks"
	sbw := testutil.MakeSandbox(name, ns).VolumeClaimTemplate("data", "2Gi").VolumeClaimTemplate("cache", "1Gi").
		PodSpec(func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			}
			s.Containers[0].VolumeMounts = []corev1.VolumeMount{
				{Name: "data", MountPath: "/data"}, {Name: "cache", MountPath: "/cache"}, {Name: "scratch", MountPath: "/tmp"},
			}
		})
	sbw.Spec.VolumeClaimTemplates[0].Metadata.Labels = map[string]string{"tier": "fast"}
	sbw.Spec.VolumeClaimTemplates[0].Metadata.Annotations = map[string]string{"backup": "daily"}
	env.Create(t, sbw.Obj())
	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, name)

	for _, tc := range []struct {
		vct, size string
		labels    map[string]string
		annos     map[string]string
	}{
		{vct: "data", size: "2Gi", labels: map[string]string{"tier": "fast"}, annos: map[string]string{"backup": "daily"}},
		{vct: "cache", size: "1Gi"},
	} {
		pvcName := sandboxv1beta1.PVCName(tc.vct, name)
		if pvcName != tc.vct+"-"+name {
			t.Fatalf("PVCName(%q, %q) = %q; want <template>-<sandbox>", tc.vct, name, pvcName)
		}
		pvc := framework.WaitForObject(t, env, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pvcName}}, nil)
		if ok, msg := env.IsControlledBy(pvc, sb); !ok {
			t.Error(msg)
		}
		wantLabels := map[string]string{sandboxv1beta1.SandboxNameHashLabel: sandboxv1beta1.NameHash(name)}
		for k, v := range tc.labels {
			wantLabels[k] = v
		}
		if diff := cmp.Diff(wantLabels, pvc.Labels); diff != "" {
			t.Errorf("Labels of claim %s (-want +got):\n%s", pvcName, diff)
		}
		for k, v := range tc.annos {
			if pvc.Annotations[k] != v {
				t.Errorf("Claim %s annotation %s=%q; want %q", pvcName, k, pvc.Annotations[k], v)
			}
		}
		if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse(tc.size)) != 0 {
			t.Errorf("Claim %s requests %s; want %s", pvcName, got.String(), tc.size)
		}
	}

	pod := waitForPod(t, ns, name)
	wantVolumes := []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + name}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "cache", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "cache-" + name}}},
	}
	// The API server may add a service account token volume; only the Sandbox's volumes matter.
	got := slices.DeleteFunc(slices.Clone(pod.Spec.Volumes), func(v corev1.Volume) bool {
		return v.Name != "data" && v.Name != "scratch" && v.Name != "cache"
	})
	order := []string{"data", "scratch", "cache"}
	slices.SortFunc(got, func(a, b corev1.Volume) int { return slices.Index(order, a.Name) - slices.Index(order, b.Name) })
	if diff := cmp.Diff(wantVolumes, got); diff != "" {
		t.Errorf("Pod volumes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sb.Spec.PodTemplate.Spec.Containers[0].VolumeMounts, pod.Spec.Containers[0].VolumeMounts); diff != "" {
		t.Errorf("Pod volume mounts (-template +pod):\n%s", diff)
	}
}

// TestPVCRetentionWhenDeleted deletes Sandboxes with each whenDeleted policy. There is no garbage
// collector here: what it would do follows from the owner references left on the claims.
func TestPVCRetentionWhenDeleted(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		sandbox      func(ns, name string) *testutil.SandboxWrapper
		wantReleased bool
	}{
		"Delete (default): the claims keep the owner reference and go with the Sandbox": {
			sandbox: func(ns, name string) *testutil.SandboxWrapper { return testutil.MakeSandbox(name, ns) },
		},
		"Retain: the claims are released before the Sandbox goes": {
			sandbox: func(ns, name string) *testutil.SandboxWrapper {
				return testutil.MakeSandbox(name, ns).RetainPVCsWhenDeleted()
			},
			wantReleased: true,
		},
	}
	for caseName, tc := range cases {
		t.Run(caseName, func(t *testing.T) {
			t.Parallel()
			ns := startController(t)
			const name = "owner"
			env.Create(t, tc.sandbox(ns, name).VolumeClaimTemplate("data", "1Gi").VolumeClaimTemplate("logs", "1Gi").Obj())
			sb := waitForSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) (bool, string) {
				has := slices.Contains(sb.Finalizers, sandbox.RetainPVCsFinalizer)
				return has == tc.wantReleased, fmt.Sprintf("finalizers %v", sb.Finalizers)
			})
			var pvcs []*corev1.PersistentVolumeClaim
			for _, vct := range []string{"data", "logs"} {
				pvc := framework.WaitForObject(t, env, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns,
					Name: sandboxv1beta1.PVCName(vct, name)}}, func(p *corev1.PersistentVolumeClaim) (bool, string) { return env.IsControlledBy(p, sb) })
				pvcs = append(pvcs, pvc)
			}
			pod := waitForPod(t, ns, name)

			if err := env.Client.Delete(t.Context(), sb); err != nil {
				t.Fatalf("Deleting Sandbox: %v", err)
			}
			env.WaitGone(t, sb.DeepCopy())
			for _, pvc := range pvcs {
				got := framework.WaitForObject(t, env, pvc.DeepCopy(), nil)
				if got.DeletionTimestamp != nil {
					t.Errorf("Claim %s is being deleted; no one but a garbage collector should delete it", got.Name)
				}
				if owned := ownedBy(got, sb.UID); owned == tc.wantReleased {
					t.Errorf("Claim %s owned by the deleted Sandbox: %t; want %t (owner references %v)",
						got.Name, owned, !tc.wantReleased, got.OwnerReferences)
				}
			}
			// The Pod is the garbage collector's in both cases.
			if got := framework.WaitForObject(t, env, pod.DeepCopy(), nil); controllerUID(got) != sb.UID {
				t.Errorf("Pod %s lost its owner reference to the deleted Sandbox: %v", got.Name, got.OwnerReferences)
			}
		})
	}

	t.Run("switching whenDeleted to Delete drops the finalizer", func(t *testing.T) {
		t.Parallel()
		ns := startController(t)
		const name = "undecided"
		env.Create(t, testutil.MakeSandbox(name, ns).RetainPVCsWhenDeleted().VolumeClaimTemplate("data", "1Gi").Obj())
		waitForSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) (bool, string) {
			return slices.Contains(sb.Finalizers, sandbox.RetainPVCsFinalizer), fmt.Sprintf("finalizers %v", sb.Finalizers)
		})
		updateSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) {
			sb.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted = sandboxv1beta1.DeletePersistentVolumeClaimRetentionPolicyType
		})
		waitForSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) (bool, string) {
			return !slices.Contains(sb.Finalizers, sandbox.RetainPVCsFinalizer), fmt.Sprintf("finalizers %v", sb.Finalizers)
		})
	})

	t.Run("Retain without templates adds no finalizer", func(t *testing.T) {
		t.Parallel()
		ns := startController(t)
		const name = "diskless"
		env.Create(t, testutil.MakeSandbox(name, ns).RetainPVCsWhenDeleted().Obj())
		waitForPod(t, ns, name)
		framework.Consistently(t, quiet, func() (bool, string) {
			sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, name)
			return len(sb.Finalizers) == 0, fmt.Sprintf("finalizers %v", sb.Finalizers)
		})
	})
}

// TestPVCRetentionReleasesAnAdoptedClaim: a claim the Sandbox adopted (labelled adoptable only) is
// released like one it created when the Sandbox is deleted with whenDeleted Retain.
func TestPVCRetentionReleasesAnAdoptedClaim(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	const name = "keeper"
	pvc := testutil.MakePVC(sandboxv1beta1.PVCName("data", name), ns).Labels(map[string]string{sandboxv1beta1.AdoptableLabel: "true"}).Obj()
	env.Create(t, pvc)
	env.Create(t, testutil.MakeSandbox(name, ns).RetainPVCsWhenDeleted().VolumeClaimTemplate("data", "1Gi").Obj())
	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, name)
	framework.WaitForObject(t, env, pvc.DeepCopy(), func(p *corev1.PersistentVolumeClaim) (bool, string) { return env.IsControlledBy(p, sb) })
	waitForPod(t, ns, name)
	sb = waitForSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) (bool, string) {
		return slices.Contains(sb.Finalizers, sandbox.RetainPVCsFinalizer), fmt.Sprintf("finalizers %v", sb.Finalizers)
	})

	if err := env.Client.Delete(t.Context(), sb); err != nil {
		t.Fatalf("Deleting Sandbox: %v", err)
	}
	env.WaitGone(t, sb.DeepCopy())
	got := framework.WaitForObject(t, env, pvc.DeepCopy(), nil)
	if ownedBy(got, sb.UID) {
		t.Errorf("Adopted claim %s still owned by the deleted Sandbox (owner references %v); want it released", got.Name, got.OwnerReferences)
	}
}
