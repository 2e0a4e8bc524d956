package kubox

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

func TestBuildClaim(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 123, time.UTC)
	requested := map[string]string{extv1beta1.ClientFirstRequestedAtAnnotation: "2026-05-01T12:00:00.000000123Z"}
	createdBy := map[string]string{sandboxv1beta1.CreatedByLabel: "go-client"}
	c := &Client{opts: Options{Namespace: "default"}}
	cases := map[string]struct {
		src  ClaimSource
		opts []ClaimOption
		want *extv1beta1.SandboxClaim
	}{
		"pool, generated name": {src: FromPool("python"), want: &extv1beta1.SandboxClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "kubox-", Labels: createdBy, Annotations: requested},
			Spec:       extv1beta1.SandboxClaimSpec{WarmPoolRef: &extv1beta1.SandboxWarmPoolReference{Name: "python"}},
		}},
		"template with every option": {src: FromTemplate("py"), opts: []ClaimOption{
			WithName("mine"), InNamespace("team"), WithTTL(90 * time.Minute),
			WithEnv(map[string]string{"B": "2", "A": "1"}), WithLabels(map[string]string{"app": "x"}),
			WithPodLabels(map[string]string{"team": "a"}), WithPodAnnotations(map[string]string{"note": "hi"}),
		}, want: &extv1beta1.SandboxClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "mine",
				Labels: map[string]string{"app": "x", sandboxv1beta1.CreatedByLabel: "go-client"}, Annotations: requested},
			Spec: extv1beta1.SandboxClaimSpec{
				SandboxTemplateRef: &extv1beta1.SandboxTemplateReference{Name: "py"},
				Lifecycle: &extv1beta1.ClaimLifecycle{ShutdownTime: ptrTime(time.Date(2026, 5, 1, 13, 30, 0, 0, time.UTC)),
					ShutdownPolicy: extv1beta1.ClaimShutdownPolicyDelete},
				Env:                   []extv1beta1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
				AdditionalPodMetadata: extv1beta1.AdditionalPodMetadata{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "hi"}},
			},
		}},
		"snapshot": {src: FromTemplate("py"), opts: []ClaimOption{WithSnapshot("numpy-loaded")},
			want: &extv1beta1.SandboxClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "kubox-", Labels: createdBy, Annotations: requested},
				Spec: extv1beta1.SandboxClaimSpec{SandboxTemplateRef: &extv1beta1.SandboxTemplateReference{Name: "py"},
					SnapshotRef: &sandboxv1beta1.SnapshotReference{Name: "numpy-loaded"}},
			}},
		"idle policy": {src: FromPool("p"), opts: []ClaimOption{WithSuspendAfter(10 * time.Minute)},
			want: &extv1beta1.SandboxClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "kubox-", Labels: createdBy, Annotations: requested},
				Spec: extv1beta1.SandboxClaimSpec{WarmPoolRef: &extv1beta1.SandboxWarmPoolReference{Name: "p"},
					IdlePolicy: &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: 10 * time.Minute}}},
			}},
		"full idle policy, the last option wins": {src: FromPool("p"), opts: []ClaimOption{WithSuspendAfter(time.Hour),
			WithIdlePolicy(sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: time.Minute},
				RunningProcesses: sandboxv1beta1.IdleProcessPolicyIgnore, Wake: sandboxv1beta1.WakePolicyManual})},
			want: &extv1beta1.SandboxClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "kubox-", Labels: createdBy, Annotations: requested},
				Spec: extv1beta1.SandboxClaimSpec{WarmPoolRef: &extv1beta1.SandboxWarmPoolReference{Name: "p"},
					IdlePolicy: &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: time.Minute},
						RunningProcesses: sandboxv1beta1.IdleProcessPolicyIgnore, Wake: sandboxv1beta1.WakePolicyManual}},
			}},
		"egress narrowed": {src: FromTemplate("t"), opts: []ClaimOption{WithEgress(sandboxv1beta1.EgressRestriction{DenyDomains: []string{"x.test"}}),
			WithAllowDomains("pypi.org"), WithAllowDomains("*.pythonhosted.org")},
			want: &extv1beta1.SandboxClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "kubox-", Labels: createdBy, Annotations: requested},
				Spec: extv1beta1.SandboxClaimSpec{SandboxTemplateRef: &extv1beta1.SandboxTemplateReference{Name: "t"},
					Egress: &sandboxv1beta1.EgressRestriction{AllowDomains: []string{"pypi.org", "*.pythonhosted.org"}, DenyDomains: []string{"x.test"}}},
			}},
		"created-by cannot be overridden": {src: FromPool("p"), opts: []ClaimOption{WithLabels(map[string]string{sandboxv1beta1.CreatedByLabel: "me"})},
			want: &extv1beta1.SandboxClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "kubox-", Labels: createdBy, Annotations: requested},
				Spec:       extv1beta1.SandboxClaimSpec{WarmPoolRef: &extv1beta1.SandboxWarmPoolReference{Name: "p"}},
			}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := buildClaim(tc.src, c.claimConfig(tc.opts), now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("buildClaim (-want +got):\n%s", diff)
			}
		})
	}
}

func ptrTime(t time.Time) *metav1.Time {
	m := metav1.NewTime(t)
	return &m
}

// claimWith returns a claim of generation 2 with a Ready condition of that generation.
func claimWith(status metav1.ConditionStatus, reason, msg, sandbox string) *extv1beta1.SandboxClaim {
	c := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Generation: 2}}
	c.Spec.WarmPoolRef = &extv1beta1.SandboxWarmPoolReference{Name: "python"}
	c.Status.ObservedGeneration = 2
	c.Status.Sandbox.Name = sandbox
	c.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: status, Reason: reason, Message: msg, ObservedGeneration: 2}}
	return c
}

func TestClaimState(t *testing.T) {
	stale := claimWith(metav1.ConditionTrue, "DependenciesReady", "", "sb")
	stale.Generation = 3
	cases := map[string]struct {
		claim     *extv1beta1.SandboxClaim
		wantReady bool
		wantError []string
	}{
		"no condition":   {claim: &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}},
		"stale":          {claim: stale},
		"ready":          {claim: claimWith(metav1.ConditionTrue, "DependenciesReady", "Pod is Ready", "sb"), wantReady: true},
		"ready, no name": {claim: claimWith(metav1.ConditionTrue, "DependenciesReady", "Pod is Ready", "")},
		"starting":       {claim: claimWith(metav1.ConditionFalse, "DependenciesNotReady", "Pod exists with phase: Pending", "sb")},
		"suspended":      {claim: claimWith(metav1.ConditionFalse, "SandboxSuspended", "Sandbox is suspended", "sb"), wantReady: true},
		"pool missing": {claim: claimWith(metav1.ConditionFalse, "WarmPoolNotFound", `SandboxWarmPool "python" not found`, ""),
			wantError: []string{"SandboxClaim ns/c", "WarmPoolNotFound", `create SandboxWarmPool "python" in namespace ns`}},
		"expired": {claim: claimWith(metav1.ConditionFalse, "ClaimExpired", "expired", "sb"),
			wantError: []string{"ClaimExpired", "WithTTL"}},
		"env rejected": {claim: claimWith(metav1.ConditionFalse, "EnvVarsInjectionRejected", "not allowed", ""),
			wantError: []string{"envVarsInjectionPolicy"}},
		"egress rejected": {claim: claimWith(metav1.ConditionFalse, "EgressRejected", "spec.egress.allowDomains evil.example is not covered", ""),
			wantError: []string{"EgressRejected", "evil.example is not covered", "WithAllowDomains among or below"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ready, err := claimState(tc.claim)
			if ready != tc.wantReady {
				t.Errorf("ready = %v; want %v", ready, tc.wantReady)
			}
			if len(tc.wantError) == 0 {
				if err != nil {
					t.Errorf("err = %v; want none", err)
				}
				return
			}
			if !errors.Is(err, ErrClaimFailed) {
				t.Fatalf("err = %v; want ErrClaimFailed", err)
			}
			for _, w := range tc.wantError {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %q; want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestEveryTerminalClaimReasonFails: the SDK fails a claim for every reason of the API's rule
// (extv1beta1.ClaimTerminalReasons), each with what to do.
func TestEveryTerminalClaimReasonFails(t *testing.T) {
	for _, reason := range extv1beta1.ClaimTerminalReasons() {
		t.Run(reason, func(t *testing.T) {
			ready, err := claimState(claimWith(metav1.ConditionFalse, reason, "the message", ""))
			if ready || !errors.Is(err, ErrClaimFailed) {
				t.Fatalf("claimState = %v, %v; want not ready and ErrClaimFailed", ready, err)
			}
			if !strings.Contains(err.Error(), reason+": the message; ") || strings.HasSuffix(err.Error(), "; ") {
				t.Errorf("err = %q; want the reason, the message and what to do", err)
			}
		})
	}
}

func TestSandboxStates(t *testing.T) {
	sb := func(gen int64, podIPs []string, conds ...metav1.Condition) *sandboxv1beta1.Sandbox {
		s := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", Generation: gen}}
		s.Status.PodIPs, s.Status.Conditions = podIPs, conds
		return s
	}
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "DependenciesReady", ObservedGeneration: 2}
	suspended := metav1.Condition{Type: "Suspended", Status: metav1.ConditionTrue, Reason: "PodTerminated", ObservedGeneration: 2}
	terminating := metav1.Condition{Type: "Suspended", Status: metav1.ConditionFalse, Reason: "PodTerminating", ObservedGeneration: 2}
	expired := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "SandboxExpired", ObservedGeneration: 2}
	cases := map[string]struct {
		sb            *sandboxv1beta1.Sandbox
		state         sandboxState
		want, wantErr bool
	}{
		"ready":                   {sb: sb(2, []string{"10.0.0.1"}, ready), state: sandboxReady, want: true},
		"ready of an old spec":    {sb: sb(3, []string{"10.0.0.1"}, ready), state: sandboxReady},
		"ready without an IP":     {sb: sb(2, nil, ready), state: sandboxReady},
		"expired":                 {sb: sb(2, nil, expired), state: sandboxReady, wantErr: true},
		"suspended":               {sb: sb(2, nil, suspended), state: sandboxSuspended, want: true},
		"suspending":              {sb: sb(2, []string{"10.0.0.1"}, terminating), state: sandboxSuspended},
		"suspended, old spec":     {sb: sb(3, nil, suspended), state: sandboxSuspended},
		"no conditions, suspend?": {sb: sb(2, nil), state: sandboxSuspended},
		"expired, suspend?":       {sb: sb(2, nil, expired), state: sandboxSuspended, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.state(tc.sb)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("state = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, ErrNotReady) {
				t.Errorf("err = %v; want ErrNotReady", err)
			}
		})
	}
}

func TestCreateClaim(t *testing.T) {
	kube := fake.NewClientBuilder().WithScheme(newScheme()).Build()
	c := &Client{opts: Options{Namespace: "default"}, kube: kube}

	got, err := c.CreateClaim(t.Context(), FromTemplate("py"), WithName("mine"), WithTTL(time.Hour))
	if err != nil {
		t.Fatalf("CreateClaim: %v", err)
	}
	stored := &extv1beta1.SandboxClaim{}
	if err := kube.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "mine"}, stored); err != nil {
		t.Fatalf("reading the created claim: %v", err)
	}
	if diff := cmp.Diff(stored, got); diff != "" {
		t.Errorf("CreateClaim returned (-stored +returned):\n%s", diff)
	}
	if got.Spec.SandboxTemplateRef == nil || got.Spec.SandboxTemplateRef.Name != "py" || got.Spec.Lifecycle == nil ||
		got.Labels[sandboxv1beta1.CreatedByLabel] != CreatedBy {
		t.Errorf("claim spec %+v, labels %v; want templateRef py, a lifecycle and created-by %s", got.Spec, got.Labels, CreatedBy)
	}

	if _, err := c.CreateClaim(t.Context(), FromTemplate("py"), WithName("mine")); err == nil ||
		!strings.Contains(err.Error(), `creating a SandboxClaim from template "py" in namespace default`) {
		t.Errorf("CreateClaim of an existing name: %v; want an error naming the source and namespace", err)
	}
	if _, err := c.CreateClaim(t.Context(), ClaimSource{}); err == nil || !strings.Contains(err.Error(), "CreateClaim needs a source") {
		t.Errorf("CreateClaim without a source: %v; want an error asking for one", err)
	}
}
