package agent

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubox-dev/kubox/internal/atomicfile"
)

// Install copies the running binary to dest, atomically (a temporary file in dest's directory,
// then a rename), with mode 0755. The controller's init container runs `kubox-agent install
// <dest>` to put the agent into a shared emptyDir, from which the sandbox's container starts it:
// the agent image needs no shell or cp.
func Install(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the running binary: %w", err)
	}
	return copyExecutable(self, dest)
}

func copyExecutable(src, dest string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("opening %s: %w", src, err)
	}
	defer func() { _ = in.Close() }()
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(dest), err)
	}
	if err := atomicfile.Write(dest, in, 0o755); err != nil {
		return fmt.Errorf("installing %s as %s: %w", src, dest, err)
	}
	return nil
}
