package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// session is a connection to the cluster for one command: the SDK's client and the namespace.
type session struct {
	sdk *kubox.Client
	ns  string
}

// connect builds the SDK client from the global flags.
func (g *globalOptions) connect() (*session, error) {
	cfg, err := g.restConfig()
	if err != nil {
		return nil, err
	}
	ns, err := g.namespace()
	if err != nil {
		return nil, err
	}
	opts := kubox.Options{
		Namespace:       ns,
		RouterURL:       g.routerURL,
		RouterNamespace: g.routerNamespace,
		RouterService:   g.routerService,
		Token:           g.token,
		ReadyTimeout:    g.readyTimeout,
	}
	if g.connection != "auto" {
		opts.Connection = kubox.Connection(g.connection)
	}
	if opts.RouterURL == "" && (g.connection == "auto" || g.connection == "router") {
		opts.RouterURL = g.kubeconfigRouterURL()
	}
	c, err := kubox.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return &session{sdk: c, ns: ns}, nil
}

// kubeconfigRouterURL is the router URL that the kubeconfig's current cluster carries in its
// kubox.dev/router extension ({"url": "http://..."}; kubox dev writes it), or "".
func (g *globalOptions) kubeconfigRouterURL() string {
	raw, err := g.kube.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return ""
	}
	ctxName := raw.CurrentContext
	if g.kube.Context != nil && *g.kube.Context != "" {
		ctxName = *g.kube.Context
	}
	kctx := raw.Contexts[ctxName]
	if kctx == nil {
		return ""
	}
	cluster := kctx.Cluster
	if g.kube.ClusterName != nil && *g.kube.ClusterName != "" {
		cluster = *g.kube.ClusterName
	}
	kc := raw.Clusters[cluster]
	if kc == nil {
		return ""
	}
	return routerURLOf(kc.Extensions[contract.RouterKubeconfigExtension])
}

// routerURLOf reads the url of a kubox.dev/router extension.
func routerURLOf(ext runtime.Object) string {
	u, ok := ext.(*runtime.Unknown)
	if !ok {
		return ""
	}
	var v struct {
		URL string `json:"url"`
	}
	if json.Unmarshal(u.Raw, &v) != nil {
		return ""
	}
	return v.URL
}

func (s *session) close() { _ = s.sdk.Close() }

// openSandbox connects to the cluster and opens the sandbox NAME, or with --claim the claim
// NAME's sandbox (session.open). The caller closes the session.
func (g *globalOptions) openSandbox(ctx context.Context, t target, name string) (*session, *kubox.Sandbox, error) {
	s, err := g.connect()
	if err != nil {
		return nil, nil, err
	}
	sb, err := s.open(ctx, t, name)
	if err != nil {
		s.close()
		return nil, nil, err
	}
	return s, sb, nil
}

// open connects to the sandbox NAME, or with --claim the claim NAME's sandbox, waiting until it
// is Ready.
func (s *session) open(ctx context.Context, t target, name string) (*kubox.Sandbox, error) {
	var sb *kubox.Sandbox
	var err error
	if t.claim {
		sb, err = s.sdk.Connect(ctx, name, kubox.InNamespace(s.ns))
	} else {
		sb, err = s.sdk.Open(ctx, s.ns, name)
	}
	if err != nil {
		return nil, explain(err, t, s.ns, name)
	}
	return sb, nil
}

// explain adds what to do to an SDK error about the sandbox or claim name, by its kind.
func explain(err error, t target, ns, name string) error {
	kind := t.kind()
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, kubox.ErrNotFound):
		hint := "list them with kubox ls"
		if !t.claim {
			hint += "; pass --claim if " + name + " is a claim"
		}
		return fmt.Errorf("%s %s in namespace %s: %w: %s", kind, name, ns, err, hint)
	case errors.Is(err, kubox.ErrTimeout):
		return fmt.Errorf("%s %s in namespace %s: %w: see kubox get %s; --ready-timeout waits longer", kind, name, ns, err, flagFor(t)+name)
	case errors.Is(err, kubox.ErrUnauthorized):
		return fmt.Errorf("%s %s: %w: pass --token (or $%s), or use a kubeconfig whose credentials kubox-router accepts", kind, name, err, envToken)
	case errors.Is(err, kubox.ErrForbidden):
		return fmt.Errorf("%s %s: %w: ask your cluster admin for access to it", kind, name, err)
	case errors.Is(err, kubox.ErrNotReady):
		return fmt.Errorf("%s %s: %w: a suspended sandbox needs kubox resume %s first", kind, name, err, flagFor(t)+name)
	}
	return err
}

// flagFor is "--claim " when t is a claim, for commands printed in hints.
func flagFor(t target) string {
	if t.claim {
		return "--claim "
	}
	return ""
}
