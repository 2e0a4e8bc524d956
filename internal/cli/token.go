package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

type tokenOptions struct {
	ttl    time.Duration
	format string
}

// tokenOutput is what kubox token -o json prints.
type tokenOutput struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
	Claim     string    `json:"claim"`
	Namespace string    `json:"namespace"`
}

func newToken(g *globalOptions) *cobra.Command {
	o := &tokenOptions{}
	cmd := &cobra.Command{
		Use:   "token CLAIM [--ttl 1h] [-o json]",
		Short: "Mint a token that opens only the sandbox of one claim",
		Long: `Ask kubox-router for a claim token for the SandboxClaim CLAIM and print it: alone on stdout,
or with -o json as {"token", "expiresAt", "claim", "namespace"}.

The token opens only that claim's sandbox (exec, cp, run through the router), only while the
claim exists (deleting the claim revokes it), and only until it expires (--ttl, else the
router's default). Whoever holds it needs no Kubernetes credentials: pass it as --token or
$KUBOX_TOKEN, with --router-url. Minting it needs the router (not --connection direct) and RBAC
create on sandboxclaims/connect for the claim.`,
		Example: `  # A token for a program without Kubernetes credentials
  export KUBOX_TOKEN=$(kubox token my-claim --ttl 1h)
  kubox exec --claim my-claim --router-url http://127.0.0.1:18080 -- echo hi

  # With its expiry, as JSON
  kubox token my-claim -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(g, &target{claim: true}, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd, g, args[0])
		},
	}
	cmd.Flags().DurationVar(&o.ttl, "ttl", 0, "how long the token is valid, e.g. 30m or 2h; 0 takes the router's default")
	cmd.Flags().StringVarP(&o.format, "output", "o", "", "output format: the token alone (default) or json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outputJSON}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// validate checks the flags before kubox talks to the cluster.
func (o *tokenOptions) validate() error {
	if o.ttl < 0 {
		return fmt.Errorf("--ttl %s is negative: give how long the token may live, e.g. --ttl 1h", o.ttl)
	}
	if o.format != "" && o.format != outputJSON {
		return fmt.Errorf("-o %q is not json: kubox token prints the token alone, or with -o json its expiry too", o.format)
	}
	return nil
}

func (o *tokenOptions) run(cmd *cobra.Command, g *globalOptions, claim string) error {
	s, err := g.connect()
	if err != nil {
		return err
	}
	defer s.close()
	tok, expires, err := s.sdk.MintClaimToken(cmd.Context(), s.ns, claim, o.ttl)
	if err != nil {
		return explain(err, target{claim: true}, s.ns, claim)
	}
	w := cmd.OutOrStdout()
	if o.format != outputJSON {
		_, err := fmt.Fprintln(w, tok)
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(tokenOutput{Token: tok, ExpiresAt: expires.UTC(), Claim: claim, Namespace: s.ns})
}
