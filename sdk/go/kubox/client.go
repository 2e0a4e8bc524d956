package kubox

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// Connection says how the SDK reaches the agents inside sandboxes.
type Connection string

const (
	// ConnectAuto (the default) picks the router: Options.RouterURL, or $KUBOX_ROUTER_URL, when
	// set; inside a Pod, the router's Service by its cluster DNS name
	// (http://<RouterService>.<RouterNamespace>.svc:8080); elsewhere a port-forward to the
	// router (ConnectPortForward), which needs nothing but the kubeconfig.
	ConnectAuto Connection = ""
	// ConnectRouter sends every request through kubox-router at Options.RouterURL.
	ConnectRouter Connection = "router"
	// ConnectDirect dials the sandbox's Pod IP (status.podIPs) on the agent's port
	// (status.agent.port, recorded by kubox-controller) with the agent token read from the Secret
	// <sandbox>-kubox-agent. It works only where Pod IPs are routable (inside the cluster) and
	// needs RBAC get on secrets; it needs no router.
	ConnectDirect Connection = "direct"
	// ConnectPortForward port-forwards, through the API server, to a ready Pod behind the
	// Service Options.RouterService in Options.RouterNamespace, and then talks to the router on
	// 127.0.0.1. Client.Close stops the port-forward.
	ConnectPortForward Connection = "port-forward"
)

// Defaults of Options.
const (
	DefaultNamespace       = "default"
	DefaultRouterNamespace = contract.DefaultRouterNamespace
	DefaultRouterService   = contract.DefaultRouterService
	DefaultReadyTimeout    = 3 * time.Minute
	// DefaultRouterPort is the port of the router's Service that the SDK uses in a Pod and when
	// it port-forwards.
	DefaultRouterPort = contract.DefaultRouterPort
	// RouterURLEnv names the environment variable ConnectAuto reads the router's URL from.
	RouterURLEnv = contract.RouterURLEnv
)

// Options configures a Client. The zero value works: sandboxes in namespace "default", the
// router found automatically, a 3-minute wait for Ready.
type Options struct {
	// Namespace is the default namespace of claims and sandboxes; default "default".
	Namespace string
	// Connection picks how the SDK reaches sandboxes; default ConnectAuto.
	Connection Connection
	// RouterURL is kubox-router's base URL, e.g. http://127.0.0.1:18080 (ConnectRouter, and
	// ConnectAuto when set).
	RouterURL string
	// RouterNamespace is the namespace of the router's Service; default "kubox-system".
	RouterNamespace string
	// RouterService is the name of the router's Service; default "sandbox-router-svc".
	RouterService string
	// Token is the bearer token sent to the router instead of the rest.Config's credentials: a
	// claim token (Client.MintClaimToken) or the router's shared token.
	Token string
	// ReadyTimeout is how long Claim, Connect, Open, Resume and Suspend wait; default 3m.
	ReadyTimeout time.Duration
	// HTTPTransport is the base transport of the requests to the router or the agents; default
	// a clone of http.DefaultTransport that speaks HTTP/1.1 only (the Connect protocol streams
	// over it, through any proxy).
	HTTPTransport http.RoundTripper
}

// withDefaults returns o with every unset field set to its default; $KUBOX_ROUTER_URL fills
// RouterURL for ConnectAuto.
func (o Options) withDefaults(getenv func(string) string) Options {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.RouterNamespace == "" {
		o.RouterNamespace = DefaultRouterNamespace
	}
	if o.RouterService == "" {
		o.RouterService = DefaultRouterService
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = DefaultReadyTimeout
	}
	if o.Connection == ConnectAuto && o.RouterURL == "" {
		o.RouterURL = getenv(RouterURLEnv)
	}
	o.RouterURL = strings.TrimRight(o.RouterURL, "/")
	return o
}

// resolveConnection turns ConnectAuto into the mode it stands for, and fills RouterURL for a
// client in a Pod.
func (o Options) resolveConnection(inPod bool) (Options, error) {
	switch o.Connection {
	case ConnectAuto:
		switch {
		case o.RouterURL != "":
			o.Connection = ConnectRouter
		case inPod:
			o.Connection = ConnectRouter
			o.RouterURL = fmt.Sprintf("http://%s.%s.svc:%d", o.RouterService, o.RouterNamespace, DefaultRouterPort)
		default:
			o.Connection = ConnectPortForward
		}
	case ConnectRouter:
		if o.RouterURL == "" {
			return o, errors.New("kubox: Options.Connection is \"router\" but Options.RouterURL is empty: " +
				"set it to kubox-router's URL, e.g. http://127.0.0.1:18080 (`kubectl -n kubox-system port-forward svc/sandbox-router-svc 18080:8080`)")
		}
	case ConnectDirect, ConnectPortForward:
	default:
		return o, fmt.Errorf("kubox: unknown Options.Connection %q: use \"\" (auto), %q, %q or %q",
			o.Connection, ConnectRouter, ConnectDirect, ConnectPortForward)
	}
	return o, nil
}

// inPod reports whether the process runs in a Kubernetes Pod, as rest.InClusterConfig decides.
func inPod() bool {
	if os.Getenv("KUBERNETES_SERVICE_HOST") == "" || os.Getenv("KUBERNETES_SERVICE_PORT") == "" {
		return false
	}
	_, err := os.Stat("/var/run/secrets/kubernetes.io/serviceaccount/token")
	return err == nil
}

// Client claims, opens and connects to kubox sandboxes. It is safe for concurrent use. Close it
// when done: it stops a port-forward.
type Client struct {
	cfg    *rest.Config
	opts   Options
	kube   client.WithWatch
	scheme *k8sruntime.Scheme
	// base is the transport of every request to a router or an agent, before credentials.
	base http.RoundTripper
	// router is the http.Client of requests to the router (router and port-forward modes), with
	// the router credentials; nil, with routerErr, when there are none.
	router    *http.Client
	routerErr error

	mu      sync.Mutex
	forward *portForward
	closed  bool
}

// New returns a Client that talks to the Kubernetes API with cfg (for claims, sandboxes and, in
// direct mode, Secrets) and to sandboxes as opts.Connection says. It does not contact anything.
func New(cfg *rest.Config, opts Options) (*Client, error) {
	if cfg == nil {
		return nil, errors.New("kubox: New needs a *rest.Config: load one with " +
			"sigs.k8s.io/controller-runtime/pkg/client/config.GetConfig() or k8s.io/client-go/tools/clientcmd")
	}
	opts = opts.withDefaults(os.Getenv)
	opts, err := opts.resolveConnection(inPod())
	if err != nil {
		return nil, err
	}
	scheme := newScheme()
	// A logger of its own: controller-runtime's global one prints a warning with a stack trace to
	// stderr when a client is made 30 s after the program started and it was never set.
	kube, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme, Log: logr.New(ctrllog.NullLogSink{})})
	if err != nil {
		return nil, fmt.Errorf("kubox: creating a Kubernetes client for %s: %w", cfg.Host, err)
	}
	c := &Client{cfg: cfg, opts: opts, kube: kube, scheme: scheme, base: opts.HTTPTransport}
	if c.base == nil {
		c.base = newHTTPTransport()
	}
	if opts.Connection != ConnectDirect {
		rt, err := routerTransport(cfg, opts.Token, c.base)
		if err != nil {
			c.routerErr = err
		} else {
			c.router = &http.Client{Transport: &routerErrors{base: rt}}
		}
	}
	return c, nil
}

// Options returns the client's options with the defaults filled in and ConnectAuto resolved to
// the mode it picked.
func (c *Client) Options() Options { return c.opts }

// Close stops the client's port-forward, if it started one. Sandboxes stay; close them with
// Sandbox.Close. Close is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.forward != nil {
		c.forward.stop()
		c.forward = nil
	}
	return nil
}

func newScheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(sandboxv1beta1.AddToScheme(s))
	utilruntime.Must(extv1beta1.AddToScheme(s))
	return s
}

// newHTTPTransport is http.DefaultTransport's configuration, HTTP/1.1 only: the agent's
// Connect services stream over HTTP/1.1, which every proxy and port-forward carries.
func newHTTPTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ForceAttemptHTTP2 = false
	t.Protocols = new(http.Protocols)
	t.Protocols.SetHTTP1(true)
	t.MaxIdleConnsPerHost = 16
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return t
}
