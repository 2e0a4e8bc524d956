//go:build !linux

package files

import (
	"syscall"
)

// rename renames src to dst (both relative to the root) through the os.Root. kubox-agent runs on
// Linux (rename_linux.go); this portable version, for building on a contributor's macOS, checks
// noReplace before renaming, which is not atomic.
func (r *Root) rename(src, dst string, noReplace bool) error {
	if noReplace {
		if _, err := r.fs.Lstat(dst); err == nil {
			return syscall.EEXIST
		}
	}
	return unwrapPathError(r.fs.Rename(src, dst))
}
