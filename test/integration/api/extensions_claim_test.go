package api

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

// Messages of the SandboxClaim CRD's CEL rules.
const (
	msgClaimName           = "metadata.name must be a DNS-1035 label of at most 63 characters"
	msgExactlyOneRef       = "exactly one of spec.warmPoolRef and spec.sandboxTemplateRef must be set"
	msgWarmPoolRefName     = "warmPoolRef.name must be a SandboxWarmPool name"
	msgEnvName             = "env[].name must consist of printable ASCII characters other than '='"
	msgEnvContainerName    = "env[].containerName must be a container name"
	msgEnvUnique           = "env[].name must be unique per containerName"
	labelsPath             = "spec.additionalPodMetadata.labels"
	annotationsPath        = "spec.additionalPodMetadata.annotations"
	safeToEvictAnnotation  = "cluster-autoscaler.kubernetes.io/safe-to-evict"
	reservedAgentsLabelKey = "agents.x-k8s.io/sandbox-name-hash"
)

// The CEL rules on additionalPodMetadata name the first offending key.
func msgReservedLabel(key string) string {
	return "additionalPodMetadata.labels key " + key + " is reserved: keys under agents.x-k8s.io/"
}

func msgReservedAnnotation(key string) string {
	return "additionalPodMetadata.annotations key " + key + " is reserved: keys under agents.x-k8s.io/"
}

// msgVCTForbidden is the message of the CEL rule refusing field in a claim's volume claim templates.
func msgVCTForbidden(field string) string {
	return "volumeClaimTemplates[].spec." + field + " must not be set in a claim"
}

func msgLabelKey(key string) string {
	return "additionalPodMetadata.labels key " + key + " is not a qualified name"
}

func msgAnnotationKey(key string) string {
	return "additionalPodMetadata.annotations key " + key + " is not a qualified name"
}

// agentSandboxClaimManifest is a SandboxClaim as agent-sandbox's documentation writes one.
const agentSandboxClaimManifest = `
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata:
  name: my-claim
spec:
  warmPoolRef:
    name: python-sandbox-warmpool
  lifecycle:
    shutdownTime: "2030-01-01T00:00:00Z"
    ttlSecondsAfterFinished: 60
  additionalPodMetadata:
    labels:
      sandbox.users.io/team: agents
    annotations:
      cluster-autoscaler.kubernetes.io/safe-to-evict: "false"
  env:
  - name: TASK_ID
    value: "42"
  - name: TASK_ID
    value: "42"
    containerName: sidecar
`

func TestSandboxClaimDefaults(t *testing.T) {
	ns := env.NewNamespace(t)
	cases := map[string]struct {
		claim *testutil.ClaimWrapper
		want  *extv1beta1.ClaimLifecycle
	}{
		"no lifecycle": {
			claim: testutil.MakeClaim("no-lifecycle", ns).WarmPool("pool"),
		},
		"lifecycle without a policy": {
			claim: testutil.MakeClaim("ttl", ns).WarmPool("pool").TTLSecondsAfterFinished(0),
			want: &extv1beta1.ClaimLifecycle{
				TTLSecondsAfterFinished: ptr.To[int32](0),
				ShutdownPolicy:          extv1beta1.ClaimShutdownPolicyRetain,
			},
		},
		"set policy is kept": {
			claim: testutil.MakeClaim("foreground", ns).WarmPool("pool").ShutdownPolicy(extv1beta1.ClaimShutdownPolicyDeleteForeground),
			want:  &extv1beta1.ClaimLifecycle{ShutdownPolicy: extv1beta1.ClaimShutdownPolicyDeleteForeground},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			claim := tc.claim.Obj()
			if err := env.Client.Create(ctx, claim); err != nil {
				t.Fatalf("Creating claim: %v", err)
			}
			got := &extv1beta1.SandboxClaim{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), got); err != nil {
				t.Fatalf("Reading claim back: %v", err)
			}
			if diff := cmp.Diff(tc.want, got.Spec.Lifecycle); diff != "" {
				t.Errorf("Lifecycle as stored (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAgentSandboxClaimManifest(t *testing.T) {
	ns := env.NewNamespace(t)
	ctx := t.Context()
	if err := env.Client.Create(ctx, fromYAML(t, ns, agentSandboxClaimManifest)); err != nil {
		t.Fatalf("Creating agent-sandbox's SandboxClaim: %v", err)
	}
	got := &extv1beta1.SandboxClaim{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "my-claim"}, got); err != nil {
		t.Fatalf("Reading it back: %v", err)
	}
	want := extv1beta1.SandboxClaimSpec{
		WarmPoolRef: &extv1beta1.SandboxWarmPoolReference{Name: "python-sandbox-warmpool"},
		Lifecycle: &extv1beta1.ClaimLifecycle{
			ShutdownTime:            got.Spec.Lifecycle.ShutdownTime, // compared below
			TTLSecondsAfterFinished: ptr.To[int32](60),
			ShutdownPolicy:          extv1beta1.ClaimShutdownPolicyRetain,
		},
		AdditionalPodMetadata: extv1beta1.AdditionalPodMetadata{
			Labels:      map[string]string{"sandbox.users.io/team": "agents"},
			Annotations: map[string]string{safeToEvictAnnotation: "false"},
		},
		Env: []extv1beta1.EnvVar{
			{Name: "TASK_ID", Value: "42"},
			{Name: "TASK_ID", Value: "42", ContainerName: "sidecar"},
		},
	}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("Spec (-want +got):\n%s", diff)
	}
	if st := got.Spec.Lifecycle.ShutdownTime; st == nil || !st.Equal(ptr.To(metav1.NewTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))) {
		t.Errorf("shutdownTime = %v; want 2030-01-01T00:00:00Z", st)
	}
}

func TestSandboxClaimCreateValidation(t *testing.T) {
	ns := env.NewNamespace(t)
	pool, template := ptr.To("pool"), ptr.To("template")
	cases := map[string]struct {
		claim    *testutil.ClaimWrapper
		wantErrs []string // empty: the claim is accepted
	}{
		// References.
		"warm pool only": {
			claim: testutil.MakeClaim("pool-only", ns).WarmPool("pool"),
		},
		"template only": {
			claim: testutil.MakeClaim("template-only", ns).Template("python.v2"),
		},
		"no reference": {
			claim:    testutil.MakeClaim("no-ref", ns).Refs(nil, nil),
			wantErrs: []string{"spec", msgExactlyOneRef},
		},
		"both references": {
			claim:    testutil.MakeClaim("both-refs", ns).Refs(pool, template),
			wantErrs: []string{"spec", msgExactlyOneRef},
		},
		"warm pool name with a dot": {
			claim:    testutil.MakeClaim("pool-dot", ns).WarmPool("warm.pool"),
			wantErrs: []string{"spec.warmPoolRef.name", msgWarmPoolRefName},
		},
		"empty warm pool name": {
			claim:    testutil.MakeClaim("pool-empty", ns).WarmPool(""),
			wantErrs: []string{"spec.warmPoolRef.name", msgWarmPoolRefName},
		},
		"warm pool name of 64 characters": {
			claim:    testutil.MakeClaim("pool-long", ns).WarmPool("p" + strings.Repeat("a", 63)),
			wantErrs: []string{"spec.warmPoolRef.name", "Too long"},
		},
		"template name with uppercase letters": {
			claim:    testutil.MakeClaim("template-upper", ns).Template("Python"),
			wantErrs: []string{"spec.sandboxTemplateRef.name", msgPoolTemplateRefName},
		},

		// Name.
		"name of 63 characters": {
			claim: testutil.MakeClaim("c"+strings.Repeat("a", 62), ns).WarmPool("pool"),
		},
		"name of 64 characters": {
			claim:    testutil.MakeClaim("c"+strings.Repeat("a", 63), ns).WarmPool("pool"),
			wantErrs: []string{msgClaimName},
		},
		"name starting with a digit": {
			claim:    testutil.MakeClaim("1claim", ns).WarmPool("pool"),
			wantErrs: []string{msgClaimName},
		},
		"name with a dot": {
			claim:    testutil.MakeClaim("my.claim", ns).WarmPool("pool"),
			wantErrs: []string{msgClaimName},
		},
		"generated name": {
			claim: testutil.MakeClaim("", ns).WarmPool("pool").GenerateName("claim-"),
		},

		// Lifecycle.
		"ttlSecondsAfterFinished 0": {
			claim: testutil.MakeClaim("ttl-0", ns).WarmPool("pool").TTLSecondsAfterFinished(0),
		},
		"negative ttlSecondsAfterFinished": {
			claim:    testutil.MakeClaim("ttl-negative", ns).WarmPool("pool").TTLSecondsAfterFinished(-1),
			wantErrs: []string{"spec.lifecycle.ttlSecondsAfterFinished", "greater than or equal to 0"},
		},
		"every shutdown policy and a shutdown time": {
			claim: testutil.MakeClaim("delete", ns).WarmPool("pool").ShutdownPolicy(extv1beta1.ClaimShutdownPolicyDelete).ShutdownAt(time.Now().Add(time.Hour)),
		},
		"unknown shutdownPolicy": {
			claim:    testutil.MakeClaim("keep", ns).WarmPool("pool").ShutdownPolicy("Keep"),
			wantErrs: []string{"spec.lifecycle.shutdownPolicy", `Unsupported value: "Keep"`},
		},

		// Pod metadata.
		"user labels and annotations": {
			claim: testutil.MakeClaim("metadata", ns).WarmPool("pool").PodLabel("team", "agents").PodLabel("sandbox.users.io/run", "r-1").
				PodAnnotation("example.com/note", "anything at all: spaces, / and =").
				PodAnnotation(safeToEvictAnnotation, "false"),
		},
		"label under agents.x-k8s.io": {
			claim:    testutil.MakeClaim("label-agents", ns).WarmPool("pool").PodLabel(reservedAgentsLabelKey, "x"),
			wantErrs: []string{labelsPath, msgReservedLabel(reservedAgentsLabelKey)},
		},
		"label under extensions.agents.x-k8s.io": {
			claim:    testutil.MakeClaim("label-extensions", ns).WarmPool("pool").PodLabel("extensions.agents.x-k8s.io/pool", "x"),
			wantErrs: []string{labelsPath, msgReservedLabel("extensions.agents.x-k8s.io/pool")},
		},
		"label under a subdomain of kubernetes.io": {
			claim:    testutil.MakeClaim("label-k8s-sub", ns).WarmPool("pool").PodLabel("node-role.kubernetes.io/worker", ""),
			wantErrs: []string{labelsPath, msgReservedLabel("node-role.kubernetes.io/worker")},
		},
		"safe-to-evict as a label": {
			claim:    testutil.MakeClaim("label-evict", ns).WarmPool("pool").PodLabel(safeToEvictAnnotation, "true"),
			wantErrs: []string{labelsPath, msgReservedLabel(safeToEvictAnnotation)},
		},
		"annotation under k8s.io": {
			claim:    testutil.MakeClaim("annotation-k8s", ns).WarmPool("pool").PodAnnotation("k8s.io/x", "y"),
			wantErrs: []string{annotationsPath, msgReservedAnnotation("k8s.io/x")},
		},
		"annotation under agents.x-k8s.io": {
			claim:    testutil.MakeClaim("annotation-agents", ns).WarmPool("pool").PodAnnotation("agents.x-k8s.io/pod-name", "y"),
			wantErrs: []string{annotationsPath, msgReservedAnnotation("agents.x-k8s.io/pod-name")},
		},
		"label key with two slashes": {
			claim:    testutil.MakeClaim("label-slashes", ns).WarmPool("pool").PodLabel("a/b/c", "x"),
			wantErrs: []string{labelsPath, msgLabelKey("a/b/c")},
		},
		"label key with an uppercase prefix": {
			claim:    testutil.MakeClaim("label-upper-prefix", ns).WarmPool("pool").PodLabel("Example.com/x", "y"),
			wantErrs: []string{labelsPath, msgLabelKey("Example.com/x")},
		},
		"label key with a name of 64 characters": {
			claim:    testutil.MakeClaim("label-long-name", ns).WarmPool("pool").PodLabel(strings.Repeat("n", 64), "x"),
			wantErrs: []string{labelsPath, msgLabelKey(strings.Repeat("n", 64))},
		},
		"label key with a prefix of 253 characters": {
			claim: testutil.MakeClaim("label-prefix-253", ns).WarmPool("pool").PodLabel(dnsSubdomain(253)+"/x", "y"),
		},
		"label key with a prefix of 254 characters": {
			claim:    testutil.MakeClaim("label-prefix-254", ns).WarmPool("pool").PodLabel(dnsSubdomain(254)+"/x", "y"),
			wantErrs: []string{labelsPath, msgLabelKey(dnsSubdomain(254) + "/x")},
		},
		"empty label key": {
			claim:    testutil.MakeClaim("label-empty", ns).WarmPool("pool").PodLabel("", "x"),
			wantErrs: []string{labelsPath, msgLabelKey("")},
		},
		"annotation key starting with a dash": {
			claim:    testutil.MakeClaim("annotation-dash", ns).WarmPool("pool").PodAnnotation("-note", "x"),
			wantErrs: []string{annotationsPath, msgAnnotationKey("-note")},
		},
		"annotation key with a space": {
			claim:    testutil.MakeClaim("annotation-space", ns).WarmPool("pool").PodAnnotation("my note", "x"),
			wantErrs: []string{annotationsPath, msgAnnotationKey("my note")},
		},
		"65 labels": {
			claim:    withPodLabels(testutil.MakeClaim("labels-65", ns).WarmPool("pool"), 65),
			wantErrs: []string{labelsPath, "must have at most 64 items"},
		},

		// Env.
		"env for two containers with the same name": {
			claim: testutil.MakeClaim("env-two-containers", ns).WarmPool("pool").Env("TOKEN", "a", "").Env("TOKEN", "b", "sidecar"),
		},
		"env with a relaxed name": {
			claim: testutil.MakeClaim("env-relaxed", ns).WarmPool("pool").Env("my.var-1 x", "a", ""),
		},
		"env twice for the default container": {
			claim:    testutil.MakeClaim("env-duplicate", ns).WarmPool("pool").Env("TOKEN", "a", "").Env("TOKEN", "b", ""),
			wantErrs: []string{"spec.env", msgEnvUnique},
		},
		"env twice for one container": {
			claim:    testutil.MakeClaim("env-duplicate-container", ns).WarmPool("pool").Env("TOKEN", "a", "main").Env("TOKEN", "b", "main"),
			wantErrs: []string{"spec.env", msgEnvUnique},
		},
		"env name with '='": {
			claim:    testutil.MakeClaim("env-equals", ns).WarmPool("pool").Env("A=B", "a", ""),
			wantErrs: []string{"spec.env[0].name", msgEnvName},
		},
		"env name with a tab": {
			claim:    testutil.MakeClaim("env-tab", ns).WarmPool("pool").Env("A\tB", "a", ""),
			wantErrs: []string{"spec.env[0].name", msgEnvName},
		},
		"empty env name": {
			claim:    testutil.MakeClaim("env-empty", ns).WarmPool("pool").Env("", "a", ""),
			wantErrs: []string{"spec.env[0].name"},
		},
		"env container name with uppercase letters": {
			claim:    testutil.MakeClaim("env-container-upper", ns).WarmPool("pool").Env("A", "a", "Main"),
			wantErrs: []string{"spec.env[0].containerName", msgEnvContainerName},
		},
		"128 env vars": {
			claim: withEnv(testutil.MakeClaim("env-128", ns).WarmPool("pool"), 128),
		},
		"129 env vars": {
			claim:    withEnv(testutil.MakeClaim("env-129", ns).WarmPool("pool"), 129),
			wantErrs: []string{"spec.env", "must have at most 128 items"},
		},

		// Volume claim templates.
		"volume claim templates with distinct names": {
			claim: testutil.MakeClaim("vct-distinct", ns).WarmPool("pool").VolumeClaimTemplate("data", "1Gi").VolumeClaimTemplate("cache", "1Gi"),
		},
		"volume claim templates with the same name": {
			claim:    testutil.MakeClaim("vct-same", ns).WarmPool("pool").VolumeClaimTemplate("data", "1Gi").VolumeClaimTemplate("data", "2Gi"),
			wantErrs: []string{"spec.volumeClaimTemplates", msgVCTUnique},
		},
		"volume claim template without a name": {
			claim:    testutil.MakeClaim("vct-no-name", ns).WarmPool("pool").VolumeClaimTemplate("", "1Gi"),
			wantErrs: []string{"spec.volumeClaimTemplates[0]", msgVCTName},
		},
		"17 volume claim templates": {
			claim:    withClaimVolumeClaimTemplates(testutil.MakeClaim("vct-17", ns).WarmPool("pool"), 17),
			wantErrs: []string{"spec.volumeClaimTemplates", "must have at most 16 items"},
		},
		"volume claim template with a storage class and limits": {
			claim: testutil.MakeClaim("vct-class", ns).WarmPool("pool").VolumeClaimTemplateWith("data", "1Gi", func(s *corev1.PersistentVolumeClaimSpec) {
				s.StorageClassName = ptr.To("standard")
				s.Resources.Limits = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
			}),
		},
		"volume claim template with dataSource": {
			claim: testutil.MakeClaim("vct-datasource", ns).WarmPool("pool").VolumeClaimTemplate("ok", "1Gi").VolumeClaimTemplateWith("data", "1Gi", func(s *corev1.PersistentVolumeClaimSpec) {
				s.DataSource = &corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.storage.k8s.io"), Kind: "VolumeSnapshot", Name: "theirs"}
			}),
			wantErrs: []string{"spec.volumeClaimTemplates", msgVCTForbidden("dataSource")},
		},
		"volume claim template with dataSourceRef": {
			claim: testutil.MakeClaim("vct-datasourceref", ns).WarmPool("pool").VolumeClaimTemplateWith("data", "1Gi", func(s *corev1.PersistentVolumeClaimSpec) {
				s.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "theirs"}
			}),
			wantErrs: []string{"spec.volumeClaimTemplates", msgVCTForbidden("dataSourceRef")},
		},
		"volume claim template with volumeName": {
			claim: testutil.MakeClaim("vct-volumename", ns).WarmPool("pool").VolumeClaimTemplateWith("data", "1Gi", func(s *corev1.PersistentVolumeClaimSpec) {
				s.VolumeName = "pv-1"
			}),
			wantErrs: []string{"spec.volumeClaimTemplates", msgVCTForbidden("volumeName")},
		},
		"volume claim template with selector": {
			claim: testutil.MakeClaim("vct-selector", ns).WarmPool("pool").VolumeClaimTemplateWith("data", "1Gi", func(s *corev1.PersistentVolumeClaimSpec) {
				s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}
			}),
			wantErrs: []string{"spec.volumeClaimTemplates", msgVCTForbidden("selector")},
		},
		"volume claim template with volumeAttributesClassName": {
			claim: testutil.MakeClaim("vct-vac", ns).WarmPool("pool").VolumeClaimTemplateWith("data", "1Gi", func(s *corev1.PersistentVolumeClaimSpec) {
				s.VolumeAttributesClassName = ptr.To("gold")
			}),
			wantErrs: []string{"spec.volumeClaimTemplates", msgVCTForbidden("volumeAttributesClassName")},
		},
		"volume claim templates with every forbidden field": {
			claim: testutil.MakeClaim("vct-all", ns).WarmPool("pool").VolumeClaimTemplateWith("data", "1Gi", func(s *corev1.PersistentVolumeClaimSpec) {
				s.VolumeName = "pv-1"
				s.Selector = &metav1.LabelSelector{}
			}),
			wantErrs: []string{msgVCTForbidden("volumeName"), msgVCTForbidden("selector")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			claim := tc.claim.Obj()
			err := env.Client.Create(t.Context(), claim)
			checkErr(t, "Creating claim "+claim.GetName(), err, tc.wantErrs)
		})
	}
}

// TestSandboxClaimReservedKeys checks that the CRD and extv1beta1's helpers, which code reading
// claims uses, agree on which additionalPodMetadata keys are reserved.
func TestSandboxClaimReservedKeys(t *testing.T) {
	ns := env.NewNamespace(t)
	keys := []string{
		"app",
		"team.example.com/owner",
		"sandbox.users.io/team",
		"agents.x-k8s.io/adoptable",
		"extensions.agents.x-k8s.io/x",
		"api.agents.x-k8s.io/v1alpha1-sandboxclaim-state",
		"x-k8s.io/x",         // not a subdomain of k8s.io
		"cluster.x-k8s.io/x", // another SIG's domain
		"kubernetes.io/hostname",
		"node.kubernetes.io/instance-type",
		"notkubernetes.io/x", // not a subdomain of kubernetes.io
		"kubernetes.io.example.com/x",
		"k8s.io/x",
		"foo.k8s.io/x",
		"example.com/k8s.io", // the name, not the prefix, says k8s.io
		safeToEvictAnnotation,
		"opentelemetry.io/trace-context",
	}
	for i, key := range keys {
		t.Run(key, func(t *testing.T) {
			label := testutil.MakeClaim(fmt.Sprintf("label-%d", i), ns).WarmPool("pool").PodLabel(key, "v").Obj()
			err := env.Client.Create(t.Context(), label)
			if got, want := err != nil, extv1beta1.IsReservedClaimLabelKey(key); got != want {
				t.Errorf("Label %q: rejected by the CRD = %t (%v), IsReservedClaimLabelKey = %t", key, got, err, want)
			}
			annotation := testutil.MakeClaim(fmt.Sprintf("annotation-%d", i), ns).WarmPool("pool").PodAnnotation(key, "v").Obj()
			err = env.Client.Create(t.Context(), annotation)
			if got, want := err != nil, extv1beta1.IsReservedClaimAnnotationKey(key); got != want {
				t.Errorf("Annotation %q: rejected by the CRD = %t (%v), IsReservedClaimAnnotationKey = %t", key, got, err, want)
			}
		})
	}
}

func TestSandboxClaimUpdateValidation(t *testing.T) {
	ns := env.NewNamespace(t)
	cases := map[string]struct {
		claim    *testutil.ClaimWrapper
		update   func(*extv1beta1.SandboxClaim)
		wantErrs []string // empty: the update is accepted
	}{
		"adding pod labels and a shutdown time": {
			claim: testutil.MakeClaim("relabel", ns).WarmPool("pool"),
			update: func(c *extv1beta1.SandboxClaim) {
				c.Spec.AdditionalPodMetadata.Labels = map[string]string{"team": "agents"}
				c.Spec.Lifecycle = &extv1beta1.ClaimLifecycle{ShutdownTime: ptr.To(metav1.NewTime(time.Now().Add(time.Hour).Truncate(time.Second)))}
			},
		},
		"adding a reserved label": {
			claim: testutil.MakeClaim("relabel-reserved", ns).WarmPool("pool"),
			update: func(c *extv1beta1.SandboxClaim) {
				c.Spec.AdditionalPodMetadata.Labels = map[string]string{reservedAgentsLabelKey: "x"}
			},
			wantErrs: []string{labelsPath, msgReservedLabel(reservedAgentsLabelKey)},
		},
		"adding a template reference to a pool claim": {
			claim: testutil.MakeClaim("add-template", ns).WarmPool("pool"),
			update: func(c *extv1beta1.SandboxClaim) {
				c.Spec.SandboxTemplateRef = &extv1beta1.SandboxTemplateReference{Name: "t"}
			},
			wantErrs: []string{msgExactlyOneRef},
		},
		"a negative TTL": {
			claim:    testutil.MakeClaim("ttl-update", ns).WarmPool("pool").TTLSecondsAfterFinished(10),
			update:   func(c *extv1beta1.SandboxClaim) { c.Spec.Lifecycle.TTLSecondsAfterFinished = ptr.To[int32](-10) },
			wantErrs: []string{"spec.lifecycle.ttlSecondsAfterFinished"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			claim := tc.claim.Obj()
			if err := env.Client.Create(ctx, claim); err != nil {
				t.Fatalf("Creating claim: %v", err)
			}
			tc.update(claim)
			checkErr(t, "Updating claim", env.Client.Update(ctx, claim), tc.wantErrs)
		})
	}
}

func TestSandboxClaimStatusValidation(t *testing.T) {
	ns := env.NewNamespace(t)
	ctx := t.Context()
	claim := testutil.MakeClaim("status", ns).WarmPool("pool").Obj()
	if err := env.Client.Create(ctx, claim); err != nil {
		t.Fatalf("Creating claim: %v", err)
	}
	cases := map[string]struct {
		status   extv1beta1.SandboxClaimStatus
		wantErrs []string
	}{
		"sandbox and observedGeneration": {
			status: extv1beta1.SandboxClaimStatus{
				Sandbox:            extv1beta1.ClaimSandboxStatus{Name: "pool-abcde", PodIPs: []string{"10.0.0.1", "fd00::1"}},
				ObservedGeneration: 1,
			},
		},
		"three pod IPs": {
			status: extv1beta1.SandboxClaimStatus{
				Sandbox: extv1beta1.ClaimSandboxStatus{Name: "pool-abcde", PodIPs: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}},
			},
			wantErrs: []string{"status.sandbox.podIPs", "must have at most 2 items"},
		},
		"negative observedGeneration": {
			status:   extv1beta1.SandboxClaimStatus{ObservedGeneration: -1},
			wantErrs: []string{"status.observedGeneration"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &extv1beta1.SandboxClaim{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), c); err != nil {
				t.Fatalf("Reading claim: %v", err)
			}
			c.Status = tc.status
			checkErr(t, "Writing claim status", env.Client.Status().Update(ctx, c), tc.wantErrs)
		})
	}
}

// dnsSubdomain returns a valid DNS subdomain of n characters: labels of 9 letters joined by dots.
func dnsSubdomain(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 && b.Len()%10 == 9 {
			b.WriteByte('.')
			continue
		}
		b.WriteByte('d')
	}
	s := b.String()
	if strings.HasSuffix(s, ".") {
		s = s[:len(s)-2] + "dd"
	}
	return s
}

func withPodLabels(w *testutil.ClaimWrapper, n int) *testutil.ClaimWrapper {
	for i := range n {
		w.PodLabel(fmt.Sprintf("label-%d", i), "x")
	}
	return w
}

func withEnv(w *testutil.ClaimWrapper, n int) *testutil.ClaimWrapper {
	for i := range n {
		w.Env(fmt.Sprintf("VAR_%d", i), "x", "")
	}
	return w
}

func withClaimVolumeClaimTemplates(w *testutil.ClaimWrapper, n int) *testutil.ClaimWrapper {
	for i := range n {
		w.VolumeClaimTemplate(fmt.Sprintf("v%d", i), "1Gi")
	}
	return w
}
