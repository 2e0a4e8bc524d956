package cli

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// claimFlags are the flags of the commands that create a claim: claim and run.
type claimFlags struct {
	source
	ttl          time.Duration
	suspendAfter time.Duration
	env          []string
	labels       []string
	allowDomains []string
	denyDomains  []string
	denyCIDRs    []string
	snapshot     string
}

// domainPattern is the form of an egress domain, as the API validates it.
var domainPattern = regexp.MustCompile(`^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// The bounds of an idle policy's suspendAfter, as the API validates them.
const (
	minSuspendAfter = 30 * time.Second
	maxSuspendAfter = 8760 * time.Hour
)

func (f *claimFlags) addFlags(cmd *cobra.Command, g *globalOptions) {
	f.source.addFlags(cmd)
	registerSourceCompletions(cmd, g)
	cmd.Flags().DurationVar(&f.ttl, "ttl", 0, "delete the claim and its sandbox this long from now, even if kubox is gone (e.g. 30m, 2h); 0 keeps it until deleted")
	cmd.Flags().DurationVar(&f.suspendAfter, "suspend-after", 0, "suspend the sandbox after this long without activity (requests through kubox-router, processes other than its main command), from 30s to 8760h; the next request wakes it; 0 keeps the template's idle policy")
	cmd.Flags().StringArrayVar(&f.env, "env", nil, "environment variable K=V for the sandbox's containers (repeatable; the template must allow it)")
	cmd.Flags().StringArrayVar(&f.labels, "label", nil, "label K=V for the claim (repeatable)")
	cmd.Flags().StringSliceVar(&f.allowDomains, "allow-domain", nil, "let the sandbox reach only these names (or *.wildcards) of those its template's egress allows (repeatable or comma-separated)")
	cmd.Flags().StringSliceVar(&f.denyDomains, "deny-domain", nil, "refuse these names (or *.wildcards) besides those the template's egress denies (repeatable or comma-separated)")
	cmd.Flags().StringSliceVar(&f.denyCIDRs, "deny-cidr", nil, "refuse these addresses (CIDRs such as 203.0.113.0/24), whatever name resolves to them, besides those the template's egress denies (repeatable or comma-separated)")
	cmd.Flags().StringVar(&f.snapshot, "snapshot", "", "start the sandbox from this SandboxSnapshot (kubox snapshot), its processes and memory as they were; it must be of a sandbox of the same template")
}

// check validates the flags before kubox talks to the cluster.
func (f *claimFlags) check(command string) error {
	if err := f.validate(command); err != nil {
		return err
	}
	if f.ttl < 0 {
		return fmt.Errorf("--ttl %s is negative: give how long the claim may live, e.g. --ttl 1h", f.ttl)
	}
	if f.suspendAfter != 0 && (f.suspendAfter < minSuspendAfter || f.suspendAfter > maxSuspendAfter) {
		return fmt.Errorf("--suspend-after %s is outside %s to %s: give how long the sandbox may sit idle, e.g. --suspend-after 15m",
			f.suspendAfter, minSuspendAfter, maxSuspendAfter)
	}
	for _, d := range append(slices.Clone(f.allowDomains), f.denyDomains...) {
		if !domainPattern.MatchString(d) {
			return fmt.Errorf("--allow-domain/--deny-domain %q is not a domain: give a lowercase name such as pypi.org, or *.pythonhosted.org for the names below it", d)
		}
	}
	for _, c := range f.denyCIDRs {
		if _, err := netip.ParsePrefix(c); err != nil {
			return fmt.Errorf("--deny-cidr %q is not a CIDR: give an address range such as 203.0.113.0/24 or 2001:db8::/32", c)
		}
	}
	if _, err := keyValues("env", f.env); err != nil {
		return err
	}
	_, err := keyValues("label", f.labels)
	return err
}

// options turns the flags, checked by check, into the SDK's claim options.
func (f *claimFlags) options(name, ns string) []kubox.ClaimOption {
	env, _ := keyValues("env", f.env)
	lbls, _ := keyValues("label", f.labels)
	opts := []kubox.ClaimOption{kubox.WithName(name), kubox.InNamespace(ns)}
	if f.ttl > 0 {
		opts = append(opts, kubox.WithTTL(f.ttl))
	}
	if f.suspendAfter > 0 {
		opts = append(opts, kubox.WithSuspendAfter(f.suspendAfter))
	}
	if env != nil {
		opts = append(opts, kubox.WithEnv(env))
	}
	if lbls != nil {
		opts = append(opts, kubox.WithLabels(lbls))
	}
	if len(f.allowDomains) > 0 || len(f.denyDomains) > 0 || len(f.denyCIDRs) > 0 {
		opts = append(opts, kubox.WithEgress(sandboxv1beta1.EgressRestriction{
			AllowDomains: f.allowDomains, DenyDomains: f.denyDomains, DenyCIDRs: f.denyCIDRs}))
	}
	if f.snapshot != "" {
		opts = append(opts, kubox.WithSnapshot(f.snapshot))
	}
	return opts
}

func (f *claimFlags) sdkSource() kubox.ClaimSource {
	if f.pool != "" {
		return kubox.FromPool(f.pool)
	}
	return kubox.FromTemplate(f.template)
}

// nameAlphabet is the API server's alphabet for generated names (no vowels, no 0, 1, 3).
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// newClaimName is a name like the API server generates for generateName "kubox-". kubox picks
// it itself so that it can show the claim's progress while the SDK waits for it.
func newClaimName() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	for i := range b {
		b[i] = nameAlphabet[int(b[i])%len(nameAlphabet)]
	}
	return kubox.ClaimGenerateName + string(b)
}

type claimOptions struct {
	claimFlags
	output
	name string
	wait bool
}

func newClaim(g *globalOptions) *cobra.Command {
	o := &claimOptions{}
	cmd := &cobra.Command{
		Use:   "claim (--pool POOL | --template TEMPLATE)",
		Short: "Claim a sandbox from a warm pool or a template and wait until it is Ready",
		Long: `Create a SandboxClaim that takes a ready sandbox from the SandboxWarmPool --pool, or starts a
new one from the SandboxTemplate --template, wait until it is Ready (at most --ready-timeout),
and print the claim and its sandbox. While waiting, the claim's state is shown on stderr: a
spinner on a terminal, a line per change otherwise.

The claim stays until kubox delete --claim NAME, or until --ttl passes. When it fails (the pool
or template does not exist, --env is not allowed, ...) or is not Ready in time, it is deleted and
kubox says why.

--suspend-after sets the claim's idle policy: the sandbox is suspended (its Pod deleted, its
volumes kept) after that long without activity, and the next request through kubox-router, from
someone allowed to resume it, wakes it. kubox get shows its MODE, IDLE reason and LAST ACTIVE time.`,
		Example: `  # A sandbox from the warm pool "python", deleted after an hour
  kubox claim --pool python --ttl 1h

  # A new sandbox from a template, named, with environment and a label, as YAML
  kubox claim --template python --name my-box --env MODE=test --label team=ml -o yaml

  # A sandbox suspended after 15 minutes without activity, woken by the next request
  kubox claim --pool python --suspend-after 15m

  # Create the claim and return at once
  kubox claim --pool python --wait=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check("claim"); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd, g)
		},
	}
	o.addFlags(cmd, g)
	o.addFlag(cmd)
	cmd.Flags().StringVar(&o.name, "name", "", "name of the claim (default: kubox- and five random characters)")
	cmd.Flags().BoolVar(&o.wait, "wait", true, "wait until the claim is Ready; --wait=false creates it and returns")
	return cmd
}

func (o *claimOptions) run(cmd *cobra.Command, g *globalOptions) error {
	ctx := cmd.Context()
	s, err := g.connect()
	if err != nil {
		return err
	}
	defer s.close()
	name := o.name
	if name == "" {
		name = newClaimName()
	}
	if !o.wait {
		claim, err := s.sdk.CreateClaim(ctx, o.sdkSource(), o.options(name, s.ns)...)
		if err != nil {
			return explain(err, target{claim: true}, s.ns, name)
		}
		return printClaim(cmd.OutOrStdout(), o.format, claim, nil)
	}
	sb, err := o.claimWithProgress(cmd, g, s, name)
	if err != nil {
		return err
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	claim, err := getClaim(ctx, c, s.ns, name)
	if err != nil {
		return err
	}
	return printClaim(cmd.OutOrStdout(), o.format, claim, sb.Object())
}

// claimWithProgress claims a sandbox as the flags say, with the claim named name, through the
// SDK while showing the claim's state on stderr.
func (f *claimFlags) claimWithProgress(cmd *cobra.Command, g *globalOptions, s *session, name string) (*kubox.Sandbox, error) {
	src := f.sdkSource()
	p := startProgress(cmd.ErrOrStderr(), fmt.Sprintf("claim %s: creating from %s", name, src))
	// The SDK's own watch of the claim reports its states: nothing else reads the claim meanwhile.
	report := kubox.WithProgress(func(claim *extv1beta1.SandboxClaim) {
		p.update("claim " + name + ": " + describeConditions(claim.Status.Conditions))
	})
	sb, err := s.sdk.Claim(cmd.Context(), src, append(f.options(name, s.ns), report)...)
	if err != nil {
		p.finish("")
		if errors.Is(err, kubox.ErrClaimFailed) || errors.Is(err, kubox.ErrTimeout) {
			return nil, fmt.Errorf("claim %s: %w (the claim was deleted)", name, err)
		}
		return nil, err
	}
	p.finish(fmt.Sprintf("claim %s: sandbox %s is Ready", name, sb.Name()))
	return sb, nil
}

// printClaim prints a claim and its sandbox (nil when it has none yet) as kubox claim does.
func printClaim(w io.Writer, format string, claim *extv1beta1.SandboxClaim, sb *sandboxv1beta1.Sandbox) error {
	objs := []runtime.Object{claim}
	var sbs []sandboxv1beta1.Sandbox
	if sb != nil {
		objs = append(objs, sb)
		sbs = append(sbs, *sb)
	}
	if format != outputTable {
		return printObjects(w, format, objs, false)
	}
	rs := rows([]extv1beta1.SandboxClaim{*claim}, sbs, time.Now())
	return printTable(w, withIdle(claimColumns, rs), rs, false)
}
