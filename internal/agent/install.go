package agent

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".kubox-agent-*")
	if err != nil {
		return fmt.Errorf("installing into %s: %w", filepath.Dir(dest), err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, in); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("copying %s to %s: %w", src, tmp.Name(), err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dest)
}
