package files

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"
)

// EntryType is what kind of file an entry is.
type EntryType int

const (
	// TypeFile is a regular file.
	TypeFile EntryType = iota + 1
	// TypeDirectory is a directory.
	TypeDirectory
	// TypeSymlink is a symbolic link (not followed).
	TypeSymlink
	// TypeOther is anything else: a device, a FIFO, a socket.
	TypeOther
)

// String returns "file", "directory", "symlink" or "other".
func (t EntryType) String() string {
	switch t {
	case TypeFile:
		return "file"
	case TypeDirectory:
		return "directory"
	case TypeSymlink:
		return "symlink"
	}
	return "other"
}

// Entry describes one file.
type Entry struct {
	// Name is the last element of Path ("/" for the root).
	Name string
	// Path is the file's path in the sandbox, with symbolic links in its parent directories resolved.
	Path string
	// Type is the kind of file; a symbolic link is reported as TypeSymlink, not as its target.
	Type EntryType
	// Size is the length in bytes of a file, or of a link's target text; the file system's size for others.
	Size int64
	// Mode holds the permission bits and the setuid, setgid and sticky bits.
	Mode fs.FileMode
	// ModTime is the last modification time.
	ModTime time.Time
	// SymlinkTarget is what a symbolic link points to, as stored in the link; empty otherwise.
	SymlinkTarget string
}

// DefaultDirMode is the mode MakeDir gives directories, and WriteFile gives the parent
// directories it creates, when no mode is asked for.
const DefaultDirMode fs.FileMode = 0o755

// DefaultFileMode is the mode WriteFile gives a new file when no mode is asked for.
const DefaultFileMode fs.FileMode = 0o644

// modeBits are the bits of a fs.FileMode that Entry.Mode and the modes callers give carry.
const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

func (r *Root) entry(rel string, info fs.FileInfo) Entry {
	p := sandboxPath(rel)
	e := Entry{
		Name:    path.Base(p),
		Path:    p,
		Size:    info.Size(),
		Mode:    info.Mode() & modeBits,
		ModTime: info.ModTime(),
	}
	switch m := info.Mode(); {
	case m.IsRegular():
		e.Type = TypeFile
	case m.IsDir():
		e.Type = TypeDirectory
	case m&fs.ModeSymlink != 0:
		e.Type = TypeSymlink
		if dest, err := r.fs.Readlink(nameOf(rel)); err == nil {
			e.SymlinkTarget = dest
		}
	default:
		e.Type = TypeOther
	}
	return e
}

// nameOf is rel as os.Root methods take it.
func nameOf(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// Stat describes the file at p. A final symbolic link is described itself, not followed.
func (r *Root) Stat(p string) (Entry, error) {
	t, err := r.resolve("stat", p, false)
	if err != nil {
		return Entry{}, err
	}
	info, err := r.fs.Lstat(t.name())
	if err != nil {
		return Entry{}, fromOS("stat", t.shown, unwrapPathError(err))
	}
	return r.entry(t.rel, info), nil
}

// statTarget describes what p leads to, following a final symbolic link.
func (r *Root) statTarget(p string) (Entry, error) {
	t, err := r.resolve("stat", p, true)
	if err != nil {
		return Entry{}, err
	}
	info, err := r.fs.Stat(t.name())
	if err != nil {
		return Entry{}, fromOS("stat", t.shown, unwrapPathError(err))
	}
	return r.entry(t.rel, info), nil
}

// List describes the entries of the directory p (a final symbolic link is followed), sorted by
// path. depth 1 (or less) lists the directory's own entries; depth n also lists the entries of
// its subdirectories down to n levels. Symbolic links to directories are listed, not entered.
func (r *Root) List(p string, depth int) ([]Entry, error) {
	t, err := r.resolve("list", p, true)
	if err != nil {
		return nil, err
	}
	depth = max(depth, 1)
	var entries []Entry
	type dir struct {
		rel   string
		level int
	}
	queue := []dir{{t.rel, 1}}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		f, err := r.fs.Open(nameOf(d.rel))
		if err != nil {
			if d.rel != t.rel && errors.Is(err, fs.ErrNotExist) {
				continue // removed while we listed
			}
			return nil, fromOS("list", t.shown, unwrapPathError(err))
		}
		children, err := f.ReadDir(-1)
		_ = f.Close()
		if err != nil {
			if d.rel == t.rel {
				return nil, fromOS("list", t.shown, unwrapPathError(err))
			}
			continue // a subdirectory that is not readable: list what we can
		}
		for _, c := range children {
			info, err := c.Info()
			if err != nil {
				continue // removed since ReadDir
			}
			rel := path.Join(d.rel, c.Name())
			entries = append(entries, r.entry(rel, info))
			if info.IsDir() && d.level < depth {
				queue = append(queue, dir{rel, d.level + 1})
			}
		}
	}
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return entries, nil
}

// MakeDir creates the directory p with mode (permission bits; 0 means DefaultDirMode, and the
// umask does not apply). With parents, missing parent directories are created with
// DefaultDirMode, and a directory already at p is not an error; without, p's parent must exist
// and p must not.
func (r *Root) MakeDir(p string, parents bool, mode fs.FileMode) (Entry, error) {
	if mode&^modeBits != 0 {
		return Entry{}, &Error{Op: "mkdir", Path: r.shown(p), Kind: ErrInvalid,
			Hint: "a mode holds permission bits (at most 07777)"}
	}
	if mode == 0 {
		mode = DefaultDirMode
	}
	t, err := r.resolve("mkdir", p, true)
	if err != nil {
		return Entry{}, err
	}
	if parents {
		err = r.mkdirAll("mkdir", t, mode)
	} else {
		err = r.mkdir(t.rel, mode)
		if errors.Is(err, fs.ErrNotExist) {
			return Entry{}, &Error{Op: "mkdir", Path: t.shown, Kind: ErrNotFound, Err: err,
				Hint: "its parent directory does not exist; create it first, or pass parents=true"}
		}
	}
	if err != nil {
		return Entry{}, fromOS("mkdir", t.shown, err)
	}
	info, err := r.fs.Lstat(t.name())
	if err != nil {
		return Entry{}, fromOS("mkdir", t.shown, unwrapPathError(err))
	}
	return r.entry(t.rel, info), nil
}

// mkdir creates rel with exactly mode.
func (r *Root) mkdir(rel string, mode fs.FileMode) error {
	if rel == "" {
		return syscall.EEXIST
	}
	if err := r.fs.Mkdir(rel, mode&fs.ModePerm); err != nil {
		return unwrapPathError(err)
	}
	return unwrapPathError(r.fs.Chmod(rel, mode))
}

// mkdirAll creates t.rel with mode and its missing parents with DefaultDirMode. A file (not a
// directory) in the way fails with ErrExists for t itself and ErrNotDirectory for a parent.
func (r *Root) mkdirAll(op string, t target, mode fs.FileMode) error {
	elems := splitPath(t.rel)
	for i := range elems {
		rel := strings.Join(elems[:i+1], "/")
		m := DefaultDirMode
		if i == len(elems)-1 {
			m = mode
		}
		err := r.mkdir(rel, m)
		if err == nil || !errors.Is(err, fs.ErrExist) {
			if err != nil {
				return fromOS(op, t.shown, err)
			}
			continue
		}
		info, serr := r.fs.Stat(rel)
		switch {
		case serr != nil:
			return fromOS(op, t.shown, unwrapPathError(serr))
		case info.IsDir():
			continue
		case i == len(elems)-1:
			return &Error{Op: op, Path: t.shown, Kind: ErrExists, Hint: "a file is in the way; remove it or choose another path"}
		default:
			return newError(op, t.shown, ErrNotDirectory, nil)
		}
	}
	return nil
}

// Move renames source to destination, which is the entry's new path (not a directory to move it
// into). Symbolic links are moved, not followed. Without overwrite an existing destination fails
// with ErrExists; with it, a file or an empty directory there is replaced. Moves between file
// systems copy regular files and then remove the source; directories cannot move between them.
func (r *Root) Move(source, destination string, overwrite bool) (Entry, error) {
	src, err := r.resolve("move", source, false)
	if err != nil {
		return Entry{}, err
	}
	dst, err := r.resolve("move", destination, false)
	if err != nil {
		return Entry{}, err
	}
	if src.rel == "" || dst.rel == "" {
		return Entry{}, &Error{Op: "move", Path: src.shown + " to " + dst.shown, Kind: ErrInvalid,
			Hint: "the root directory cannot be moved or replaced"}
	}
	if _, err := r.fs.Lstat(src.rel); err != nil {
		return Entry{}, fromOS("move", src.shown, unwrapPathError(err))
	}
	if src.rel == dst.rel {
		info, err := r.fs.Lstat(dst.rel)
		if err != nil {
			return Entry{}, fromOS("move", dst.shown, unwrapPathError(err))
		}
		return r.entry(dst.rel, info), nil
	}
	err = r.rename(src.rel, dst.rel, !overwrite)
	if errors.Is(err, syscall.EXDEV) {
		err = r.moveAcross(src, dst, overwrite)
	}
	if err != nil {
		return Entry{}, r.moveError(src, dst, err)
	}
	info, err := r.fs.Lstat(dst.rel)
	if err != nil {
		return Entry{}, fromOS("move", dst.shown, unwrapPathError(err))
	}
	return r.entry(dst.rel, info), nil
}

// moveError names the path a failed rename is about.
func (r *Root) moveError(src, dst target, err error) error {
	var fe *Error
	switch {
	case errors.As(err, &fe):
		return err
	case errors.Is(err, fs.ErrExist) && !errors.Is(err, syscall.ENOTEMPTY):
		return &Error{Op: "move", Path: dst.shown, Kind: ErrExists, Err: err,
			Hint: "choose another destination, or pass overwrite=true to replace it"}
	case errors.Is(err, syscall.ENOTEMPTY):
		return &Error{Op: "move", Path: dst.shown, Kind: ErrNotEmpty, Err: err,
			Hint: "only an empty directory can be replaced; remove its contents first"}
	case errors.Is(err, syscall.EINVAL):
		return &Error{Op: "move", Path: src.shown + " to " + dst.shown, Kind: ErrInvalid, Err: err,
			Hint: "a directory cannot be moved into itself"}
	case errors.Is(err, fs.ErrNotExist):
		return &Error{Op: "move", Path: dst.shown, Kind: ErrNotFound, Err: err,
			Hint: "the destination's parent directory does not exist; create it first"}
	}
	return fromOS("move", src.shown+" to "+dst.shown, err)
}

// moveAcross moves a regular file to another file system: copy, then remove the source.
func (r *Root) moveAcross(src, dst target, overwrite bool) error {
	info, err := r.fs.Lstat(src.rel)
	if err != nil {
		return unwrapPathError(err)
	}
	if !info.Mode().IsRegular() {
		return &Error{Op: "move", Path: src.shown + " to " + dst.shown, Kind: ErrInvalid, Err: syscall.EXDEV,
			Hint: "only regular files can be moved to another file system; copy the directory and remove it"}
	}
	if !overwrite {
		if _, err := r.fs.Lstat(dst.rel); err == nil {
			return syscall.EEXIST
		}
	}
	f, err := r.fs.Open(src.rel)
	if err != nil {
		return unwrapPathError(err)
	}
	defer func() { _ = f.Close() }()
	mode := info.Mode() & modeBits
	if _, err := r.writeFile("move", dst, f, WriteOptions{Mode: &mode}); err != nil {
		return err
	}
	return unwrapPathError(r.fs.Remove(src.rel))
}

// Remove deletes p: a file, a symbolic link (not its target) or an empty directory, or with
// recursive a directory and everything in it. Removing the root removes what it contains, never
// the directory itself (usually a volume), and is refused for a host root.
func (r *Root) Remove(p string, recursive bool) error {
	t, err := r.resolve("remove", p, false)
	if err != nil {
		return err
	}
	if _, err := r.fs.Lstat(t.name()); err != nil {
		return fromOS("remove", t.shown, unwrapPathError(err))
	}
	if t.rel == "" {
		return r.clear(t, recursive)
	}
	if recursive {
		err = r.fs.RemoveAll(t.rel)
	} else {
		err = r.fs.Remove(t.rel)
	}
	err = unwrapPathError(err)
	if !recursive && errors.Is(err, syscall.EEXIST) {
		err = syscall.ENOTEMPTY // some file systems report a non-empty directory as EEXIST
	}
	return fromOS("remove", t.shown, err)
}

// clear removes the root's contents.
func (r *Root) clear(t target, recursive bool) error {
	if !r.confined {
		return &Error{Op: "remove", Path: t.shown, Kind: ErrInvalid,
			Hint: "the agent does not remove the container's root directory; name what to remove"}
	}
	f, err := r.fs.Open(".")
	if err != nil {
		return fromOS("remove", t.shown, unwrapPathError(err))
	}
	names, err := f.Readdirnames(-1)
	_ = f.Close()
	if err != nil {
		return fromOS("remove", t.shown, unwrapPathError(err))
	}
	if len(names) > 0 && !recursive {
		return newError("remove", t.shown, ErrNotEmpty, nil)
	}
	for _, n := range names {
		if err := r.fs.RemoveAll(n); err != nil {
			return fromOS("remove", path.Join(t.shown, n), unwrapPathError(err))
		}
	}
	return nil
}

// copyBuffer copies src to dst through buf, without letting dst or src pick their own buffer.
func copyBuffer(dst io.Writer, src io.Reader, buf []byte) (int64, error) {
	return io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, buf)
}
