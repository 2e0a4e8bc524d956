package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

type getOptions struct {
	target
	output
	allNamespaces bool
	selector      string
}

func newGet(g *globalOptions) *cobra.Command {
	o := &getOptions{}
	cmd := &cobra.Command{
		Use:     "get [NAME]",
		Aliases: []string{"ls", "list"},
		Short:   "List the sandboxes and claims of a namespace, or show one",
		Long: `List the Sandboxes and SandboxClaims of the namespace (every namespace with -A): one line per
sandbox with the claim that holds it, and one per claim that has no sandbox yet.

Columns: NAME (the Sandbox), CLAIM, POOL/TEMPLATE (where it came from), READY (with the reason
when it is not Ready), POD IP, AGE and EXPIRES (the claim's or sandbox's shutdown time). When a
sandbox or claim has an idle policy (kubox claim --suspend-after), three more: MODE (Running,
Suspended, or "Suspended (idle)" when the idle policy suspended it), IDLE (the controller's last
reason: Requests, RunningProcesses, OpenConnections, AgentUnreachable, WaitingInPool, Idle,
Suspended) and LAST ACTIVE (the later of status.idle.lastActiveTime and the router's
kubox.dev/last-activity annotation).

With NAME, show that Sandbox, or with --claim that SandboxClaim. -o json and -o yaml print the
objects themselves: one object for NAME, a v1 List otherwise.`,
		Example: `  # Everything in the current namespace
  kubox ls

  # Every namespace
  kubox ls -A

  # One sandbox, and one claim as YAML
  kubox get python-x7k2q
  kubox get --claim kubox-x7k2 -o yaml`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeNames(g, &o.target, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd, g, args)
		},
	}
	o.target.addFlag(cmd.Flags())
	o.output.addFlag(cmd)
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list every namespace")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "label selector to filter claims and sandboxes, e.g. team=ml")
	return cmd
}

func (o *getOptions) run(cmd *cobra.Command, g *globalOptions, args []string) error {
	ctx := cmd.Context()
	c, ns, err := g.clientIn()
	if err != nil {
		return err
	}
	var claims []extv1beta1.SandboxClaim
	var sandboxes []sandboxv1beta1.Sandbox
	var single runtime.Object
	if len(args) == 1 {
		claims, sandboxes, single, err = getOne(ctx, c, o.target, ns, args[0])
	} else {
		if o.allNamespaces {
			ns = ""
		}
		claims, sandboxes, err = list(ctx, c, ns, o.selector)
	}
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if o.format != outputTable {
		if single != nil {
			return printObjects(w, o.format, []runtime.Object{single}, true)
		}
		var objs []runtime.Object
		for i := range claims {
			objs = append(objs, &claims[i])
		}
		for i := range sandboxes {
			objs = append(objs, &sandboxes[i])
		}
		return printObjects(w, o.format, objs, false)
	}
	rs := rows(claims, sandboxes, time.Now())
	if len(rs) == 0 {
		where := "namespace " + ns
		if ns == "" {
			where = "any namespace"
		}
		cmd.PrintErrln("No sandboxes or claims in " + where + ": create one with kubox claim --pool P or --template T")
		return nil
	}
	return printTable(w, withIdle(lsColumns, rs), rs, o.allNamespaces && len(args) == 0)
}

// getOne reads the Sandbox called name, or with --claim the claim, and the other object of the
// pair when there is one. single is the object asked for.
func getOne(ctx context.Context, c client.Client, t target, ns, name string) ([]extv1beta1.SandboxClaim, []sandboxv1beta1.Sandbox, runtime.Object, error) {
	if t.claim {
		claim, err := getClaim(ctx, c, ns, name)
		if err != nil {
			return nil, nil, nil, err
		}
		var sbs []sandboxv1beta1.Sandbox
		if sbName := claim.Status.Sandbox.Name; sbName != "" {
			if sb, err := getSandbox(ctx, c, ns, sbName); err == nil && claimOf(sb) == claim.Name {
				sbs = append(sbs, *sb)
			}
		}
		return []extv1beta1.SandboxClaim{*claim}, sbs, claim, nil
	}
	sb, err := getSandbox(ctx, c, ns, name)
	if err != nil {
		return nil, nil, nil, err
	}
	var claims []extv1beta1.SandboxClaim
	if claimName := claimOf(sb); claimName != "" {
		if claim, err := getClaim(ctx, c, ns, claimName); err == nil {
			claims = append(claims, *claim)
		}
	}
	return claims, []sandboxv1beta1.Sandbox{*sb}, sb, nil
}

// list lists the claims and sandboxes of ns ("" for every namespace) that match selector.
func list(ctx context.Context, c client.Client, ns, selector string) ([]extv1beta1.SandboxClaim, []sandboxv1beta1.Sandbox, error) {
	opts := []client.ListOption{client.InNamespace(ns)}
	if selector != "" {
		sel, err := labels.Parse(selector)
		if err != nil {
			return nil, nil, err
		}
		opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
	}
	where := ns
	if where == "" {
		where = "all namespaces"
	}
	claims := &extv1beta1.SandboxClaimList{}
	if err := c.List(ctx, claims, opts...); err != nil {
		return nil, nil, listError(err, "claims", where)
	}
	sandboxes := &sandboxv1beta1.SandboxList{}
	if err := c.List(ctx, sandboxes, opts...); err != nil {
		return nil, nil, listError(err, "sandboxes", where)
	}
	return claims.Items, sandboxes.Items, nil
}
