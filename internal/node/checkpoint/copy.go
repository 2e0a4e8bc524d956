package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// DefaultMaxCopyBytes is Options.MaxCopyBytes when it is zero: what one checkpoint copies from
// the Pod's mounts at most, all together (kubox-node --max-copy-bytes).
const DefaultMaxCopyBytes int64 = 8 << 30

// entryBytes is what each file, folder and link counts against the copy limit besides its bytes,
// a block of the disk it takes: a sandbox's million empty files fill a disk's inodes too.
const entryBytes = 4096

// copyBudget bounds the bytes one checkpoint copies from the Pod's mounts, and its time (ctx).
type copyBudget struct {
	ctx         context.Context
	limit, used int64
}

func newCopyBudget(ctx context.Context, limit int64) *copyBudget {
	if limit <= 0 {
		limit = DefaultMaxCopyBytes
	}
	return &copyBudget{ctx: ctx, limit: limit}
}

// take counts n more bytes, and fails once the copy would exceed the limit or ctx has ended.
func (b *copyBudget) take(n int64) error {
	if err := b.ctx.Err(); err != nil {
		return err
	}
	if n > b.limit-b.used {
		return fmt.Errorf("the Pod's mounts hold more than %d bytes, the most kubox-node copies into one checkpoint "+
			"(--max-copy-bytes; each file, folder and link counts %d bytes besides its content): remove files from the mount, "+
			"or raise kubox-node's --max-copy-bytes", b.limit, entryBytes)
	}
	b.used += n
	return nil
}

// fileID tells one file of the node from another.
type fileID struct{ dev, ino uint64 }

func idOf(st *unix.Stat_t) fileID { return fileID{dev: uint64(st.Dev), ino: st.Ino} } //nolint:unconvert // Dev is uint32 on some platforms

// A copier copies the tree below root, opening every path beneath it (openat2 RESOLVE_BENEATH),
// never by a joined string. Without follow, for what the sandbox wrote, no link is ever followed
// (RESOLVE_NO_SYMLINKS, O_NOFOLLOW): a link is copied as the link it is, since followed on the
// node a link the sandbox made to a node file (/var/lib/kubelet/pki, /proc/kcore) would copy that
// file into the snapshot. With follow, for the kubelet's read-only volumes alone (a projected
// token is a tree of links into a timestamped folder), a link is followed while it stays in the
// volume; one that leads out is copied as the link.
type copier struct {
	root   int
	follow bool
	budget *copyBudget
	// entered are the folders being copied, from the root down, while following links: a link
	// to one of them is a loop, which ends the copy.
	entered map[fileID]bool
}

// copyTree copies the mount source src to dst, bounded by b. src itself is never a link: the
// kubelet and containerd bind-mount a folder or a file there, and a link in its place (the
// sandbox's) would be followed on the node by a restore's bind mount, so it is refused.
// Sockets, pipes and devices hold nothing to copy and are left out.
func copyTree(src, dst string, follow bool, b *copyBudget) error {
	fd, err := unix.Open(src, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: src, Err: err}
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: src, Err: err}
	}
	c := &copier{root: fd, follow: follow, budget: b, entered: map[fileID]bool{}}
	rel := "."
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return fmt.Errorf("its source %s is a symbolic link, which only the sandbox can have put there: "+
			"kubox-node neither follows nor keeps it", src)
	case unix.S_IFDIR:
	default: // a file, opened beneath its folder and never followed
		parent, err := unix.Open(filepath.Dir(src), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: filepath.Dir(src), Err: err}
		}
		defer func() { _ = unix.Close(parent) }()
		c.root, c.follow, rel = parent, false, filepath.Base(src)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	out, err := unix.Open(filepath.Dir(dst), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: filepath.Dir(dst), Err: err}
	}
	defer func() { _ = unix.Close(out) }()
	if err := c.copy(rel, out, filepath.Base(dst)); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	return nil
}

// open opens rel beneath the root with flags; followLast follows rel's last element when it is
// a link (with follow only).
func (c *copier) open(rel string, flags int, followLast bool) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	if !c.follow {
		how.Resolve |= unix.RESOLVE_NO_SYMLINKS
	}
	if !c.follow || !followLast {
		how.Flags |= unix.O_NOFOLLOW
	}
	for range 8 { // EAGAIN: a rename elsewhere on the filesystem raced the resolution
		fd, err := unix.Openat2(c.root, rel, &how)
		switch {
		case errors.Is(err, unix.EAGAIN):
			continue
		case errors.Is(err, unix.ENOSYS):
			return -1, fmt.Errorf("openat2 %s: %w: kubox-node needs Linux 5.6 or later to copy a Pod's files safely", rel, err)
		case err != nil:
			return -1, &os.PathError{Op: "openat2", Path: rel, Err: err}
		}
		return fd, nil
	}
	return -1, &os.PathError{Op: "openat2", Path: rel, Err: unix.EAGAIN}
}

// openEntry opens rel with O_PATH and stats it: followed when that stays beneath the root (with
// follow), as the link itself otherwise.
func (c *copier) openEntry(rel string) (fd int, followed bool, st unix.Stat_t, err error) {
	fd, err = c.open(rel, unix.O_PATH, true)
	followed = c.follow && err == nil
	if err != nil && c.follow {
		fd, err = c.open(rel, unix.O_PATH, false) // a link out of the volume, a loop, a dangling link
	}
	if err != nil {
		return -1, false, st, err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return -1, false, st, &os.PathError{Op: "stat", Path: rel, Err: err}
	}
	return fd, followed, st, nil
}

// copy copies rel, below the root, to name in the folder dstDir.
func (c *copier) copy(rel string, dstDir int, name string) error {
	fd, followed, st, err := c.openEntry(rel)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	perm := uint32(st.Mode & 0o777) // never setuid, setgid or sticky: the copies are root's
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return c.copyLink(fd, rel, dstDir, name)
	case unix.S_IFREG:
		return c.copyFile(rel, followed, &st, dstDir, name, perm)
	case unix.S_IFDIR:
		return c.copyDir(rel, followed, &st, dstDir, name, perm)
	}
	return nil
}

// copyLink makes name in dstDir a link with the target of the link fd, which is never resolved.
func (c *copier) copyLink(fd int, rel string, dstDir int, name string) error {
	if err := c.budget.take(entryBytes); err != nil {
		return err
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return &os.PathError{Op: "readlink", Path: rel, Err: err}
	}
	if err := unix.Symlinkat(string(buf[:n]), dstDir, name); err != nil {
		return &os.PathError{Op: "symlink", Path: rel, Err: err}
	}
	return nil
}

// copyFile copies the regular file rel (st) to name in dstDir: at most the size it had when
// stat'ed, so a file that grows while it is copied (a shared volume) stays within the budget.
func (c *copier) copyFile(rel string, followed bool, st *unix.Stat_t, dstDir int, name string, perm uint32) error {
	if err := c.budget.take(entryBytes + st.Size); err != nil {
		return err
	}
	in, err := c.reopen(rel, unix.O_RDONLY|unix.O_NONBLOCK, followed, st)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	ofd, err := unix.Openat(dstDir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return &os.PathError{Op: "create", Path: rel, Err: err}
	}
	out := os.NewFile(uintptr(ofd), name)
	if _, err := io.Copy(out, io.LimitReader(in, st.Size)); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// copyDir makes name in dstDir a folder and copies rel's entries into it.
func (c *copier) copyDir(rel string, followed bool, st *unix.Stat_t, dstDir int, name string, perm uint32) error {
	if err := c.budget.take(entryBytes); err != nil {
		return err
	}
	if c.follow { // a folder inside itself: a loop of links
		if c.entered[idOf(st)] {
			return fmt.Errorf("%s: a loop of symbolic links", rel)
		}
		c.entered[idOf(st)] = true
		defer delete(c.entered, idOf(st))
	}
	dir, err := c.reopen(rel, unix.O_RDONLY|unix.O_DIRECTORY, followed, st)
	if err != nil {
		return err
	}
	defer func() { _ = dir.Close() }()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return err
	}
	if err := unix.Mkdirat(dstDir, name, perm|0o700); err != nil {
		return &os.PathError{Op: "mkdir", Path: rel, Err: err}
	}
	out, err := unix.Openat(dstDir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: rel, Err: err}
	}
	defer func() { _ = unix.Close(out) }()
	for _, n := range names {
		if err := c.copy(path.Join(rel, n), out, n); err != nil {
			return err
		}
	}
	return nil
}

// reopen opens rel again to read it, as it was opened to stat it (st), and checks that it is still
// the same file: never another the sandbox swapped in since.
func (c *copier) reopen(rel string, flags int, followed bool, st *unix.Stat_t) (*os.File, error) {
	fd, err := c.open(rel, flags, followed)
	if err != nil {
		return nil, err
	}
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil || idOf(&now) != idOf(st) || now.Mode&unix.S_IFMT != st.Mode&unix.S_IFMT {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("%s changed while it was copied", rel)
	}
	return os.NewFile(uintptr(fd), rel), nil
}
