package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kubox-dev/kubox/internal/devenv"
)

type devFlags struct {
	stateDir string
	repo     string
}

func newDev() *cobra.Command {
	f := &devFlags{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the kubox platform on this Linux machine (a real single-node cluster with gVisor)",
		Long: `kubox dev runs a real single-node Kubernetes cluster on this Linux machine, with no Docker and
no registry: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd 2.x and a
kubelet, with pods isolated by runc (RuntimeClass "runc") or gVisor (RuntimeClass "gvisor"), the
kubox CRDs and the kubox controller. The binaries are built once from pinned Go modules into
~/.cache/kubox/tools. It needs root and a kubox checkout.`,
	}
	cmd.PersistentFlags().StringVar(&f.stateDir, "state-dir", devenv.DefaultStateDir(),
		"folder that holds all state: PKI, configs, etcd data, logs, pidfiles and the kubeconfig")
	cmd.PersistentFlags().StringVar(&f.repo, "repo", "",
		"kubox checkout to build tools, images and the controller from (default: found above the current folder)")
	cmd.AddCommand(newDevUp(f), newDevDown(f), newDevStatus(f), newDevImages(f), newDevRestartContainerd(f))
	return cmd
}

func (f *devFlags) config(needRepo bool) (devenv.Config, error) {
	c := devenv.DefaultConfig()
	c.StateDir = f.stateDir
	if !needRepo {
		return c, nil
	}
	c.RepoDir = f.repo
	if c.RepoDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return c, err
		}
		if c.RepoDir, err = devenv.FindRepo(wd); err != nil {
			return c, err
		}
	}
	return c, nil
}

func newDevUp(f *devFlags) *cobra.Command {
	var inCluster, stockShim bool
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the local environment and wait until it is ready",
		Long: `Start the local environment and return once it is ready; the processes keep running.

Steps: check the host (root, cgroup controllers, free ports, free pod subnet), install missing
Debian packages (runc, containernetworking-plugins, busybox-static, iproute2, patch), build the
pinned binaries that are not cached yet (10-40 minutes the first time on 2 cores, depending on load; seconds
after), build the local images (kubox.local/busybox:dev, kubox.local/pause:dev,
kubox.local/python:dev), then start
etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd and the kubelet, register
the RuntimeClasses runc and gvisor and the default StorageClass "standard", apply
config/crd/bases and start bin/kubox-controller.

Running it again while the environment is healthy does nothing. A broken environment is removed
(as by "kubox dev down") and started again.

Ports: kube-apiserver 127.0.0.1:16443, etcd 127.0.0.1:12379/12380, kube-controller-manager
127.0.0.1:16257, kube-scheduler 127.0.0.1:16259, kubelet 10.77.0.1:11250 (healthz 127.0.0.1:11248).
Pods get addresses on the bridge kuboxbr0 (10.77.0.0/24).`,
		Example: `  sudo kubox dev up
  export KUBECONFIG=/var/lib/kubox-dev/kubeconfig
  /var/lib/kubox-dev/bin/kubectl get nodes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.config(true)
			if err != nil {
				return err
			}
			c.InCluster, c.StockShim = inCluster, stockShim
			return devenv.Up(cmd.Context(), c, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&inCluster, "in-cluster", true,
		"run kubox-controller and kubox-router as Deployments installed from config/dev (images built from the checkout, "+
			"ServiceAccounts and RBAC from config/), as a cluster would; --in-cluster=false runs them as host processes "+
			"with the admin kubeconfig instead (quicker to iterate on their code); see docs/install.md")
	cmd.Flags().BoolVar(&stockShim, "stock-shim", false,
		"start containerd's handler runsc with gVisor's own shim from the same pinned module (built once into the tool "+
			"cache) instead of kubox's patched one: memory suspend is unavailable until kubox-node install brings it; on a fresh environment only (kubox dev down first)")
	return cmd
}

func newDevRestartContainerd(f *devFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "restart-containerd",
		Short: "Restart the local node's containerd with the same command line and wait until it answers",
		Long: `restart-containerd is the local node's "systemctl restart containerd": kubox-node install runs it
(through nsenter into a host process's mount namespace) after it registered the kubox-runsc handler, on an
environment started with kubox dev up --stock-shim. Running Pods keep running: their shims are
separate processes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.config(false)
			if err != nil {
				return err
			}
			return devenv.RestartContainerd(cmd.Context(), c, cmd.OutOrStdout())
		},
	}
}

func newDevDown(f *devFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the local environment and remove its state",
		Long: `Stop the local environment and remove everything it created: delete the pods (so the kubelet
tears down their sandboxes and networks), stop every process by the PID in its pidfile (never by
name), stop leftover containerd shims by the PIDs containerd recorded, unmount what is mounted
below the state folder, delete the bridge, the cgroup subtree /kubox and the provisioned volume
folders, and remove the state folder. The tool and image caches stay. Safe to run more than once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.config(false)
			if err != nil {
				return err
			}
			return devenv.Down(cmd.Context(), c, cmd.OutOrStdout())
		},
	}
}

func newDevStatus(f *devFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show which components run, their PIDs and whether they are ready",
		Long: `Show every component of the local environment with its PID, whether the process is alive and
whether it is ready (health endpoint, node Ready), and where its log is. Exits non-zero when the
environment is not healthy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.config(false)
			if err != nil {
				return err
			}
			if !devenv.Status(cmd.Context(), c, cmd.OutOrStdout()) {
				return errors.New("the environment is not healthy")
			}
			return nil
		},
	}
}

func newDevImages(f *devFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "images",
		Short: "Build the local images (busybox, pause, python) into the image cache and print where they are",
		Long: `Build the single-layer images the local node uses, without a registry or a base image:
kubox.local/busybox:dev (Debian's busybox-static with a symlink per applet),
kubox.local/pause:dev (hack/images/pause, the pod sandbox image) and kubox.local/python:dev
(a Debian bookworm rootfs with python3, made by mmdebstrap; needs root). They are written as
docker-archive tarballs into ~/.cache/kubox/images/<key>/, keyed by their inputs; a complete
folder is reused. "kubox dev up" does this itself and imports them into containerd.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.config(true)
			if err != nil {
				return err
			}
			imgs, cached, err := devenv.BuildImages(c.RepoDir, c.ImagesDir, "/bin/busybox")
			if err != nil {
				return err
			}
			state := map[bool]string{true: "cached", false: "built"}[cached]
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n%s %s\n%s %s\n(%s)\n", devenv.BusyboxImage, imgs.Busybox,
				devenv.SandboxImage, imgs.Pause, devenv.PythonImage, imgs.Python, state)
			return err
		},
	}
}
