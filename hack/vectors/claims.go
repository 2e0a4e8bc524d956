package main

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// BuildClaimVectors are the claims the Go SDK builds (kubox.BuildClaim) for a table of options.
type BuildClaimVectors struct {
	// Now is the time every claim is built at.
	Now string `json:"now"`
	// Namespace is the client's namespace, which InNamespace (options.namespace) replaces.
	Namespace string `json:"namespace"`
	// Instants are the paths whose values are times, compared as instants (the SDKs write
	// different fractions of a second); durations are Go durations, compared as lengths ("10m0s"
	// is "600s").
	Instants  [][]string `json:"instants"`
	Durations [][]string `json:"durations"`
	// The created-by label's value is each SDK's own: the Go SDK's is replaced by createdByPython
	// or createdByTypeScript before comparing (constants).
	Cases []ClaimCase `json:"cases"`
}

// ClaimCase is one set of options, in a neutral spelling that each SDK's test maps onto its own
// (Go: With* options; Python: build_claim's keywords; TypeScript: ClaimOptions), and the claim.
type ClaimCase struct {
	Name    string         `json:"name"`
	Options ClaimOptions   `json:"options"`
	Go      []string       `json:"go"`
	Claim   map[string]any `json:"claim"`
}

// ClaimOptions are the options of a claim in the vectors' neutral spelling.
type ClaimOptions struct {
	Pool                string            `json:"pool,omitempty"`
	Template            string            `json:"template,omitempty"`
	Name                string            `json:"name,omitempty"`
	Namespace           string            `json:"namespace,omitempty"`
	TTLSeconds          float64           `json:"ttlSeconds,omitempty"`
	Env                 map[string]string `json:"env,omitempty"`
	Labels              map[string]string `json:"labels,omitempty"`
	PodLabels           map[string]string `json:"podLabels,omitempty"`
	PodAnnotations      map[string]string `json:"podAnnotations,omitempty"`
	SuspendAfterSeconds float64           `json:"suspendAfterSeconds,omitempty"`
	IdlePolicy          map[string]string `json:"idlePolicy,omitempty"`
	AllowDomains        []string          `json:"allowDomains,omitempty"`
	DenyDomains         []string          `json:"denyDomains,omitempty"`
	DenyCIDRs           []string          `json:"denyCIDRs,omitempty"`
	Snapshot            string            `json:"snapshot,omitempty"`
}

var claimCases = []struct {
	name string
	opts ClaimOptions
}{
	{"a pool and nothing else", ClaimOptions{Pool: "python"}},
	{"a template and a name", ClaimOptions{Template: "python", Name: "mine"}},
	{"every metadata option", ClaimOptions{Pool: "python", Namespace: "team-a", TTLSeconds: 3600.5,
		Env: map[string]string{"B": "2", "A": "1"}, Labels: map[string]string{"app": "ci"},
		PodLabels: map[string]string{"run": "42"}, PodAnnotations: map[string]string{"note": "x"}}},
	{"the created-by label cannot be overridden", ClaimOptions{Pool: "p", Labels: map[string]string{sandboxv1beta1.CreatedByLabel: "me"}}},
	{"a whole-second ttl", ClaimOptions{Template: "t", TTLSeconds: 60}},
	{"suspend after", ClaimOptions{Pool: "p", SuspendAfterSeconds: 600}},
	{"an idle policy", ClaimOptions{Pool: "p", IdlePolicy: map[string]string{"suspendAfter": "1h30m",
		"runningProcesses": string(sandboxv1beta1.IdleProcessPolicyIgnore), "wake": string(sandboxv1beta1.WakePolicyManual)}}},
	{"egress narrowed", ClaimOptions{Template: "t", AllowDomains: []string{"pypi.org", "*.pythonhosted.org"},
		DenyDomains: []string{"x.test"}, DenyCIDRs: []string{"203.0.113.0/24"}}},
	{"a snapshot", ClaimOptions{Template: "py", Snapshot: "numpy-loaded"}},
}

// now is when the vectors' claims are built: a fraction of a second that every SDK keeps.
var now = time.Date(2026, 12, 4, 8, 0, 0, 750_000_000, time.UTC)

func claimBuildVectors() (BuildClaimVectors, error) {
	v := BuildClaimVectors{
		Now: now.Format(time.RFC3339Nano), Namespace: "default",
		Instants:  [][]string{{"metadata", "annotations", extv1beta1.ClientFirstRequestedAtAnnotation}, {"spec", "lifecycle", "shutdownTime"}},
		Durations: [][]string{{"spec", "idlePolicy", "suspendAfter"}},
	}
	for _, c := range claimCases {
		src, opts, calls, err := goOptions(c.opts)
		if err != nil {
			return v, fmt.Errorf("case %q: %w", c.name, err)
		}
		claim := kubox.BuildClaim(v.Namespace, src, now, opts...)
		claim.APIVersion, claim.Kind = extv1beta1.GroupVersion.String(), "SandboxClaim"
		obj := jsonObject(claim)
		delete(obj, "status")
		v.Cases = append(v.Cases, ClaimCase{Name: c.name, Options: c.opts, Go: calls, Claim: obj})
	}
	return v, nil
}

// goOptions maps the neutral options onto the Go SDK's, and names the calls for the reader.
func goOptions(o ClaimOptions) (kubox.ClaimSource, []kubox.ClaimOption, []string, error) {
	src, calls := kubox.FromTemplate(o.Template), []string{fmt.Sprintf("FromTemplate(%q)", o.Template)}
	if o.Pool != "" {
		src, calls = kubox.FromPool(o.Pool), []string{fmt.Sprintf("FromPool(%q)", o.Pool)}
	}
	var opts []kubox.ClaimOption
	add := func(opt kubox.ClaimOption, call string, args ...any) {
		opts, calls = append(opts, opt), append(calls, fmt.Sprintf(call, args...))
	}
	if o.Name != "" {
		add(kubox.WithName(o.Name), "WithName(%q)", o.Name)
	}
	if o.Namespace != "" {
		add(kubox.InNamespace(o.Namespace), "InNamespace(%q)", o.Namespace)
	}
	if o.TTLSeconds != 0 {
		d := seconds(o.TTLSeconds)
		add(kubox.WithTTL(d), "WithTTL(%s)", d)
	}
	for _, m := range []struct {
		v    map[string]string
		opt  func(map[string]string) kubox.ClaimOption
		call string
	}{{o.Env, kubox.WithEnv, "WithEnv(%v)"}, {o.Labels, kubox.WithLabels, "WithLabels(%v)"},
		{o.PodLabels, kubox.WithPodLabels, "WithPodLabels(%v)"}, {o.PodAnnotations, kubox.WithPodAnnotations, "WithPodAnnotations(%v)"}} {
		if m.v != nil {
			add(m.opt(m.v), m.call, m.v)
		}
	}
	if o.SuspendAfterSeconds != 0 {
		d := seconds(o.SuspendAfterSeconds)
		add(kubox.WithSuspendAfter(d), "WithSuspendAfter(%s)", d)
	}
	if o.IdlePolicy != nil {
		d, err := time.ParseDuration(o.IdlePolicy["suspendAfter"])
		if err != nil {
			return src, nil, nil, err
		}
		p := sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: d},
			RunningProcesses: sandboxv1beta1.IdleProcessPolicy(o.IdlePolicy["runningProcesses"]), Wake: sandboxv1beta1.WakePolicy(o.IdlePolicy["wake"])}
		add(kubox.WithIdlePolicy(p), "WithIdlePolicy(%+v)", o.IdlePolicy)
	}
	if o.DenyDomains != nil || o.DenyCIDRs != nil {
		r := sandboxv1beta1.EgressRestriction{DenyDomains: o.DenyDomains, DenyCIDRs: o.DenyCIDRs}
		add(kubox.WithEgress(r), "WithEgress({DenyDomains: %q, DenyCIDRs: %q})", o.DenyDomains, o.DenyCIDRs)
	}
	if o.AllowDomains != nil {
		add(kubox.WithAllowDomains(o.AllowDomains...), "WithAllowDomains(%q)", o.AllowDomains)
	}
	if o.Snapshot != "" {
		add(kubox.WithSnapshot(o.Snapshot), "WithSnapshot(%q)", o.Snapshot)
	}
	return src, opts, calls, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
