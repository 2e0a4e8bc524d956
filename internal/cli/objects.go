package cli

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// getSandbox reads the Sandbox called name, with an error that says what to do when it cannot.
func getSandbox(ctx context.Context, c client.Client, ns, name string) (*sandboxv1beta1.Sandbox, error) {
	sb := &sandboxv1beta1.Sandbox{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sb); err != nil {
		return nil, apiError(err, "sandbox", ns, name)
	}
	return sb, nil
}

// getClaim reads the SandboxClaim called name, with an error that says what to do when it cannot.
func getClaim(ctx context.Context, c client.Client, ns, name string) (*extv1beta1.SandboxClaim, error) {
	claim := &extv1beta1.SandboxClaim{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, claim); err != nil {
		return nil, apiError(err, "claim", ns, name)
	}
	return claim, nil
}

// clientIn returns the API client and the namespace of the global flags.
func (g *globalOptions) clientIn() (client.Client, string, error) {
	c, err := g.client()
	if err != nil {
		return nil, "", err
	}
	ns, err := g.namespace()
	if err != nil {
		return nil, "", err
	}
	return c, ns, nil
}

// resolve returns the API client and namespace of the global flags and the Sandbox that NAME
// designates there (see sandboxName).
func (g *globalOptions) resolve(ctx context.Context, t target, name string) (c client.Client, ns, sbName string, err error) {
	if c, ns, err = g.clientIn(); err != nil {
		return nil, "", "", err
	}
	if sbName, err = sandboxName(ctx, c, t, ns, name); err != nil {
		return nil, "", "", err
	}
	return c, ns, sbName, nil
}

// sandboxName is the Sandbox that NAME designates: NAME itself, or with --claim the sandbox bound
// to the claim NAME.
func sandboxName(ctx context.Context, c client.Client, t target, ns, name string) (string, error) {
	if !t.claim {
		return name, nil
	}
	claim, err := getClaim(ctx, c, ns, name)
	if err != nil {
		return "", err
	}
	if claim.Status.Sandbox.Name == "" {
		return "", fmt.Errorf("claim %s in namespace %s has no sandbox yet (%s): wait with kubox get --claim %s, or check its pool or template",
			name, ns, describeConditions(claim.Status.Conditions), name)
	}
	return claim.Status.Sandbox.Name, nil
}

// apiError turns an API server error about the kind called name into a message that names the
// object and the fix.
func apiError(err error, kind, ns, name string) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		hint := "-n picks another namespace"
		switch kind {
		case "sandbox":
			hint = "list them with kubox ls; pass --claim if " + name + " is a claim; " + hint
		case "claim":
			hint = "list them with kubox ls; " + hint
		}
		return fmt.Errorf("%s %q not found in namespace %s: %s: %w", kind, name, ns, hint, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s %s in namespace %s: forbidden: ask for RBAC access to it: %w", kind, name, ns, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s %s in namespace %s: the API server does not accept your credentials: check the kubeconfig (--kubeconfig, --context): %w", kind, name, ns, err)
	}
	return fmt.Errorf("%s %s in namespace %s: %w", kind, name, ns, err)
}

// listError turns an error listing what (claims, sandboxes) in where into a message with the fix.
func listError(err error, what, where string) error {
	switch {
	case meta.IsNoMatchError(err):
		return fmt.Errorf("listing %s: the cluster does not know the kubox API: install kubox's CRDs (config/crd): %w", what, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("listing %s in %s: forbidden: ask for RBAC list access to %s: %w", what, where, what, err)
	}
	return fmt.Errorf("listing %s in %s: %w", what, where, err)
}
