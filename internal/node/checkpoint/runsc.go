package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Runsc runs the runsc binary against one runsc root.
type Runsc struct {
	// Binary is runsc's path.
	Binary string
	// Root is runsc's --root. For Pods, the root containerd's gVisor shim uses followed by the
	// containerd namespace: "<shim root>/k8s.io" (on the local node
	// /var/lib/kubox-dev/containerd/runsc/k8s.io).
	Root string
	// Flags are further global flags, as the shim's runsc_config passes them ("--platform=kvm").
	Flags []string
}

func (r Runsc) command(ctx context.Context, args ...string) *exec.Cmd {
	full := append([]string{"--root=" + r.Root}, r.Flags...)
	return exec.CommandContext(ctx, r.Binary, append(full, args...)...)
}

// run runs runsc with args. Its output goes to a file, not a pipe: `runsc restore --detach`
// leaves the sandbox and gofer holding its stdout and stderr, so reading a pipe to its end would
// wait for the sandbox to exit.
func (r Runsc) run(ctx context.Context, args ...string) error {
	out, err := os.CreateTemp("", "kubox-runsc-*.log")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(out.Name()) }()
	defer func() { _ = out.Close() }()
	cmd := r.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		b, _ := os.ReadFile(out.Name())
		return fmt.Errorf("runsc %s: %w: %s", args[0], err, strings.TrimSpace(string(b)))
	}
	return nil
}

// Version returns the first line of `runsc --version`.
func (r Runsc) Version(ctx context.Context) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, r.Binary, "--version")
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("runsc --version: %w", err)
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	return line, nil
}

// Kill sends SIGKILL to every process of the sandbox's containers and deletes them; it is how a
// restored sandbox that is not wanted any more goes away.
func (r Runsc) Kill(ctx context.Context, ids ...string) error {
	var first error
	for i := len(ids) - 1; i >= 0; i-- {
		_ = r.run(ctx, "kill", "--all", ids[i], "KILL")
	}
	for i := len(ids) - 1; i >= 0; i-- {
		if err := r.run(ctx, "delete", "--force", ids[i]); err != nil && first == nil {
			first = err
		}
	}
	return first
}
