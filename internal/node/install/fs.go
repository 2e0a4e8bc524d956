package install

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// errNotExist is returned for a missing file or folder.
var errNotExist = os.ErrNotExist

// maxConfigBytes bounds every file the installer reads.
const maxConfigBytes = 1 << 20

const resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// host is the node's root filesystem, opened once; every path is resolved beneath it.
type host struct{ fd int }

func openHost(root string) (*host, error) {
	if !path.IsAbs(root) {
		return nil, fmt.Errorf("host root %q must be an absolute path", root)
	}
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open host root %s: %w", root, err)
	}
	return &host{fd: fd}, nil
}

func (h *host) close() { closeFD(h.fd) }

func closeFD(fd int) { _ = unix.Close(fd) }

func openat(dir int, rel string, flags uint64, mode uint64) (int, error) {
	fd, err := unix.Openat2(dir, rel, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC | unix.O_NOFOLLOW, Mode: mode, Resolve: resolve})
	if errors.Is(err, unix.ENOENT) {
		return -1, fmt.Errorf("%s: %w", rel, errNotExist)
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return -1, fmt.Errorf("%s: a symbolic link is in the way; refusing to follow it: %w", rel, err)
	}
	return fd, err
}

func (h *host) openDir(rel string) (int, error) {
	return openat(h.fd, rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
}

// mkdirAll creates rel's folders (0755) one at a time, never through a link.
func (h *host) mkdirAll(rel string) (int, error) {
	dir, err := unix.Dup(h.fd)
	if err != nil {
		return -1, err
	}
	for _, name := range strings.Split(rel, "/") {
		if err := unix.Mkdirat(dir, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			closeFD(dir)
			return -1, fmt.Errorf("create %s: %w", rel, err)
		}
		next, err := openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		closeFD(dir)
		if err != nil {
			return -1, fmt.Errorf("open %s: %w", rel, err)
		}
		dir = next
	}
	return dir, nil
}

func (h *host) readFile(rel string) ([]byte, error) { return readAt(h.fd, rel, maxConfigBytes) }

// writeFile replaces rel atomically, keeping its mode.
func (h *host) writeFile(rel string, data []byte) error {
	dir, err := h.openDir(path.Dir(rel))
	if err != nil {
		return err
	}
	defer closeFD(dir)
	var st unix.Stat_t
	if err := unix.Fstatat(dir, path.Base(rel), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	return writeAtomic(dir, path.Base(rel), data, st.Mode&0o7777)
}

func readAt(dir int, rel string, limit int) ([]byte, error) {
	fd, err := openat(dir, rel, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", rel, limit)
	}
	return b, nil
}

// writeIfDiffers writes name in dir unless it already holds data; it reports a write.
func writeIfDiffers(dir int, name string, data []byte, mode uint32) (bool, error) {
	return writeIfDiffersLimit(dir, name, data, mode, maxConfigBytes)
}

func writeIfDiffersLimit(dir int, name string, data []byte, mode uint32, limit int) (bool, error) {
	cur, err := readAt(dir, name, limit)
	if err == nil && bytes.Equal(cur, data) {
		return false, nil
	}
	if err != nil && !errors.Is(err, errNotExist) {
		return false, err
	}
	return true, writeAtomic(dir, name, data, mode)
}

// writeAtomic replaces name in dir by a renamed temporary file; a link at name is refused.
func writeAtomic(dir int, name string, data []byte, mode uint32) error {
	var st unix.Stat_t
	err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s is not a regular file (a link?); refusing to replace it", name)
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	tmp := "." + name + ".kubox-tmp"
	_ = unix.Unlinkat(dir, tmp, 0)
	fd, err := openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, uint64(mode))
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	if err := writeSync(f, data, mode); err != nil {
		_ = unix.Unlinkat(dir, tmp, 0)
		return err
	}
	if err := unix.Renameat(dir, tmp, dir, name); err != nil {
		_ = unix.Unlinkat(dir, tmp, 0)
		return err
	}
	return unix.Fsync(dir)
}

func writeSync(f *os.File, data []byte, mode uint32) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(os.FileMode(mode & 0o777))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func unlinkAt(dir int, name string) error {
	if err := unix.Unlinkat(dir, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return nil
}
