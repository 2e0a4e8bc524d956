package devenv

import (
	"errors"
	"fmt"
	"syscall"
)

// Unmount unmounts every mount at or below dir, deepest first, lazily when a plain unmount fails.
// A path mounted more than once (gVisor's shim stacks one null-netns mount per sandbox) needs one
// unmount per mount, so it goes over the mounts again while a pass unmounts something.
func Unmount(dir string) error {
	var errs []error
	for range 20 {
		mounts, err := readMounts()
		if err != nil {
			return err
		}
		left := MountsUnder(mounts, dir)
		if len(left) == 0 {
			return nil
		}
		errs = nil
		for _, m := range left {
			if err := syscall.Unmount(m, 0); err != nil {
				if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
					errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
				}
			}
		}
		if len(errs) == len(left) {
			break
		}
	}
	return errors.Join(errs...)
}
