// Package cli is kubox-egress's command: its flags, and the start-up that wires the proxy
// (internal/egress) to the sandboxes it serves (internal/egress/sandboxes), metrics and health.
package cli

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/egress"
	"github.com/kubox-dev/kubox/internal/egress/sandboxes"
	"github.com/kubox-dev/kubox/internal/version"
)

type options struct {
	proxyAddr, metricsAddr, healthAddr string
	kubeconfig, namespace              string
	secretTTL                          time.Duration
	hosts                              []string
	hostsFile, upstreamCAFile          string
}

// NewCommand returns the kubox-egress command.
func NewCommand() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:           "kubox-egress [flags]",
		Short:         "The egress proxy of sandboxes with spec.egress",
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	f := cmd.Flags()
	f.StringVar(&o.proxyAddr, "proxy-bind-address", fmt.Sprintf(":%d", contract.EgressProxyPort), "address of the HTTP proxy sandboxes use")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", `address of the Prometheus /metrics listener ("0": off)`)
	f.StringVar(&o.healthAddr, "health-probe-bind-address", ":8081", `address of the /healthz and /readyz listener ("0": off)`)
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig to reach the Kubernetes API (default: in-cluster, then $KUBECONFIG)")
	f.StringVar(&o.namespace, "namespace", "", "serve the sandboxes of this namespace only (default: all)")
	f.DurationVar(&o.secretTTL, "secret-ttl", 30*time.Second, "how long a credential read from a Secret is used before it is read again")
	f.StringArrayVar(&o.hosts, "resolve", nil, "NAME=IP: resolve NAME to IP instead of asking DNS (repeatable; for tests only)")
	f.StringVar(&o.hostsFile, "hosts-file", "", "a hosts(5) file whose names resolve to its addresses before DNS is asked, read again when it changes (kubox dev points local test servers at names so)")
	f.StringVar(&o.upstreamCAFile, "upstream-ca-file", "", "PEM CA certificates trusted, besides the system's, for the servers of credential domains (an internal API's CA)")
	return cmd
}

func (o *options) run(ctx context.Context) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("component", "kubox-egress")
	resolve, err := o.resolver()
	if err != nil {
		return err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	restConfig, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("finding the Kubernetes API (use --kubeconfig or KUBECONFIG out of a cluster): %w", err)
	}
	restConfig.UserAgent = "kubox-egress/" + version.Get().GitVersion
	src, err := sandboxes.New(restConfig, sandboxes.Config{Namespace: o.namespace, SecretTTL: o.secretTTL, Log: log})
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	roots, err := upstreamRoots(o.upstreamCAFile)
	if err != nil {
		return err
	}
	proxy := egress.New(egress.Config{Identify: src.Identify, Resolve: resolve, UpstreamRoots: roots, Log: log, Registerer: reg})

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return src.Start(ctx) })
	if !src.WaitForSync(ctx) {
		return errors.New("the informers of Pods and Sandboxes did not sync")
	}
	log.Info("Starting", "version", version.Get().GitVersion, "proxy", o.proxyAddr, "namespace", o.namespace)
	serve(ctx, g, o.proxyAddr, proxy)
	if o.metricsAddr != "0" {
		serve(ctx, g, o.metricsAddr, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	}
	if o.healthAddr != "0" {
		serve(ctx, g, o.healthAddr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	}
	return g.Wait()
}

// serve runs an HTTP server on addr until ctx ends.
func serve(ctx context.Context, g *errgroup.Group, addr string, h http.Handler) {
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 30 * time.Second}
	g.Go(func() error {
		if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
}

// resolver returns the proxy's resolver: the --resolve names, then the --hosts-file, then DNS.
func (o *options) resolver() (func(context.Context, string) ([]netip.Addr, error), error) {
	static := map[string][]netip.Addr{}
	for _, h := range o.hosts {
		name, ip, ok := strings.Cut(h, "=")
		addr, err := netip.ParseAddr(ip)
		if !ok || err != nil {
			return nil, fmt.Errorf("--resolve %q: want NAME=IP", h)
		}
		static[strings.ToLower(name)] = append(static[strings.ToLower(name)], addr)
	}
	var file *egress.HostsFile
	if o.hostsFile != "" {
		file = egress.NewHostsFile(o.hostsFile)
		if _, _, err := file.Lookup("localhost"); err != nil {
			return nil, fmt.Errorf("--hosts-file: %w", err)
		}
	}
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		if addrs, ok := static[strings.ToLower(strings.TrimSuffix(host, "."))]; ok {
			return addrs, nil
		}
		if file != nil {
			if addrs, ok, err := file.Lookup(host); ok || err != nil {
				return addrs, err
			}
		}
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}, nil
}

// upstreamRoots are the system's roots plus the certificates in path; nil (the system's) when
// path is empty.
func upstreamRoots(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--upstream-ca-file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--upstream-ca-file %s holds no PEM certificate", path)
	}
	return pool, nil
}
