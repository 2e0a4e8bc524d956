//go:build e2e

package agentsandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMain brings the local environment up with `kubox dev up` (idempotent: an environment left
// up by test/e2e is reused) and takes it down afterwards unless KUBOX_E2E_KEEP=1, as test/e2e does.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if err := kuboxDev("up"); err != nil {
		fmt.Fprintf(os.Stderr, "kubox dev up: %v\n", err)
		return 1
	}
	code := m.Run()
	if os.Getenv("KUBOX_E2E_KEEP") != "1" {
		if err := kuboxDev("down"); err != nil {
			fmt.Fprintf(os.Stderr, "kubox dev down: %v\n", err)
		}
	}
	return code
}

// kuboxDev runs `go run ./cmd/kubox dev <args>` in the repository on the environment test/e2e uses.
func kuboxDev(args ...string) error {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return err
	}
	full := append([]string{"run", "./cmd/kubox", "dev"}, args...)
	if dir := os.Getenv("KUBOX_E2E_STATE_DIR"); dir != "" {
		full = append(full, "--state-dir="+dir)
	}
	cmd := exec.Command("go", append(full, "--repo="+repo)...)
	cmd.Dir = repo
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}
