//go:build e2e

// Package e2e drives kubox's local environment the way a person does: `kubox dev up`, kubectl,
// Sandbox objects. TestMain brings the environment up once (building the kubox binary) and tears
// it down at the end with `kubox dev down`; KUBOX_E2E_KEEP=1 leaves it running. It needs root.
// By default kubox-controller and kubox-router run as Deployments installed from config/dev
// (`kubox dev up`, whose --in-cluster is on; install_test.go needs that); KUBOX_E2E_IN_CLUSTER=0
// runs them as host processes instead (`kubox dev up --in-cluster=false`).
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	repoDir    string
	stateDir   string
	kubeconfig string
	kubectl    string
	clientset  kubernetes.Interface
	dyn        dynamic.Interface
	// restConfig reaches the local environment's API server as its admin (certificate and token).
	restConfig *rest.Config
	// inCluster is false only with KUBOX_E2E_IN_CLUSTER=0: kubox then runs as host processes.
	inCluster = os.Getenv("KUBOX_E2E_IN_CLUSTER") != "0"
	// stockShim is true with KUBOX_E2E_STOCK_SHIM=1: the node starts with gVisor's own shim
	// (kubox dev up --stock-shim), as a cluster's node does before kubox-node install; only
	// TestNodeInstallOnStockShim runs on it (the memory tests need kubox's shim).
	stockShim = os.Getenv("KUBOX_E2E_STOCK_SHIM") == "1"
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e setup failed: %v\n", err)
		teardown()
		return 1
	}
	code := m.Run()
	teardown()
	return code
}

func setup() error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	repoDir = filepath.Join(wd, "..", "..")
	stateDir = envOr("KUBOX_E2E_STATE_DIR", "/var/lib/kubox-dev")
	kubeconfig = filepath.Join(stateDir, "kubeconfig")
	kubectl = filepath.Join(stateDir, "bin", "kubectl")
	if err := build(); err != nil {
		return err
	}
	up := []string{"up", fmt.Sprintf("--in-cluster=%t", inCluster), fmt.Sprintf("--stock-shim=%t", stockShim)}
	if err := kuboxDev(up...); err != nil {
		return fmt.Errorf("kubox dev up: %w", err)
	}
	if restConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return err
	}
	if clientset, err = kubernetes.NewForConfig(restConfig); err != nil {
		return err
	}
	dyn, err = dynamic.NewForConfig(restConfig)
	return err
}

func teardown() {
	if os.Getenv("KUBOX_E2E_KEEP") == "1" {
		fmt.Fprintf(os.Stderr, "KUBOX_E2E_KEEP=1: leaving the environment up (export KUBECONFIG=%s)\n", kubeconfig)
		return
	}
	if err := kuboxDev("down"); err != nil {
		fmt.Fprintf(os.Stderr, "kubox dev down: %v\n", err)
	}
}

func kuboxBin() string { return filepath.Join(repoDir, "bin", "kubox") }

func build() error {
	cmd := exec.Command("go", "build", "-o", kuboxBin(), "./cmd/kubox")
	cmd.Dir = repoDir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build the kubox binary: %w", err)
	}
	return nil
}

// kuboxDev runs `kubox dev <args>` on the environment the tests use.
func kuboxDev(args ...string) error {
	full := append([]string{"dev"}, args...)
	full = append(full, "--state-dir="+stateDir, "--repo="+repoDir)
	cmd := exec.CommandContext(context.Background(), kuboxBin(), full...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
