package v1beta1

import (
	"strings"
	"testing"
)

// TestWireKeys pins the annotation keys and label values shared with agent-sandbox: renaming one
// breaks every client and object written by agent-sandbox (API.md, "Labels and annotations").
func TestWireKeys(t *testing.T) {
	cases := map[string]struct{ got, want string }{
		"SandboxNameAnnotation":               {SandboxNameAnnotation, "agents.x-k8s.io/sandbox-name"},
		"DeprecatedSandboxNameLabel":          {DeprecatedSandboxNameLabel, "agents.x-k8s.io/sandbox-name"},
		"ControllerFirstObservedAtAnnotation": {ControllerFirstObservedAtAnnotation, "agents.x-k8s.io/controller-first-observed-at"},
		"ClientFirstRequestedAtAnnotation":    {ClientFirstRequestedAtAnnotation, "agents.x-k8s.io/client-first-requested-at"},
		"ClaimFirstReadyAtAnnotation":         {ClaimFirstReadyAtAnnotation, "agents.x-k8s.io/claim-first-ready-at"},
		"SafeToEvictAnnotation":               {SafeToEvictAnnotation, "cluster-autoscaler.kubernetes.io/safe-to-evict"},
		"LaunchTypeWarm":                      {LaunchTypeWarm, "warm"},
		"LaunchTypeCold":                      {LaunchTypeCold, "cold"},
		"CreatedByGoClient":                   {CreatedByGoClient, "go-client"},
		"CreatedByPythonClient":               {CreatedByPythonClient, "python-client"},
		"CreatedByController":                 {CreatedByController, "controller"},
		"CreatedByUnknown":                    {CreatedByUnknown, "unknown"},
		"GroupVersion":                        {GroupVersion.String(), "extensions.agents.x-k8s.io/v1beta1"},
	}
	for name, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", name, tc.got, tc.want)
		}
	}
}

// TestWireConditions pins the condition types and reasons agent-sandbox's clients match on; its
// Python SDK treats several claim reasons as terminal.
func TestWireConditions(t *testing.T) {
	cases := map[string]struct{ got, want string }{
		"ClaimConditionReady":                  {ClaimConditionReady, "Ready"},
		"ClaimConditionFinished":               {ClaimConditionFinished, "Finished"},
		"ClaimReasonTemplateNotFound":          {ClaimReasonTemplateNotFound, "TemplateNotFound"},
		"ClaimReasonWarmPoolNotFound":          {ClaimReasonWarmPoolNotFound, "WarmPoolNotFound"},
		"ClaimReasonAdoptionConflict":          {ClaimReasonAdoptionConflict, "AdoptionConflict"},
		"ClaimReasonSandboxCreatePending":      {ClaimReasonSandboxCreatePending, "SandboxCreatePending"},
		"ClaimReasonInvalidMetadata":           {ClaimReasonInvalidMetadata, "InvalidMetadata"},
		"ClaimReasonEnvVarsInjectionRejected":  {ClaimReasonEnvVarsInjectionRejected, "EnvVarsInjectionRejected"},
		"ClaimReasonVolumeClaimTemplatesError": {ClaimReasonVolumeClaimTemplatesError, "VolumeClaimTemplatesError"},
		"ClaimReasonClaimExpired":              {ClaimReasonClaimExpired, "ClaimExpired"},
		"ClaimReasonSandboxExpired":            {ClaimReasonSandboxExpired, "SandboxExpired"},
		"ClaimReasonSandboxMissing":            {ClaimReasonSandboxMissing, "SandboxMissing"},
		"ClaimReasonSandboxNotReady":           {ClaimReasonSandboxNotReady, "SandboxNotReady"},
		"ClaimReasonReconcilerError":           {ClaimReasonReconcilerError, "ReconcilerError"},
	}
	for name, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", name, tc.got, tc.want)
		}
	}
}

func TestNetworkPolicyName(t *testing.T) {
	if got, want := NetworkPolicyName("python-runtime-template"), "python-runtime-template-network-policy"; got != want {
		t.Errorf("NetworkPolicyName = %q, want %q", got, want)
	}
	// The CRD's rule on template names (238 in its CEL rule) must keep this within an object name.
	if MaxManagedTemplateNameLength != 238 {
		t.Errorf("MaxManagedTemplateNameLength = %d; the CRD rule says 238", MaxManagedTemplateNameLength)
	}
	if n := len(NetworkPolicyName(strings.Repeat("t", MaxManagedTemplateNameLength))); n != 253 {
		t.Errorf("The NetworkPolicy of the longest managed template name has %d characters; want 253", n)
	}
}

func TestWarmPoolNames(t *testing.T) {
	if got, want := WarmPoolMemberGenerateName("python"), "python-"; got != want {
		t.Errorf("WarmPoolMemberGenerateName = %q, want %q", got, want)
	}
	a, b := WarmPoolMemberName("python"), WarmPoolMemberName("python")
	if !strings.HasPrefix(a, "python-") || len(a) != len("python-")+5 || a == b {
		t.Errorf("WarmPoolMemberName(python) = %q, then %q; want python- and 5 random characters, different each time", a, b)
	}
	long := strings.Repeat("p", 70)
	if got := WarmPoolMemberName(long); len(got) != 63 || !strings.HasPrefix(got, long[:58]) {
		t.Errorf("WarmPoolMemberName of a 70-character pool = %q (%d characters); want its first 58 and 5 random", got, len(got))
	}
	// NameHash("my-sandbox") is pinned by api/v1beta1's tests.
	if got, want := WarmPoolSelector("my-sandbox"), "agents.x-k8s.io/warm-pool-sandbox=374de8f5"; got != want {
		t.Errorf("WarmPoolSelector = %q, want %q", got, want)
	}
}

func TestReservedClaimKeys(t *testing.T) {
	cases := map[string]struct {
		key                  string
		wantLabel, wantAnnot bool
	}{
		"no prefix":                     {key: "app"},
		"user domain":                   {key: "sandbox.users.io/team"},
		"agents.x-k8s.io":               {key: "agents.x-k8s.io/adoptable", wantLabel: true, wantAnnot: true},
		"extensions.agents.x-k8s.io":    {key: "extensions.agents.x-k8s.io/x", wantLabel: true, wantAnnot: true},
		"subdomain of agents.x-k8s.io":  {key: "api.agents.x-k8s.io/state", wantLabel: true, wantAnnot: true},
		"x-k8s.io is not k8s.io":        {key: "x-k8s.io/x"},
		"another sigs domain":           {key: "cluster.x-k8s.io/x"},
		"kubernetes.io":                 {key: "kubernetes.io/hostname", wantLabel: true, wantAnnot: true},
		"subdomain of kubernetes.io":    {key: "node.kubernetes.io/x", wantLabel: true, wantAnnot: true},
		"suffix without a dot":          {key: "notkubernetes.io/x"},
		"kubernetes.io as a label":      {key: "kubernetes.io.example.com/x"},
		"k8s.io":                        {key: "k8s.io/x", wantLabel: true, wantAnnot: true},
		"subdomain of k8s.io":           {key: "foo.k8s.io/x", wantLabel: true, wantAnnot: true},
		"k8s.io in the name":            {key: "example.com/k8s.io"},
		"safe-to-evict":                 {key: SafeToEvictAnnotation, wantLabel: true},
		"other cluster-autoscaler key":  {key: "cluster-autoscaler.kubernetes.io/enable-ds-eviction", wantLabel: true, wantAnnot: true},
		"trace context is not reserved": {key: "opentelemetry.io/trace-context"},
		"empty":                         {key: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := IsReservedClaimLabelKey(tc.key); got != tc.wantLabel {
				t.Errorf("IsReservedClaimLabelKey(%q) = %t, want %t", tc.key, got, tc.wantLabel)
			}
			if got := IsReservedClaimAnnotationKey(tc.key); got != tc.wantAnnot {
				t.Errorf("IsReservedClaimAnnotationKey(%q) = %t, want %t", tc.key, got, tc.wantAnnot)
			}
		})
	}
}

func TestIsEndUserAnnotationKey(t *testing.T) {
	cases := map[string]struct {
		key  string
		want bool
	}{
		"a bare name":                    {key: "owner", want: true},
		"a bare name with - and _":       {key: "run_id-2", want: true},
		"a domain prefix":                {key: "sandbox.users.io/owner"},
		"a prefix without a dot":         {key: "users/owner"},
		"CRI-O's dotted runtime key":     {key: "io.kubernetes.cri-o.userns-mode"},
		"kata's dotted runtime key":      {key: "io.katacontainers.config.hypervisor.kernel_params"},
		"gVisor's dotted runtime key":    {key: "dev.gvisor.spec.mount.data.share"},
		"containerd's dotted legacy key": {key: "io.kubernetes.cri.untrusted-workload"},
		"empty":                          {key: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := IsEndUserAnnotationKey(tc.key); got != tc.want {
				t.Errorf("IsEndUserAnnotationKey(%q) = %t, want %t", tc.key, got, tc.want)
			}
		})
	}
}
