package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// Environment variables that give the connection flags their defaults.
const (
	envRouterURL = contract.RouterURLEnv
	envToken     = "KUBOX_TOKEN"
)

// Connection modes of --connection; the SDK's Connection values.
var connections = []string{"auto", "router", "direct", "port-forward"}

// globalOptions are the flags every sandbox command shares: where the cluster is (kubectl's
// kubeconfig flags) and how to reach the sandboxes' agents (the SDK's Options).
type globalOptions struct {
	kube            *genericclioptions.ConfigFlags
	routerURL       string
	connection      string
	routerNamespace string
	routerService   string
	token           string
	readyTimeout    time.Duration
}

func newGlobalOptions() *globalOptions {
	kube := genericclioptions.NewConfigFlags(true)
	// --token is the bearer sent to the router (the SDK's Options.Token), as in every kubox
	// client; the API server's credentials come from the kubeconfig.
	kube.BearerToken = nil
	// Many parallel reads (ls of a namespace, completion) must not wait on client-go's 5 QPS.
	kube.WrapConfigFn = func(c *rest.Config) *rest.Config {
		c.QPS, c.Burst = 50, 100
		return c
	}
	return &globalOptions{kube: kube}
}

func (g *globalOptions) addFlags(fs *pflag.FlagSet) {
	g.kube.AddFlags(fs)
	fs.StringVar(&g.routerURL, "router-url", os.Getenv(envRouterURL),
		"URL of kubox-router, e.g. http://127.0.0.1:18080 (default $"+envRouterURL+")")
	fs.StringVar(&g.connection, "connection", "auto",
		"how to reach a sandbox's agent: auto (--router-url if set; inside a Pod the router Service; else a port-forward to it), "+
			"router, direct (pod IP and the agent token Secret; in-cluster) or port-forward")
	fs.StringVar(&g.routerNamespace, "router-namespace", contract.DefaultRouterNamespace, "namespace of kubox-router's Service")
	fs.StringVar(&g.routerService, "router-service", contract.DefaultRouterService, "name of kubox-router's Service")
	fs.StringVar(&g.token, "token", os.Getenv(envToken),
		"bearer token for kubox-router (a claim token or the router's shared token) instead of the kubeconfig's credentials (default $"+envToken+")")
	fs.DurationVar(&g.readyTimeout, "ready-timeout", 3*time.Minute, "how long to wait for a claim or sandbox to become Ready")
}

// validate checks the flags that have a fixed set of values.
func (g *globalOptions) validate() error {
	for _, c := range connections {
		if g.connection == c {
			return nil
		}
	}
	return fmt.Errorf("--connection %q is not one of %s", g.connection, strings.Join(connections, ", "))
}

// restConfig is the API server's configuration from the kubeconfig flags.
func (g *globalOptions) restConfig() (*rest.Config, error) {
	cfg, err := g.kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w: pass --kubeconfig or set KUBECONFIG", err)
	}
	return cfg, nil
}

// namespace is -n, else the kubeconfig context's namespace, else "default".
func (g *globalOptions) namespace() (string, error) {
	ns, _, err := g.kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}

// scheme knows client-go's types and the kubox API.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(sandboxv1beta1.AddToScheme(s))
	utilruntime.Must(extv1beta1.AddToScheme(s))
	return s
}()

// client is an uncached client for claims, sandboxes, pools and templates.
func (g *globalOptions) client() (client.Client, error) {
	cfg, err := g.restConfig()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to the API server %s: %w", cfg.Host, err)
	}
	return c, nil
}

// clientset is client-go's clientset, for Pod logs.
func (g *globalOptions) clientset() (kubernetes.Interface, error) {
	cfg, err := g.restConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// target names the object a command works on: a Sandbox by name, or with --claim a SandboxClaim.
type target struct {
	claim bool
}

func (t *target) addFlag(fs *pflag.FlagSet) {
	fs.BoolVar(&t.claim, "claim", false, "NAME is a SandboxClaim (as printed by kubox claim) rather than a Sandbox")
}

// kind is what NAME is, for messages.
func (t *target) kind() string {
	if t.claim {
		return "claim"
	}
	return "sandbox"
}

// keyValues parses repeated K=V flags into a map; flag names the flag for messages.
func keyValues(flag string, values []string) (map[string]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(values))
	for _, v := range values {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q is not KEY=VALUE", flag, v)
		}
		m[k] = val
	}
	return m, nil
}

// source is --pool or --template, exactly one of them.
type source struct {
	pool, template string
}

func (s *source) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.pool, "pool", "", "SandboxWarmPool to take a ready sandbox from")
	cmd.Flags().StringVar(&s.template, "template", "", "SandboxTemplate to start a new sandbox from")
	cmd.MarkFlagsMutuallyExclusive("pool", "template")
}

func (s *source) validate(command string) error {
	if s.pool == "" && s.template == "" {
		return fmt.Errorf("kubox %s needs --pool NAME or --template NAME: list pools with kubectl get sandboxwarmpools, templates with kubectl get sandboxtemplates", command)
	}
	return nil
}
