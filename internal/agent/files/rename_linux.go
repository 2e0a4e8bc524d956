package files

import (
	"errors"
	"path"

	"golang.org/x/sys/unix"
)

// rename renames src to dst (both relative to the root) with renameat2 on their parent
// directories, each opened through the os.Root so that neither is outside the root, and each name
// a single component so that nothing is resolved outside it. Unlike os.Rename it replaces an empty
// directory, as rename(2) does. With noReplace it fails with EEXIST instead of replacing, atomically
// (RENAME_NOREPLACE); file systems without RENAME_NOREPLACE fall back to a check followed by a
// rename, which a file created at dst in between would lose to.
func (r *Root) rename(src, dst string, noReplace bool) error {
	sdir, err := r.fs.Open(path.Dir(src))
	if err != nil {
		return unwrapPathError(err)
	}
	defer func() { _ = sdir.Close() }()
	ddir, err := r.fs.Open(path.Dir(dst))
	if err != nil {
		return unwrapPathError(err)
	}
	defer func() { _ = ddir.Close() }()
	sfd, dfd := int(sdir.Fd()), int(ddir.Fd())
	if !noReplace {
		return unix.Renameat(sfd, path.Base(src), dfd, path.Base(dst))
	}
	err = unix.Renameat2(sfd, path.Base(src), dfd, path.Base(dst), unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		if _, serr := r.fs.Lstat(dst); serr == nil {
			return unix.EEXIST
		}
		return unix.Renameat(sfd, path.Base(src), dfd, path.Base(dst))
	}
	return err
}
