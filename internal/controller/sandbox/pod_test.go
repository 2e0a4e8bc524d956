package sandbox

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/inflight"
	"github.com/kubox-dev/kubox/internal/testutil"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := sandboxv1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := extv1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// controllerRef is the owner reference every child of the test sandbox must carry.
func controllerRef() metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: "agents.x-k8s.io/v1beta1", Kind: "Sandbox", Name: testName, UID: "sandbox-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

func emptyDir(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

func claimVolume(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}}
}

func TestBuildPod(t *testing.T) {
	baseLabels := func(extra map[string]string) map[string]string {
		l := map[string]string{
			sandboxv1beta1.SandboxNameHashLabel: testNameHash,
			sandboxv1beta1.SandboxNameLabel:     testName,
		}
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	cases := map[string]struct {
		sandbox         *testutil.SandboxWrapper
		wantLabels      map[string]string
		wantAnnotations map[string]string
		wantVolumes     []corev1.Volume
	}{
		"template metadata is propagated and its keys are recorded, sorted": {
			sandbox: testSandbox().
				PodLabel("team", "a").PodLabel("app", "web").
				PodAnnotation("note", "hi").PodAnnotation("a.example.com/x", "1"),
			wantLabels: baseLabels(map[string]string{"app": "web", "team": "a"}),
			wantAnnotations: map[string]string{
				"note": "hi", "a.example.com/x": "1",
				sandboxv1beta1.PropagatedLabelsAnnotation:      "app,team",
				sandboxv1beta1.PropagatedAnnotationsAnnotation: "a.example.com/x,note",
			},
		},
		"reserved keys in the template are ignored": {
			sandbox: testSandbox().
				PodLabel("app", "web").
				PodLabel(sandboxv1beta1.SandboxNameHashLabel, "deadbeef").
				PodLabel(sandboxv1beta1.AdoptableLabel, "true").
				PodLabel(sandboxv1beta1.WarmPoolSandboxLabel, "spoofed").
				PodLabel("extensions.agents.x-k8s.io/anything", "x").
				PodAnnotation("note", "hi").
				PodAnnotation(sandboxv1beta1.PodNameAnnotation, "other").
				PodAnnotation(sandboxv1beta1.PropagatedLabelsAnnotation, "forged").
				PodAnnotation(sandboxv1beta1.TraceContextAnnotation, `{"traceparent":"x"}`),
			wantLabels: baseLabels(map[string]string{"app": "web"}),
			wantAnnotations: map[string]string{
				"note": "hi",
				sandboxv1beta1.PropagatedLabelsAnnotation:      "app",
				sandboxv1beta1.PropagatedAnnotationsAnnotation: "note",
			},
		},
		"system labels are copied from the Sandbox, other Sandbox labels are not": {
			sandbox: testSandbox().
				Label(sandboxv1beta1.WarmPoolSandboxLabel, "0a1b2c3d").
				Label(sandboxv1beta1.SandboxTemplateRefHashLabel, "11223344").
				Label(sandboxv1beta1.CreatedByLabel, "python-client").
				Label(sandboxv1beta1.ClaimUIDLabel, "claim-uid-1").
				Label(sandboxv1beta1.LaunchTypeLabel, "warm").
				Label("billing", "team-a").
				PodLabel("app", "web"),
			wantLabels: baseLabels(map[string]string{
				"app":                               "web",
				sandboxv1beta1.WarmPoolSandboxLabel: "0a1b2c3d",
				sandboxv1beta1.SandboxTemplateRefHashLabel: "11223344",
				sandboxv1beta1.CreatedByLabel:              "python-client",
				sandboxv1beta1.ClaimUIDLabel:               "claim-uid-1",
			}),
			wantAnnotations: map[string]string{
				sandboxv1beta1.PropagatedLabelsAnnotation:      "app",
				sandboxv1beta1.PropagatedAnnotationsAnnotation: sandboxv1beta1.SafeToEvictAnnotation,
				sandboxv1beta1.SafeToEvictAnnotation:           "true",
			},
		},
		"an unclaimed pool member's Pod is safe to evict, unless its template says otherwise": {
			sandbox: testSandbox().
				Label(sandboxv1beta1.WarmPoolSandboxLabel, "0a1b2c3d").
				PodAnnotation(sandboxv1beta1.SafeToEvictAnnotation, "false"),
			wantLabels: baseLabels(map[string]string{sandboxv1beta1.WarmPoolSandboxLabel: "0a1b2c3d"}),
			wantAnnotations: map[string]string{
				sandboxv1beta1.PropagatedLabelsAnnotation:      "",
				sandboxv1beta1.PropagatedAnnotationsAnnotation: sandboxv1beta1.SafeToEvictAnnotation,
				sandboxv1beta1.SafeToEvictAnnotation:           "false",
			},
		},
		"volume claim templates: same-named volume replaced in place, others appended": {
			sandbox: testSandbox().
				PodSpec(func(s *corev1.PodSpec) { s.Volumes = []corev1.Volume{emptyDir("workspace"), emptyDir("cache")} }).
				VolumeClaimTemplate("workspace", "1Gi").
				VolumeClaimTemplate("data", "2Gi"),
			wantLabels: baseLabels(nil),
			wantVolumes: []corev1.Volume{
				claimVolume("workspace", "workspace-my-sandbox"),
				emptyDir("cache"),
				claimVolume("data", "data-my-sandbox"),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb := withMeta(tc.sandbox.Obj())
			before := sb.DeepCopy()
			r := &Reconciler{scheme: testScheme(t)}

			pod, err := r.buildPod(sb)
			if err != nil {
				t.Fatalf("buildPod: %v", err)
			}

			wantSpec := *before.Spec.PodTemplate.Spec.DeepCopy()
			wantSpec.Volumes = tc.wantVolumes
			want := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Name: testName, Namespace: testNS,
					Labels: tc.wantLabels, Annotations: tc.wantAnnotations,
					OwnerReferences: []metav1.OwnerReference{controllerRef()},
				},
				Spec: wantSpec,
			}
			if tc.wantAnnotations == nil {
				// This case is about volumes: only the bookkeeping of "nothing propagated" may be there.
				for _, k := range []string{sandboxv1beta1.PropagatedLabelsAnnotation, sandboxv1beta1.PropagatedAnnotationsAnnotation} {
					if v, ok := pod.Annotations[k]; ok && v == "" {
						delete(pod.Annotations, k)
					}
				}
			}
			if diff := cmp.Diff(want, pod, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("buildPod (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, sb); diff != "" {
				t.Errorf("buildPod changed the Sandbox (-before +after):\n%s", diff)
			}
		})
	}
}

// The headless Service selects pods by kubox.dev/sandbox-name; a pod template must not be able to
// point that label at another sandbox, or that sandbox's Service would route to this pod.
func TestBuildPodSandboxNameLabelCannotBeOverridden(t *testing.T) {
	sb := withMeta(testSandbox().PodLabel(sandboxv1beta1.SandboxNameLabel, "victim").Obj())
	pod, err := (&Reconciler{scheme: testScheme(t)}).buildPod(sb)
	if err != nil {
		t.Fatalf("buildPod: %v", err)
	}
	if got := pod.Labels[sandboxv1beta1.SandboxNameLabel]; got != testName {
		t.Errorf("pod label %s = %q, want %q", sandboxv1beta1.SandboxNameLabel, got, testName)
	}
	if got := pod.Labels[sandboxv1beta1.SandboxNameHashLabel]; got != testNameHash {
		t.Errorf("pod label %s = %q, want %q", sandboxv1beta1.SandboxNameHashLabel, got, testNameHash)
	}
}

// A kubox.dev/restore-* annotation makes the node's runtime (root) restore the Pod from the
// image it names: the controller sets it itself on the Pods it restores and never copies one from
// a pod template, whatever let it into the Sandbox (admission refuses it there).
func TestBuildPodDropsRestoreAnnotations(t *testing.T) {
	cases := map[string]struct{ key string }{
		"the shim's restore image":   {key: contract.RestoreImageAnnotation},
		"another restore annotation": {key: "kubox.dev/restore-manifest"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb := withMeta(testSandbox().PodAnnotation(tc.key, "/snapshots/other-namespace/s1/image").
				PodAnnotation("sandbox.users.io/note", "kept").Obj())
			pod, err := (&Reconciler{scheme: testScheme(t)}).buildPod(sb)
			if err != nil {
				t.Fatalf("buildPod: %v", err)
			}
			want := map[string]string{"sandbox.users.io/note": "kept"}
			got := map[string]string{}
			for k, v := range pod.Annotations {
				if k == tc.key || k == "sandbox.users.io/note" {
					got[k] = v
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Pod annotations from the pod template (-want +got):\n%s", diff)
			}
			if keys := pod.Annotations[sandboxv1beta1.PropagatedAnnotationsAnnotation]; strings.Contains(keys, tc.key) {
				t.Errorf("propagated annotation keys %q include %s", keys, tc.key)
			}
		})
	}
}

func TestMetadataPatch(t *testing.T) {
	cases := map[string]struct {
		have, want map[string]string
		removable  []string
		wantPatch  map[string]any
	}{
		"in sync: empty patch": {
			have:      map[string]string{"a": "1", "b": "2"},
			want:      map[string]string{"a": "1"},
			removable: []string{"a"},
			wantPatch: map[string]any{},
		},
		"missing and changed keys are set": {
			have:      map[string]string{"a": "old"},
			want:      map[string]string{"a": "new", "b": "2"},
			wantPatch: map[string]any{"a": "new", "b": "2"},
		},
		"empty value is a value": {
			have:      map[string]string{},
			want:      map[string]string{"a": ""},
			wantPatch: map[string]any{"a": ""},
		},
		"removable key present and no longer wanted is deleted": {
			have:      map[string]string{"gone": "x", "keep": "y"},
			want:      map[string]string{"keep": "y"},
			removable: []string{"gone", "keep"},
			wantPatch: map[string]any{"gone": nil},
		},
		"removable key already absent: nothing to delete": {
			have:      map[string]string{},
			want:      map[string]string{},
			removable: []string{"gone"},
			wantPatch: map[string]any{},
		},
		"removable key still wanted with a new value is set, not deleted": {
			have:      map[string]string{"k": "old"},
			want:      map[string]string{"k": "new"},
			removable: []string{"k"},
			wantPatch: map[string]any{"k": "new"},
		},
		"keys nobody manages are left alone": {
			have:      map[string]string{"other-controller": "x"},
			want:      map[string]string{},
			removable: []string{"gone"},
			wantPatch: map[string]any{},
		},
		"the empty key from splitting an empty list is ignored": {
			have:      map[string]string{"": "odd"},
			want:      map[string]string{},
			removable: []string{""},
			wantPatch: map[string]any{},
		},
		"nil have": {
			want:      map[string]string{"a": "1"},
			removable: []string{"b"},
			wantPatch: map[string]any{"a": "1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := metadataPatch(tc.have, tc.want, tc.removable)
			if diff := cmp.Diff(tc.wantPatch, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("metadataPatch (-want +got):\n%s", diff)
			}
		})
	}
}

// patchPodMetadata against a fake client: what the Pod ends up with is what matters, so the test
// reads it back.
func TestPatchPodMetadata(t *testing.T) {
	cases := map[string]struct {
		sandbox         *testutil.SandboxWrapper
		pod             *testutil.PodWrapper
		wantLabels      map[string]string
		wantAnnotations map[string]string
		wantNoWrite     bool
	}{
		"template changes are applied, removed keys deleted, foreign keys kept": {
			sandbox: testSandbox().PodLabel("app", "web").PodAnnotation("note", "v2"),
			pod: testPod().
				Labels(map[string]string{
					sandboxv1beta1.SandboxNameHashLabel: testNameHash, sandboxv1beta1.SandboxNameLabel: testName,
					"app": "old", "removed": "x", "set-by-someone-else": "keep",
				}).
				Annotation(sandboxv1beta1.PropagatedLabelsAnnotation, "app,removed").
				Annotation(sandboxv1beta1.PropagatedAnnotationsAnnotation, "note,old-note").
				Annotation("note", "v1").Annotation("old-note", "y").Annotation("foreign", "keep"),
			wantLabels: map[string]string{
				sandboxv1beta1.SandboxNameHashLabel: testNameHash, sandboxv1beta1.SandboxNameLabel: testName,
				"app": "web", "set-by-someone-else": "keep",
			},
			wantAnnotations: map[string]string{
				sandboxv1beta1.PropagatedLabelsAnnotation:      "app",
				sandboxv1beta1.PropagatedAnnotationsAnnotation: "note",
				"note": "v2", "foreign": "keep",
			},
		},
		"a warm-pool member leaving its pool loses the pool label and safe-to-evict; claim labels arrive": {
			sandbox: testSandbox().
				Label(sandboxv1beta1.ClaimUIDLabel, "claim-1").
				Label(sandboxv1beta1.SandboxTemplateRefHashLabel, "11223344"),
			pod: testPod().
				Labels(map[string]string{
					sandboxv1beta1.SandboxNameHashLabel: testNameHash, sandboxv1beta1.SandboxNameLabel: testName,
					sandboxv1beta1.WarmPoolSandboxLabel:        "0a1b2c3d",
					sandboxv1beta1.SandboxTemplateRefHashLabel: "11223344",
				}).
				Annotation(sandboxv1beta1.PropagatedLabelsAnnotation, "").
				Annotation(sandboxv1beta1.PropagatedAnnotationsAnnotation, sandboxv1beta1.SafeToEvictAnnotation).
				Annotation(sandboxv1beta1.SafeToEvictAnnotation, "true"),
			wantLabels: map[string]string{
				sandboxv1beta1.SandboxNameHashLabel: testNameHash, sandboxv1beta1.SandboxNameLabel: testName,
				sandboxv1beta1.SandboxTemplateRefHashLabel: "11223344",
				sandboxv1beta1.ClaimUIDLabel:               "claim-1",
			},
			wantAnnotations: map[string]string{
				sandboxv1beta1.PropagatedLabelsAnnotation:      "",
				sandboxv1beta1.PropagatedAnnotationsAnnotation: "",
			},
		},
		"an adopted pod without bookkeeping gets the managed labels": {
			sandbox: testSandbox().PodLabel("app", "web"),
			pod:     testPod().Label("pre-existing", "yes"),
			wantLabels: map[string]string{
				sandboxv1beta1.SandboxNameHashLabel: testNameHash, sandboxv1beta1.SandboxNameLabel: testName,
				"app": "web", "pre-existing": "yes",
			},
			wantAnnotations: map[string]string{
				sandboxv1beta1.PropagatedLabelsAnnotation:      "app",
				sandboxv1beta1.PropagatedAnnotationsAnnotation: "",
			},
		},
		"in sync: no write": {
			sandbox: testSandbox().PodLabel("app", "web"),
			pod: testPod().
				Labels(map[string]string{
					sandboxv1beta1.SandboxNameHashLabel: testNameHash, sandboxv1beta1.SandboxNameLabel: testName, "app": "web",
				}).
				Annotation(sandboxv1beta1.PropagatedLabelsAnnotation, "app").
				Annotation(sandboxv1beta1.PropagatedAnnotationsAnnotation, ""),
			wantLabels: map[string]string{
				sandboxv1beta1.SandboxNameHashLabel: testNameHash, sandboxv1beta1.SandboxNameLabel: testName, "app": "web",
			},
			wantAnnotations: map[string]string{
				sandboxv1beta1.PropagatedLabelsAnnotation:      "app",
				sandboxv1beta1.PropagatedAnnotationsAnnotation: "",
			},
			wantNoWrite: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			sb := withMeta(tc.sandbox.Obj())
			c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(tc.pod.Obj()).Build()
			r := &Reconciler{client: c, scheme: c.Scheme(), pods: inflight.NewVersions(clock.RealClock{})}
			pod := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: testName}, pod); err != nil {
				t.Fatal(err)
			}
			rv := pod.ResourceVersion

			if err := r.patchPodMetadata(ctx, sb, pod); err != nil {
				t.Fatalf("patchPodMetadata: %v", err)
			}

			got := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantLabels, got.Labels, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAnnotations, got.Annotations, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if tc.wantNoWrite && got.ResourceVersion != rv {
				t.Errorf("resourceVersion %s -> %s: the pod was written although nothing changed", rv, got.ResourceVersion)
			}
		})
	}
}

// TestPatchPodMetadataSkipsAStaleCache: a second pass that still sees the version the first
// pass patched from (the cache is behind) writes nothing; one that sees a newer version patches.
func TestPatchPodMetadataSkipsAStaleCache(t *testing.T) {
	ctx := context.Background()
	pod := testPod().Obj()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(pod).Build()
	r := &Reconciler{client: c, scheme: c.Scheme(), pods: inflight.NewVersions(clock.RealClock{})}
	stale := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), stale); err != nil {
		t.Fatal(err)
	}
	sb := withMeta(testSandbox().PodLabel("app", "web").Obj())
	if err := r.patchPodMetadata(ctx, sb, stale.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	afterFirst := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), afterFirst); err != nil {
		t.Fatal(err)
	}
	if afterFirst.Labels["app"] != "web" {
		t.Fatalf("the first pass did not patch: labels %v", afterFirst.Labels)
	}

	sb = withMeta(testSandbox().PodLabel("app", "api").Obj())
	if err := r.patchPodMetadata(ctx, sb, stale.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != afterFirst.ResourceVersion {
		t.Errorf("a pass on the stale copy wrote the Pod (resourceVersion %s -> %s)", afterFirst.ResourceVersion, got.ResourceVersion)
	}

	if err := r.patchPodMetadata(ctx, sb, got.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	if got.Labels["app"] != "api" {
		t.Errorf("a pass on the current version did not patch: labels %v", got.Labels)
	}
}

func TestBuildPVC(t *testing.T) {
	sb := withMeta(testSandbox().Obj())
	vct := testutil.MakeVolumeClaimTemplate("workspace", "5Gi")
	vct.Metadata.Labels = map[string]string{"tier": "fast", sandboxv1beta1.SandboxNameHashLabel: "spoofed"}
	vct.Metadata.Annotations = map[string]string{"backup.example.com/enabled": "true"}
	vct.Spec.StorageClassName = ptr.To("ssd")
	before := vct.DeepCopy()

	pvc, err := (&Reconciler{scheme: testScheme(t)}).buildPVC(sb, &vct)
	if err != nil {
		t.Fatalf("buildPVC: %v", err)
	}

	want := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "workspace-my-sandbox",
			Namespace: testNS,
			Labels: map[string]string{
				"tier":                              "fast",
				sandboxv1beta1.SandboxNameHashLabel: testNameHash,
			},
			Annotations:     map[string]string{"backup.example.com/enabled": "true"},
			OwnerReferences: []metav1.OwnerReference{controllerRef()},
		},
		Spec: *before.Spec.DeepCopy(),
	}
	if diff := cmp.Diff(want, pvc); diff != "" {
		t.Errorf("buildPVC (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, &vct); diff != "" {
		t.Errorf("buildPVC changed the template (-before +after):\n%s", diff)
	}
}

func TestAdoptable(t *testing.T) {
	sb := withMeta(testSandbox().Obj())
	cases := map[string]struct {
		labels map[string]string
		want   bool
	}{
		"no labels":                      {labels: nil, want: false},
		"adoptable=true":                 {labels: map[string]string{sandboxv1beta1.AdoptableLabel: "true"}, want: true},
		"adoptable=false":                {labels: map[string]string{sandboxv1beta1.AdoptableLabel: "false"}, want: false},
		"adoptable=True is not true":     {labels: map[string]string{sandboxv1beta1.AdoptableLabel: "True"}, want: false},
		"this sandbox's name hash":       {labels: map[string]string{sandboxv1beta1.SandboxNameHashLabel: testNameHash}, want: true},
		"another sandbox's name hash":    {labels: map[string]string{sandboxv1beta1.SandboxNameHashLabel: "ab179450"}, want: false},
		"kubox name label is not enough": {labels: map[string]string{sandboxv1beta1.SandboxNameLabel: testName}, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := testPod().Labels(tc.labels).Obj()
			if got := adoptable(sb, pod); got != tc.want {
				t.Errorf("adoptable = %v, want %v", got, tc.want)
			}
		})
	}
}
