package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// completionTimeout bounds the API calls made to complete a word: a slow cluster must not hang
// the shell.
const completionTimeout = 5 * time.Second

// objectNames lists the names of the objects of list's kind in the namespace of the flags.
func objectNames(ctx context.Context, g *globalOptions, list client.ObjectList, namespaced bool) []string {
	c, err := g.client()
	if err != nil {
		return nil
	}
	var opts []client.ListOption
	if namespaced {
		ns, err := g.namespace()
		if err != nil {
			return nil
		}
		opts = append(opts, client.InNamespace(ns))
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	if err := c.List(ctx, list, opts...); err != nil {
		return nil
	}
	var names []string
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		if obj, ok := o.(client.Object); ok {
			names = append(names, obj.GetName())
		}
		return nil
	})
	return names
}

// targetNames lists sandbox names, or claim names with --claim.
func targetNames(ctx context.Context, g *globalOptions, t *target) []string {
	if t.claim {
		return objectNames(ctx, g, &extv1beta1.SandboxClaimList{}, true)
	}
	return objectNames(ctx, g, &sandboxv1beta1.SandboxList{}, true)
}

// completeNames completes the first max arguments (every argument when max < 0) with the names
// of sandboxes, or of claims with --claim.
func completeNames(g *globalOptions, t *target, max int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if max >= 0 && len(args) >= max {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return filterPrefix(targetNames(cmd.Context(), g, t), toComplete, ""), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeCopyArgs completes kubox cp's SRC and DST: sandbox (or claim) names followed by ':',
// and local files otherwise.
func completeCopyArgs(g *globalOptions, t *target) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) >= 2 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if strings.ContainsAny(toComplete, ":/.~") {
			return nil, cobra.ShellCompDirectiveDefault
		}
		names := filterPrefix(targetNames(cmd.Context(), g, t), toComplete, ":")
		if len(names) == 0 {
			return nil, cobra.ShellCompDirectiveDefault
		}
		return names, cobra.ShellCompDirectiveNoSpace
	}
}

func filterPrefix(names []string, prefix, suffix string) []cobra.Completion {
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n+suffix)
		}
	}
	return out
}

// registerSourceCompletions completes --pool and --template with the namespace's pools and
// templates.
func registerSourceCompletions(cmd *cobra.Command, g *globalOptions) {
	_ = cmd.RegisterFlagCompletionFunc("pool", func(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return filterPrefix(objectNames(c.Context(), g, &extv1beta1.SandboxWarmPoolList{}, true), toComplete, ""), cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.RegisterFlagCompletionFunc("template", func(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return filterPrefix(objectNames(c.Context(), g, &extv1beta1.SandboxTemplateList{}, true), toComplete, ""), cobra.ShellCompDirectiveNoFileComp
	})
}

// registerGlobalCompletions completes the global flags that have known values.
func registerGlobalCompletions(root *cobra.Command, g *globalOptions) {
	_ = root.RegisterFlagCompletionFunc("connection", cobra.FixedCompletions(connections, cobra.ShellCompDirectiveNoFileComp))
	_ = root.RegisterFlagCompletionFunc("namespace", func(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return filterPrefix(objectNames(c.Context(), g, &corev1.NamespaceList{}, false), toComplete, ""), cobra.ShellCompDirectiveNoFileComp
	})
}
