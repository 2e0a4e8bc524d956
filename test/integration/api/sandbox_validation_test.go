package api

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

const (
	retainPVCs = sandboxv1beta1.RetainPersistentVolumeClaimRetentionPolicyType
	deletePVCs = sandboxv1beta1.DeletePersistentVolumeClaimRetentionPolicyType

	// Messages of the CRD's CEL rules.
	msgName         = "metadata.name must be a DNS-1035 label of at most 63 characters"
	msgVCTName      = "volumeClaimTemplates[].metadata.name is required and must be a DNS-1123 label"
	msgVCTUnique    = "volumeClaimTemplates[].metadata.name must be unique"
	msgVCTImmutable = "volumeClaimTemplates is immutable"
)

// agentSandboxManifest is the minimal Sandbox of agent-sandbox's documentation, at this API version.
const agentSandboxManifest = `
apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: my-sandbox
spec:
  podTemplate:
    spec:
      containers:
      - name: my-container
        image: registry.invalid/python-runtime-sandbox:latest-main
`

// fromYAML decodes a manifest into an object in namespace ns. Tests use it for objects the typed
// API cannot express, such as a missing required field.
func fromYAML(t *testing.T, ns, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatalf("Decoding manifest: %v\n%s", err, manifest)
	}
	u.SetNamespace(ns)
	return u
}

// checkErr fails the test unless err is nil when wantErrs is empty, or else is an Invalid error
// whose message contains every one of wantErrs.
func checkErr(t *testing.T, what string, err error, wantErrs []string) {
	t.Helper()
	if len(wantErrs) == 0 {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return
	}
	if err == nil {
		t.Fatalf("%s succeeded; want an error containing %q", what, wantErrs)
	}
	if !apierrors.IsInvalid(err) {
		t.Errorf("%s: got %v (reason %q); want an Invalid error", what, err, apierrors.ReasonForError(err))
	}
	for _, want := range wantErrs {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not contain %q", what, err, want)
		}
	}
}

// withVolumeClaimTemplates adds n volume claim templates named v0, v1, ...
func withVolumeClaimTemplates(w *testutil.SandboxWrapper, n int) *testutil.SandboxWrapper {
	for i := range n {
		w.VolumeClaimTemplate(fmt.Sprintf("v%d", i), "1Gi")
	}
	return w
}

// defaulted is the part of a Sandbox's spec the API server defaults.
type defaulted struct {
	OperatingMode  sandboxv1beta1.SandboxOperatingMode
	ShutdownPolicy *sandboxv1beta1.ShutdownPolicy
	Retention      *sandboxv1beta1.PersistentVolumeClaimRetentionPolicy
}

func defaultedOf(sb *sandboxv1beta1.Sandbox) defaulted {
	return defaulted{
		OperatingMode:  sb.Spec.OperatingMode,
		ShutdownPolicy: sb.Spec.ShutdownPolicy,
		Retention:      sb.Spec.PersistentVolumeClaimRetentionPolicy,
	}
}

func TestSandboxDefaults(t *testing.T) {
	ns := env.NewNamespace(t)
	cases := map[string]struct {
		sandbox *testutil.SandboxWrapper
		want    defaulted
	}{
		"unset fields": {
			sandbox: testutil.MakeSandbox("unset", ns),
			want: defaulted{
				OperatingMode:  sandboxv1beta1.SandboxOperatingModeRunning,
				ShutdownPolicy: ptr.To(sandboxv1beta1.ShutdownPolicyRetain),
			},
		},
		"empty retention policy": {
			sandbox: testutil.MakeSandbox("empty-retention", ns).PersistentVolumeClaimRetentionPolicy("", ""),
			want: defaulted{
				OperatingMode:  sandboxv1beta1.SandboxOperatingModeRunning,
				ShutdownPolicy: ptr.To(sandboxv1beta1.ShutdownPolicyRetain),
				Retention:      &sandboxv1beta1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: deletePVCs, WhenExpired: retainPVCs},
			},
		},
		"only whenDeleted set": {
			sandbox: testutil.MakeSandbox("when-deleted", ns).RetainPVCsWhenDeleted(),
			want: defaulted{
				OperatingMode:  sandboxv1beta1.SandboxOperatingModeRunning,
				ShutdownPolicy: ptr.To(sandboxv1beta1.ShutdownPolicyRetain),
				Retention:      &sandboxv1beta1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: retainPVCs, WhenExpired: retainPVCs},
			},
		},
		"only whenExpired set": {
			sandbox: testutil.MakeSandbox("when-expired", ns).DeletePVCsWhenExpired(),
			want: defaulted{
				OperatingMode:  sandboxv1beta1.SandboxOperatingModeRunning,
				ShutdownPolicy: ptr.To(sandboxv1beta1.ShutdownPolicyRetain),
				Retention:      &sandboxv1beta1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: deletePVCs, WhenExpired: deletePVCs},
			},
		},
		"set fields are kept": {
			sandbox: testutil.MakeSandbox("set", ns).Suspended().ShutdownPolicy(sandboxv1beta1.ShutdownPolicyDelete).
				RetainPVCsWhenDeleted().DeletePVCsWhenExpired(),
			want: defaulted{
				OperatingMode:  sandboxv1beta1.SandboxOperatingModeSuspended,
				ShutdownPolicy: ptr.To(sandboxv1beta1.ShutdownPolicyDelete),
				Retention:      &sandboxv1beta1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: retainPVCs, WhenExpired: deletePVCs},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			sb := tc.sandbox.Obj()
			if err := env.Client.Create(ctx, sb); err != nil {
				t.Fatalf("Creating sandbox: %v", err)
			}
			if diff := cmp.Diff(tc.want, defaultedOf(sb)); diff != "" {
				t.Errorf("Defaulted fields in the create response (-want +got):\n%s", diff)
			}
			got := &sandboxv1beta1.Sandbox{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(sb), got); err != nil {
				t.Fatalf("Reading sandbox back: %v", err)
			}
			if diff := cmp.Diff(tc.want, defaultedOf(got)); diff != "" {
				t.Errorf("Defaulted fields as stored (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSandboxCreateValidation(t *testing.T) {
	ns := env.NewNamespace(t)
	cases := map[string]struct {
		obj      client.Object
		wantErrs []string // empty: the object is accepted
	}{
		"name of 63 characters": {
			obj: testutil.MakeSandbox("s"+strings.Repeat("a", 62), ns).Obj(),
		},
		"name of 64 characters": {
			obj:      testutil.MakeSandbox("s"+strings.Repeat("a", 63), ns).Obj(),
			wantErrs: []string{msgName},
		},
		"generated name": {
			obj: testutil.MakeSandbox("", ns).GenerateName("sandbox-").Obj(),
		},
		"name starting with a digit": {
			obj:      testutil.MakeSandbox("1sandbox", ns).Obj(),
			wantErrs: []string{msgName},
		},
		"name with a dot": {
			obj:      testutil.MakeSandbox("sand.box", ns).Obj(),
			wantErrs: []string{msgName},
		},
		"unknown operatingMode": {
			obj:      testutil.MakeSandbox("paused", ns).OperatingMode("Paused").Obj(),
			wantErrs: []string{"spec.operatingMode", `Unsupported value: "Paused"`},
		},
		"unknown shutdownPolicy": {
			obj:      testutil.MakeSandbox("keep", ns).ShutdownPolicy("Keep").Obj(),
			wantErrs: []string{"spec.shutdownPolicy", `Unsupported value: "Keep"`},
		},
		"unknown persistentVolumeClaimRetentionPolicy": {
			obj:      testutil.MakeSandbox("keep-pvcs", ns).PersistentVolumeClaimRetentionPolicy("Keep", "").Obj(),
			wantErrs: []string{"spec.persistentVolumeClaimRetentionPolicy.whenDeleted", `Unsupported value: "Keep"`},
		},
		"volume claim templates with distinct names": {
			obj: testutil.MakeSandbox("distinct", ns).VolumeClaimTemplate("data", "1Gi").VolumeClaimTemplate("cache", "1Gi").Obj(),
		},
		"volume claim templates with the same name": {
			obj:      testutil.MakeSandbox("same", ns).VolumeClaimTemplate("data", "1Gi").VolumeClaimTemplate("data", "2Gi").Obj(),
			wantErrs: []string{"spec.volumeClaimTemplates", msgVCTUnique},
		},
		"volume claim template with an empty name": {
			obj:      testutil.MakeSandbox("empty-vct-name", ns).VolumeClaimTemplate("", "1Gi").Obj(),
			wantErrs: []string{"spec.volumeClaimTemplates[0]", msgVCTName},
		},
		"volume claim template without metadata": {
			obj: fromYAML(t, ns, `
apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: no-vct-metadata
spec:
  podTemplate:
    spec:
      containers:
      - name: main
        image: registry.invalid/busybox:1
  volumeClaimTemplates:
  - spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests:
          storage: 1Gi
`),
			wantErrs: []string{"spec.volumeClaimTemplates[0]", msgVCTName},
		},
		"volume claim template with an uppercase name": {
			obj:      testutil.MakeSandbox("upper-vct", ns).VolumeClaimTemplate("data", "1Gi").VolumeClaimTemplate("Cache", "1Gi").Obj(),
			wantErrs: []string{"spec.volumeClaimTemplates[1]", msgVCTName},
		},
		"volume claim template with a dot in its name": {
			obj:      testutil.MakeSandbox("dot-vct", ns).VolumeClaimTemplate("da.ta", "1Gi").Obj(),
			wantErrs: []string{"spec.volumeClaimTemplates[0]", msgVCTName},
		},
		"volume claim template with a name ending in a dash": {
			obj:      testutil.MakeSandbox("dash-vct", ns).VolumeClaimTemplate("data-", "1Gi").Obj(),
			wantErrs: []string{"spec.volumeClaimTemplates[0]", msgVCTName},
		},
		"volume claim template with a name of 64 characters": {
			obj:      testutil.MakeSandbox("long-vct", ns).VolumeClaimTemplate(strings.Repeat("d", 64), "1Gi").Obj(),
			wantErrs: []string{"spec.volumeClaimTemplates[0].metadata.name", "Too long"},
		},
		"16 volume claim templates": {
			obj: withVolumeClaimTemplates(testutil.MakeSandbox("vct16", ns), 16).Obj(),
		},
		"17 volume claim templates": {
			obj:      withVolumeClaimTemplates(testutil.MakeSandbox("vct17", ns), 17).Obj(),
			wantErrs: []string{"spec.volumeClaimTemplates", "must have at most 16 items"},
		},
		"no spec": {
			obj: fromYAML(t, ns, `
apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: no-spec
`),
			wantErrs: []string{"spec: Required value"},
		},
		"no podTemplate": {
			obj: fromYAML(t, ns, `
apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: no-pod-template
spec:
  operatingMode: Running
`),
			wantErrs: []string{"spec.podTemplate: Required value"},
		},
		"podTemplate without spec": {
			obj: fromYAML(t, ns, `
apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: no-pod-spec
spec:
  podTemplate:
    metadata:
      labels:
        app: x
`),
			wantErrs: []string{"spec.podTemplate.spec: Required value"},
		},
		"podTemplate spec without containers": {
			obj: fromYAML(t, ns, `
apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: no-containers
spec:
  podTemplate:
    spec:
      restartPolicy: Never
`),
			wantErrs: []string{"spec.podTemplate.spec.containers: Required value"},
		},
		"agent-sandbox's minimal manifest": {
			obj: fromYAML(t, ns, agentSandboxManifest),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := env.Client.Create(t.Context(), tc.obj)
			checkErr(t, "Creating sandbox "+tc.obj.GetName(), err, tc.wantErrs)
		})
	}
}

func TestAgentSandboxManifestIsDefaulted(t *testing.T) {
	ns := env.NewNamespace(t)
	ctx := t.Context()
	if err := env.Client.Create(ctx, fromYAML(t, ns, agentSandboxManifest)); err != nil {
		t.Fatalf("Creating agent-sandbox's minimal Sandbox: %v", err)
	}
	got := &sandboxv1beta1.Sandbox{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "my-sandbox"}, got); err != nil {
		t.Fatalf("Reading it back: %v", err)
	}
	want := defaulted{
		OperatingMode:  sandboxv1beta1.SandboxOperatingModeRunning,
		ShutdownPolicy: ptr.To(sandboxv1beta1.ShutdownPolicyRetain),
	}
	if diff := cmp.Diff(want, defaultedOf(got)); diff != "" {
		t.Errorf("Defaulted fields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"my-container"}, containerNames(got)); diff != "" {
		t.Errorf("Containers (-want +got):\n%s", diff)
	}
}

func containerNames(sb *sandboxv1beta1.Sandbox) []string {
	var names []string
	for _, c := range sb.Spec.PodTemplate.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

func TestSandboxUpdateValidation(t *testing.T) {
	ns := env.NewNamespace(t)
	withData := func(name string) *testutil.SandboxWrapper {
		return testutil.MakeSandbox(name, ns).VolumeClaimTemplate("data", "1Gi")
	}
	// update runs twice (on the object sent, and on the one expected): one time for both.
	inAnHour := time.Now().Add(time.Hour).Truncate(time.Second)
	cases := map[string]struct {
		sandbox  *testutil.SandboxWrapper
		update   func(*sandboxv1beta1.Sandbox)
		wantErrs []string // empty: the update is accepted
	}{
		"adding a volume claim template": {
			sandbox: withData("add"),
			update: func(sb *sandboxv1beta1.Sandbox) {
				sb.Spec.VolumeClaimTemplates = append(sb.Spec.VolumeClaimTemplates, testutil.MakeVolumeClaimTemplate("cache", "1Gi"))
			},
			wantErrs: []string{msgVCTImmutable},
		},
		"adding the first volume claim template": {
			sandbox: testutil.MakeSandbox("add-first", ns),
			update: func(sb *sandboxv1beta1.Sandbox) {
				sb.Spec.VolumeClaimTemplates = []sandboxv1beta1.PersistentVolumeClaimTemplate{testutil.MakeVolumeClaimTemplate("data", "1Gi")}
			},
			wantErrs: []string{msgVCTImmutable},
		},
		"removing one of two volume claim templates": {
			sandbox: withData("remove").VolumeClaimTemplate("cache", "1Gi"),
			update: func(sb *sandboxv1beta1.Sandbox) {
				sb.Spec.VolumeClaimTemplates = sb.Spec.VolumeClaimTemplates[:1]
			},
			wantErrs: []string{msgVCTImmutable},
		},
		"removing the only volume claim template": {
			sandbox:  withData("remove-last"),
			update:   func(sb *sandboxv1beta1.Sandbox) { sb.Spec.VolumeClaimTemplates = nil },
			wantErrs: []string{msgVCTImmutable},
		},
		"changing a volume claim template's size": {
			sandbox: withData("resize"),
			update: func(sb *sandboxv1beta1.Sandbox) {
				sb.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests["storage"] = resource.MustParse("2Gi")
			},
			wantErrs: []string{msgVCTImmutable},
		},
		"renaming a volume claim template": {
			sandbox:  withData("rename"),
			update:   func(sb *sandboxv1beta1.Sandbox) { sb.Spec.VolumeClaimTemplates[0].Metadata.Name = "workspace" },
			wantErrs: []string{msgVCTImmutable},
		},
		"labelling a volume claim template": {
			sandbox: withData("relabel"),
			update: func(sb *sandboxv1beta1.Sandbox) {
				sb.Spec.VolumeClaimTemplates[0].Metadata.Labels = map[string]string{"tier": "fast"}
			},
			wantErrs: []string{msgVCTImmutable},
		},
		"suspending a sandbox with volume claim templates": {
			sandbox: withData("suspend"),
			update: func(sb *sandboxv1beta1.Sandbox) {
				sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeSuspended
			},
		},
		"resuming a sandbox with volume claim templates": {
			sandbox: withData("resume").Suspended(),
			update: func(sb *sandboxv1beta1.Sandbox) {
				sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeRunning
			},
		},
		"setting and changing the shutdown time and policy": {
			sandbox: withData("shutdown"),
			update: func(sb *sandboxv1beta1.Sandbox) {
				sb.Spec.ShutdownTime = ptr.To(metav1.NewTime(inAnHour))
				sb.Spec.ShutdownPolicy = ptr.To(sandboxv1beta1.ShutdownPolicyDelete)
			},
		},
		"clearing the shutdown time": {
			sandbox: withData("no-shutdown").ShutdownAt(time.Now().Add(time.Hour)),
			update:  func(sb *sandboxv1beta1.Sandbox) { sb.Spec.ShutdownTime = nil },
		},
		"changing service, pod template and retention policy": {
			sandbox: withData("other-fields"),
			update: func(sb *sandboxv1beta1.Sandbox) {
				sb.Spec.Service = ptr.To(true)
				sb.Spec.PodTemplate.Metadata.Labels = map[string]string{"app": "x"}
				sb.Spec.PodTemplate.Spec.Containers[0].Image = "registry.invalid/other:2"
				sb.Spec.PersistentVolumeClaimRetentionPolicy = &sandboxv1beta1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: retainPVCs, WhenExpired: deletePVCs}
			},
		},
		"updating nothing": {
			sandbox: withData("no-op"),
			update:  func(*sandboxv1beta1.Sandbox) {},
		},
		"invalid operatingMode on update": {
			sandbox:  testutil.MakeSandbox("bad-mode", ns),
			update:   func(sb *sandboxv1beta1.Sandbox) { sb.Spec.OperatingMode = "Paused" },
			wantErrs: []string{"spec.operatingMode", `Unsupported value: "Paused"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			sb := tc.sandbox.Obj()
			if err := env.Client.Create(ctx, sb); err != nil {
				t.Fatalf("Creating sandbox: %v", err)
			}
			before := sb.DeepCopy()
			tc.update(sb)
			err := env.Client.Update(ctx, sb)
			checkErr(t, "Updating sandbox", err, tc.wantErrs)

			got := &sandboxv1beta1.Sandbox{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(sb), got); err != nil {
				t.Fatalf("Reading sandbox back: %v", err)
			}
			// A rejected update leaves the stored spec as it was; an accepted one stores it.
			want := before.DeepCopy()
			if len(tc.wantErrs) == 0 {
				tc.update(want)
			}
			if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
				t.Errorf("Stored spec (-want +got):\n%s", diff)
			}
		})
	}
}
