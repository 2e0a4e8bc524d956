package sandboxclaim

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// TestClaimFieldsCoverSpec fails when SandboxClaimSpec gains a field that claimFields does not
// classify: a new field must say whether a warm member can serve it before it can ship.
func TestClaimFieldsCoverSpec(t *testing.T) {
	var want []string
	st := reflect.TypeOf(extv1beta1.SandboxClaimSpec{})
	for i := range st.NumField() {
		want = append(want, strings.Split(st.Field(i).Tag.Get("json"), ",")[0])
	}
	var got []string
	for _, f := range claimFields {
		got = append(got, f.name)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("claimFields does not list SandboxClaimSpec's fields in order (-spec +table):\n%s\nfix: add a row for the new field to claimFields in claimfields.go", diff)
	}
}

// TestClaimFieldsRowsAgree checks each row's class against its functions: a class that depends on
// the template has a fitsWarm, and every row says where its field is checked.
func TestClaimFieldsRowsAgree(t *testing.T) {
	for _, f := range claimFields {
		switch f.warm {
		case fitsAnyMember:
			if f.fitsWarm != nil {
				t.Errorf("claimFields row %q: warm %q has a fitsWarm; fix: drop fitsWarm or change warm", f.name, f.warm)
			}
		case fitsByAgent:
			// validate may stand in for fitsWarm: it fails a claim whose template has no agent.
			if f.fitsWarm == nil && f.validate == nil {
				t.Errorf("claimFields row %q: warm %q needs a fitsWarm or a validate that requires the agent; fix: add one", f.name, f.warm)
			}
		case fitsConditional, needsCold:
			if f.fitsWarm == nil {
				t.Errorf("claimFields row %q: warm %q needs a fitsWarm; fix: add one", f.name, f.warm)
			}
		default:
			t.Errorf("claimFields row %q: unknown warm %q", f.name, f.warm)
		}
		if f.validate == nil && f.later == "" {
			t.Errorf("claimFields row %q: neither validate nor later says where the field is checked", f.name)
		}
	}
}

// TestClaimFitsWarm is the warm-or-cold gate of acquireSandbox: a claim that sets a field a warm
// member cannot serve must never be bound to one (the member would run without it).
func TestClaimFitsWarm(t *testing.T) {
	agent := agentTemplate(extv1beta1.EnvVarsInjectionPolicyAllowed)
	withSnapshot := agentTemplate(extv1beta1.EnvVarsInjectionPolicyAllowed)
	withSnapshot.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: "base"}
	cases := map[string]struct {
		spec extv1beta1.SandboxClaimSpec
		tpl  *extv1beta1.SandboxTemplate
		want bool
	}{
		"nothing set":          {tpl: agent, want: true},
		"metadata and idle":    {spec: extv1beta1.SandboxClaimSpec{AdditionalPodMetadata: extv1beta1.AdditionalPodMetadata{Labels: map[string]string{"a": "b"}}, IdlePolicy: &sandboxv1beta1.IdlePolicy{}}, tpl: agent, want: true},
		"env to the agent":     {spec: extv1beta1.SandboxClaimSpec{Env: []extv1beta1.EnvVar{{Name: "A", Value: "1"}}}, tpl: agent, want: true},
		"env without an agent": {spec: extv1beta1.SandboxClaimSpec{Env: []extv1beta1.EnvVar{{Name: "A", Value: "1"}}}, tpl: makeTemplate().Obj()},
		"a volume claim":       {spec: extv1beta1.SandboxClaimSpec{VolumeClaimTemplates: []sandboxv1beta1.PersistentVolumeClaimTemplate{{}}}, tpl: agent},
		"egress credentials the template does not cover": {spec: extv1beta1.SandboxClaimSpec{Egress: &sandboxv1beta1.EgressRestriction{Credentials: []sandboxv1beta1.EgressCredential{{Domains: []string{"evil.example"}}}}}, tpl: agent},
		"the members' snapshot":                          {spec: extv1beta1.SandboxClaimSpec{SnapshotRef: &sandboxv1beta1.SnapshotReference{Name: "base"}}, tpl: withSnapshot, want: true},
		"another snapshot":                               {spec: extv1beta1.SandboxClaimSpec{SnapshotRef: &sandboxv1beta1.SnapshotReference{Name: "other"}}, tpl: withSnapshot},
		"one cold field among warm ones":                 {spec: extv1beta1.SandboxClaimSpec{Env: []extv1beta1.EnvVar{{Name: "A", Value: "1"}}, SnapshotRef: &sandboxv1beta1.SnapshotReference{Name: "other"}}, tpl: withSnapshot},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := claimFitsWarm(&tc.spec, tc.tpl); got != tc.want {
				t.Errorf("claimFitsWarm() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestClaimFieldsAgreeWithTakesSettings checks the rows delivered by the agent against the api's
// TakesSettings and SettingsInputs (which kubox-router's cache keeps): setting one field alone
// makes a warm sandbox take settings exactly when its row says the agent delivers it.
func TestClaimFieldsAgreeWithTakesSettings(t *testing.T) {
	samples := map[string]extv1beta1.SandboxClaimSpec{
		"warmPoolRef":           {WarmPoolRef: &extv1beta1.SandboxWarmPoolReference{Name: "p"}},
		"sandboxTemplateRef":    {SandboxTemplateRef: &extv1beta1.SandboxTemplateReference{Name: "t"}},
		"lifecycle":             {Lifecycle: &extv1beta1.ClaimLifecycle{}},
		"additionalPodMetadata": {AdditionalPodMetadata: extv1beta1.AdditionalPodMetadata{Labels: map[string]string{"a": "b"}}},
		"env":                   {Env: []extv1beta1.EnvVar{{Name: "A", Value: "1"}}},
		"volumeClaimTemplates":  {VolumeClaimTemplates: []sandboxv1beta1.PersistentVolumeClaimTemplate{{}}},
		"secretFiles":           {SecretFiles: []extv1beta1.SecretFile{{SecretName: "s", MountPath: "/etc/claim"}}},
		"idlePolicy":            {IdlePolicy: &sandboxv1beta1.IdlePolicy{}},
		"egress":                {Egress: &sandboxv1beta1.EgressRestriction{}},
		"snapshotRef":           {SnapshotRef: &sandboxv1beta1.SnapshotReference{Name: "s"}},
	}
	for _, f := range claimFields {
		spec, ok := samples[f.name]
		if !ok {
			t.Errorf("no sample claim sets %q; fix: add one to samples in this test", f.name)
			continue
		}
		want := f.warm == fitsByAgent
		if got := spec.TakesSettings(true); got != want {
			t.Errorf("field %q: TakesSettings(warm) = %v, but its claimFields row says %q; fix: make defaults.go's TakesSettings and the row agree", f.name, got, f.warm)
		}
		inputs := spec.SettingsInputs()
		if got := inputs.TakesSettings(true); got != want {
			t.Errorf("field %q: SettingsInputs().TakesSettings(warm) = %v, want %v; fix: SettingsInputs must keep the field", f.name, got, want)
		}
	}
}
