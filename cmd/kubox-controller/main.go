// Command kubox-controller runs kubox's controllers: it reconciles Sandboxes, SandboxTemplates,
// SandboxWarmPools and SandboxClaims, serves metrics and health probes, and exports traces when
// the OTLP environment variables ask for it (internal/tracing).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubox-dev/kubox/internal/controller/manager"
	"github.com/kubox-dev/kubox/internal/tracing"
	"github.com/kubox-dev/kubox/internal/version"
)

func main() {
	flags := manager.BindFlags(flag.CommandLine)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: %s [flags]\n\n"+
			"kubox-controller reconciles kubox's resources (agents.x-k8s.io Sandboxes). Settings come from\n"+
			"the --config file; the other flags keep agent-sandbox's names and override the file.\n\nFlags:\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flags.Version() {
		fmt.Println(version.Get().String())
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if err := run(flags); err != nil {
		fmt.Fprintf(os.Stderr, "kubox-controller: %v\n", err)
		os.Exit(1)
	}
}

func run(flags *manager.Flags) error {
	log := ctrl.Log.WithName("setup")
	cfg, err := flags.Config()
	if err != nil {
		return err
	}
	if err := manager.CheckLeaderElection(cfg); err != nil {
		return err
	}
	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("finding the Kubernetes API (use --kubeconfig or KUBECONFIG out of a cluster): %w", err)
	}
	restCfg.QPS = ptr.Deref(cfg.ClientConnection.QPS, 0)
	restCfg.Burst = int(ptr.Deref(cfg.ClientConnection.Burst, 0))
	restCfg.UserAgent = "kubox-controller/" + version.Get().GitVersion

	mgr, err := ctrl.NewManager(restCfg, manager.Options(cfg, manager.NewScheme()))
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	stopTracing, err := tracing.Setup(ctx, "kubox-controller", version.Get().GitVersion)
	if err != nil {
		return err
	}
	defer func() {
		if err := stopTracing(context.Background()); err != nil {
			log.Error(err, "Flushing traces")
		}
	}()
	if err := manager.Setup(ctx, mgr, cfg); err != nil {
		return err
	}
	log.Info("Starting", "version", version.Get().GitVersion, "clusterDomain", cfg.ClusterDomain,
		"sandboxWorkers", *cfg.Controllers.Sandbox.Workers, "leaderElection", *cfg.LeaderElection.Enabled,
		"traceExport", tracing.Enabled())
	return mgr.Start(ctx)
}
