// Command kubox-egress is the egress proxy of sandboxes whose template has spec.egress: they
// reach the outside only through it (HTTP_PROXY/HTTPS_PROXY, and a NetworkPolicy that lets them
// reach nothing else). It knows a sandbox by its Pod's IP, decides by the name it asked for and
// the addresses it resolved itself, adds the sandbox's credentials to requests for their
// domains, and logs every connection. See docs/egress.md.
package main

import (
	"context"
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
}

func main() {
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
	if err := cmd.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "kubox-egress: %v\n", err)
		os.Exit(1)
	}
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
	proxy := egress.New(egress.Config{Identify: src.Identify, Resolve: resolve, Log: log, Registerer: reg})

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

// resolver returns the proxy's resolver: DNS, except for the --resolve names.
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
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		if addrs, ok := static[strings.ToLower(strings.TrimSuffix(host, "."))]; ok {
			return addrs, nil
		}
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}, nil
}
