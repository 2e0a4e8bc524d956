// Package cli is kubox-controller's command line: its flags (agent-sandbox's names, in Go's
// single-dash spelling too), the configuration they override, logging, and the start of the
// manager that internal/controller/manager assembles. cmd/kubox-controller runs NewCommand.
package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubox-dev/kubox/internal/controller/apiconn"
	"github.com/kubox-dev/kubox/internal/controller/manager"
	"github.com/kubox-dev/kubox/internal/tracing"
	"github.com/kubox-dev/kubox/internal/version"
)

type options struct {
	flags *Flags
	zap   zap.Options
}

// NewCommand returns kubox-controller's root command.
func NewCommand() *cobra.Command {
	cmd, o := newCommand()
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if done, err := o.parse(cmd, args); done || err != nil {
			return err
		}
		ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
		return o.run()
	}
	return cmd
}

// newCommand returns the command, with no RunE, and the options its flags are bound to.
func newCommand() (*cobra.Command, *options) {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "kubox-controller [flags]",
		Short: "Reconcile kubox's resources (agents.x-k8s.io Sandboxes)",
		Long: `kubox-controller reconciles Sandboxes, SandboxTemplates, SandboxWarmPools and SandboxClaims,
serves Prometheus metrics and health probes, and exports traces when the OTLP environment
variables ask for it.

Settings come from the --config file (docs/configuration.md); the other flags keep agent-sandbox's
names and, when given, override the file. Flags may be spelled Go-style with one dash
(-leader-elect=false), as agent-sandbox's manifests do, or with two (--leader-elect=false).`,
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		// Go's flag package, which agent-sandbox's controller uses, takes -leader-elect as one
		// long flag, pflag as shorthands: parse reads the arguments itself (goStyleArgs).
		DisableFlagParsing: true,
	}
	cmd.SetVersionTemplate("{{.Version}}\n")
	fs := cmd.Flags()
	o.flags = BindFlags(fs)
	goFlags := flag.NewFlagSet("kubox-controller", flag.ContinueOnError)
	o.zap.BindFlags(goFlags)
	fs.AddGoFlagSet(goFlags)
	// controller-runtime's --kubeconfig, which ctrl.GetConfig reads.
	if kc := flag.CommandLine.Lookup(config.KubeconfigFlagName); kc != nil {
		fs.AddGoFlag(kc)
	}
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	return cmd, o
}

// parse parses args into the options. It reports done when it has served --help or --version.
func (o *options) parse(cmd *cobra.Command, args []string) (done bool, err error) {
	fs := cmd.Flags()
	if err := fs.Parse(goStyleArgs(fs, args)); err != nil {
		return true, fmt.Errorf("%w (see %s --help)", err, cmd.Name())
	}
	if help, _ := fs.GetBool("help"); help {
		return true, cmd.Help()
	}
	if v, _ := fs.GetBool("version"); v {
		_, err := fmt.Fprintln(cmd.OutOrStdout(), cmd.Version)
		return true, err
	}
	if fs.NArg() > 0 {
		return true, fmt.Errorf("unexpected arguments %q: kubox-controller takes flags only (see %s --help)", fs.Args(), cmd.Name())
	}
	return false, nil
}

// goStyleArgs rewrites the long flags of args spelled with one dash, as Go's flag package takes
// them (-leader-elect, -zap-log-level=debug, -config file), to pflag's two dashes. Shorthands
// (-h, -v), the values of fs's flags and everything after "--" are kept as they are.
func goStyleArgs(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) < 2 || a[0] != '-' {
			out = append(out, a)
			continue
		}
		name, inline := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), false
		if k := strings.IndexByte(name, '='); k >= 0 {
			name, inline = name[:k], true
		}
		if len(name) == 1 {
			out = append(out, a) // a shorthand: -h, -v
			continue
		}
		if !strings.HasPrefix(a, "--") {
			a = "-" + a
		}
		out = append(out, a)
		fl := fs.Lookup(name)
		if fl != nil && !inline && fl.NoOptDefVal == "" && i+1 < len(args) {
			i++ // the flag's value, whatever it looks like
			out = append(out, args[i])
		}
	}
	return out
}

func (o *options) run() error {
	log := ctrl.Log.WithName("setup")
	cfg, err := o.flags.Config()
	if err != nil {
		return err
	}
	for _, note := range o.flags.InertNotes() {
		log.Info("Ignoring an agent-sandbox flag", "note", note)
	}
	if err := manager.CheckLeaderElection(cfg); err != nil {
		return err
	}
	manager.SetMemoryLimit(cfg, log)
	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("finding the Kubernetes API (use --kubeconfig or KUBECONFIG out of a cluster): %w", err)
	}
	restCfg.QPS = ptr.Deref(cfg.ClientConnection.QPS, 0)
	restCfg.Burst = int(ptr.Deref(cfg.ClientConnection.Burst, 0))
	restCfg.UserAgent = "kubox-controller/" + version.Get().GitVersion
	restCfg, err = apiconn.Shard(restCfg, int(*cfg.ClientConnection.APIConnections), *cfg.ClientConnection.SeparateWatchConnection)
	if err != nil {
		return err
	}

	opts := manager.Options(cfg, manager.NewScheme())
	opts.PprofBindAddress = o.flags.PprofBindAddress()
	mgr, err := ctrl.NewManager(restCfg, opts)
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
		"traceExport", tracing.Enabled(), "usage", ptr.Deref(cfg.Usage.Enabled, false))
	return mgr.Start(ctx)
}
