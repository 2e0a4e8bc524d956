package checkpoint

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// CtrImages mounts container images with containerd's ctr, from the images containerd already
// has: a restore needs each container's image as its root filesystem's lower layer, exactly the
// one it ran on (runsc's self-backed overlay kept the writes, and the checkpoint holds them).
type CtrImages struct {
	// Ctr is the ctr binary, Address containerd's socket, Namespace the CRI's ("k8s.io").
	Ctr, Address, Namespace string
}

func (c CtrImages) run(ctx context.Context, args ...string) error {
	full := append([]string{"--address", c.Address, "--namespace", c.Namespace}, args...)
	out, err := exec.CommandContext(ctx, c.Ctr, full...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// mountLease is how long ctr's lease keeps a mounted snapshot from containerd's garbage
// collector; ctr always sets one (default 1h), and a restored sandbox may live longer.
const mountLease = "8760h"

// Mount mounts a writable snapshot of container c's image at target; it is a RootFS.
func (c CtrImages) Mount(ctx context.Context, ct Container, target string) error {
	return c.run(ctx, "images", "mount", "--rw", "--expiration="+mountLease, ct.Image, target)
}

// Unmount unmounts target and removes its snapshot.
func (c CtrImages) Unmount(ctx context.Context, target string) error {
	return c.run(ctx, "images", "unmount", "--rm", target)
}
