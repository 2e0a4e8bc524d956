package files

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"sync"
	"syscall"
)

// copyBufferSize is the buffer each upload or download copies through: memory per transfer is
// bounded by it whatever the file's size.
const copyBufferSize = 1 << 20

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, copyBufferSize); return &b }}

// tempPrefix starts the names of the temporary files uploads are written to before the rename.
const tempPrefix = ".kubox-upload-"

// Open opens the file at p for reading, following a final symbolic link, and returns it with its
// description. A directory is opened too (for listing); a device, FIFO or socket is refused with
// ErrInvalid, and opening one never blocks. The caller closes the file.
func (r *Root) Open(p string) (*os.File, Entry, error) {
	t, err := r.resolve("read", p, true)
	if err != nil {
		return nil, Entry{}, err
	}
	f, err := r.fs.OpenFile(t.name(), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, Entry{}, fromOS("read", t.shown, unwrapPathError(err))
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, Entry{}, fromOS("read", t.shown, unwrapPathError(err))
	}
	if !info.Mode().IsRegular() && !info.IsDir() {
		_ = f.Close()
		return nil, Entry{}, &Error{Op: "read", Path: t.shown, Kind: ErrInvalid,
			Hint: "it is not a regular file (a device, FIFO or socket); only files can be read"}
	}
	return f, r.entry(t.rel, info), nil
}

// WriteOptions tune WriteFile.
type WriteOptions struct {
	// Mode is the file's permission bits (the umask does not apply). Nil keeps the mode of the
	// file being replaced, or gives a new file DefaultFileMode.
	Mode *fs.FileMode
	// NoSync skips the fsync of the file and its directory: for a file that is written again
	// after any restart (a claim's settings), atomicity without durability is enough.
	NoSync bool
}

// WriteFile replaces the file at p with what src holds, atomically: it streams src to a
// temporary file in the same directory, syncs it, and renames it over p, so readers see the old
// file or the new one, never a part. A final symbolic link is followed (the link's target is
// written). Missing parent directories are created with DefaultDirMode. When the agent runs as
// root, a replaced file keeps its owner. If src fails (a client that disconnects), p is untouched.
func (r *Root) WriteFile(p string, src io.Reader, opts WriteOptions) (Entry, error) {
	if opts.Mode != nil && *opts.Mode&^modeBits != 0 {
		return Entry{}, &Error{Op: "write", Path: r.shown(p), Kind: ErrInvalid,
			Hint: "a mode holds permission bits (at most 07777)"}
	}
	t, err := r.resolve("write", p, true)
	if err != nil {
		return Entry{}, err
	}
	return r.writeFile("write", t, src, opts)
}

func (r *Root) writeFile(op string, t target, src io.Reader, opts WriteOptions) (Entry, error) {
	mode := opts.Mode
	if t.rel == "" {
		return Entry{}, newError(op, t.shown, ErrIsDirectory, nil)
	}
	var old fs.FileInfo
	if t.exists {
		info, err := r.fs.Lstat(t.rel)
		switch {
		case err == nil && info.IsDir():
			return Entry{}, newError(op, t.shown, ErrIsDirectory, nil)
		case err == nil && info.Mode().IsRegular():
			old = info
		}
	}
	dir := path.Dir(t.rel)
	if dir != "." {
		if err := r.mkdirAll(op, target{rel: dir, shown: t.shown}, DefaultDirMode); err != nil {
			return Entry{}, err
		}
	}
	perm := DefaultFileMode
	switch {
	case mode != nil:
		perm = *mode
	case old != nil:
		perm = old.Mode() & modeBits
	}

	tmpRel, tmp, err := r.createTemp(dir)
	if err != nil {
		return Entry{}, fromOS(op, t.shown, err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = r.fs.Remove(tmpRel)
		}
	}()
	if old != nil {
		keepOwner(tmp, old)
	}
	bp := copyBuffers.Get().(*[]byte)
	_, err = copyBuffer(tmp, src, *bp)
	copyBuffers.Put(bp)
	if err != nil {
		return Entry{}, fromOS(op, t.shown, unwrapPathError(err))
	}
	// The mode goes on after the content: a write by a process without CAP_FSETID (an agent not
	// running as root) clears the setuid and setgid bits, and the file stays 0600 while written.
	if err := tmp.Chmod(perm); err != nil {
		return Entry{}, fromOS(op, t.shown, unwrapPathError(err))
	}
	if !opts.NoSync {
		if err := tmp.Sync(); err != nil {
			return Entry{}, fromOS(op, t.shown, unwrapPathError(err))
		}
	}
	if err := tmp.Close(); err != nil {
		return Entry{}, fromOS(op, t.shown, unwrapPathError(err))
	}
	if err := r.fs.Rename(tmpRel, t.rel); err != nil {
		return Entry{}, fromOS(op, t.shown, unwrapPathError(err))
	}
	done = true
	if !opts.NoSync {
		r.syncDir(dir)
	}
	info, err := r.fs.Lstat(t.rel)
	if err != nil {
		return Entry{}, fromOS(op, t.shown, unwrapPathError(err))
	}
	return r.entry(t.rel, info), nil
}

// createTemp creates a new, empty, private file in dir (relative to the root).
func (r *Root) createTemp(dir string) (string, *os.File, error) {
	for range 10 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		rel := path.Join(dir, tempPrefix+hex.EncodeToString(b[:]))
		f, err := r.fs.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			return rel, f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", nil, unwrapPathError(err)
		}
	}
	return "", nil, syscall.EEXIST
}

// syncDir makes a rename in dir durable. A failure leaves the rename done but perhaps not yet on
// disk, which the caller cannot act on, so it is ignored.
func (r *Root) syncDir(dir string) {
	d, err := r.fs.Open(nameOf(dir))
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// keepOwner gives f the owner of old when the agent may (it runs as root); otherwise the new
// file belongs to the agent's user, as any file it creates.
func keepOwner(f *os.File, old fs.FileInfo) {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok || os.Geteuid() != 0 {
		return
	}
	_ = f.Chown(int(st.Uid), int(st.Gid))
}
