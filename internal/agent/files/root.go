package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// maxSymlinks bounds the symbolic links one resolution follows, as the kernel's MAXSYMLINKS does.
const maxSymlinks = 40

// Root resolves the paths clients name and performs file operations on them. Its methods are
// safe for concurrent use. See the package documentation for how paths are confined.
type Root struct {
	// dir is the root directory: absolute, clean, with symbolic links evaluated. "/" for a host root.
	dir string
	// aliases are the spellings of dir that an absolute symbolic link target may start with to
	// stay inside the root: dir itself and the directory as configured, when that differs.
	aliases []string
	// confined is false for a host root, where ".." above "/" stays at "/" as in the kernel.
	confined bool
	// workDir is where relative paths start (relative to dir, "" for dir itself).
	workDir string
	// fs performs every operation, so that none leaves dir even if the tree changes under us.
	fs *os.Root
}

// NewRoot returns a Root that confines every path to the directory dir, which must exist. Paths
// are relative to dir whether or not they start with "/": "/a/b" and "a/b" both name dir/a/b.
func NewRoot(dir string) (*Root, error) {
	if dir == "" {
		return nil, fmt.Errorf("the sandbox root is empty; give a directory such as /workspace, or use a host root")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("the sandbox root %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("the sandbox root %s cannot be used: %w; create it or give another directory", dir, err)
	}
	return openRoot(real, abs, true, "")
}

// NewHostRoot returns a Root that confines nothing: paths are the container's own absolute paths,
// and relative paths are relative to workDir (an absolute directory, "/" when empty).
func NewHostRoot(workDir string) (*Root, error) {
	if workDir == "" {
		workDir = "/"
	}
	if !filepath.IsAbs(workDir) {
		return nil, fmt.Errorf("the working directory %s is not absolute; give an absolute path", workDir)
	}
	return openRoot("/", "/", false, strings.TrimPrefix(path.Clean(workDir), "/"))
}

func openRoot(real, configured string, confined bool, workDir string) (*Root, error) {
	info, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("the sandbox root %s cannot be used: %w", configured, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("the sandbox root %s is not a directory; give a directory", configured)
	}
	osRoot, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("opening the sandbox root %s: %w", configured, err)
	}
	r := &Root{dir: real, aliases: []string{real}, confined: confined, workDir: workDir, fs: osRoot}
	if configured != real {
		r.aliases = append(r.aliases, configured)
	}
	return r, nil
}

// Close releases the root directory. Methods called after Close fail.
func (r *Root) Close() error { return r.fs.Close() }

// Dir returns the root directory (symbolic links evaluated): "/" for a host root.
func (r *Root) Dir() string { return r.dir }

// Confined reports whether the root confines paths (NewRoot) or not (NewHostRoot).
func (r *Root) Confined() bool { return r.confined }

// Resolve returns the path on the host that p names, with every symbolic link followed (the
// final one too). It fails with ErrOutsideRoot when p leads outside a confined root. Components
// that do not exist yet are kept as given, so p may name a file about to be created; a ".."
// after a missing component fails with ErrNotFound, as it would in the kernel.
func (r *Root) Resolve(p string) (string, error) {
	t, err := r.resolve("resolve", p, true)
	if err != nil {
		return "", err
	}
	return r.hostPath(t.rel), nil
}

// target is a resolved path.
type target struct {
	// rel is the path relative to the root directory, slash-separated and clean, without ".."
	// components; "" is the root itself.
	rel string
	// shown is the path as the client gave it, for messages.
	shown string
	// exists reports whether every component of rel existed during resolution.
	exists bool
}

// name is rel as os.Root methods take it.
func (t target) name() string {
	if t.rel == "" {
		return "."
	}
	return t.rel
}

// sandboxPath is the path clients see for rel: absolute, relative to the root for a confined root.
func sandboxPath(rel string) string { return "/" + rel }

// hostPath is the path of rel on the host.
func (r *Root) hostPath(rel string) string { return path.Join(r.dir, rel) }

// shown is p as messages name it.
func (r *Root) shown(p string) string {
	if p == "" {
		return sandboxPath(r.workDir)
	}
	return p
}

// resolve turns the client's path p into a target. followFinal says whether a final symbolic
// link is followed (for reading and writing through it) or named itself (for Stat, Remove, Move).
func (r *Root) resolve(op, p string, followFinal bool) (target, error) {
	shown := r.shown(p)
	if strings.IndexByte(p, 0) >= 0 {
		return target{}, &Error{Op: op, Path: strings.ReplaceAll(shown, "\x00", `\x00`), Kind: ErrInvalid,
			Hint: "paths cannot contain NUL bytes"}
	}
	if !r.confined && !strings.HasPrefix(p, "/") {
		p = r.workDir + "/" + p
	}
	todo := splitPath(p)
	var cur []string
	links, exists := 0, true
	for len(todo) > 0 {
		elem := todo[0]
		todo = todo[1:]
		switch elem {
		case "", ".":
			continue
		case "..":
			if !exists {
				return target{}, newError(op, shown, ErrNotFound, nil)
			}
			if len(cur) == 0 {
				if r.confined {
					return target{}, newError(op, shown, ErrOutsideRoot, nil)
				}
				continue
			}
			cur = cur[:len(cur)-1]
			continue
		}
		cur = append(cur, elem)
		if !exists {
			continue
		}
		host := r.hostPath(strings.Join(cur, "/"))
		info, err := os.Lstat(host)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			exists = false
			continue
		case err != nil:
			return target{}, fromOS(op, shown, unwrapPathError(err))
		case info.Mode()&fs.ModeSymlink == 0 || (len(todo) == 0 && !followFinal):
			if len(todo) > 0 && !info.IsDir() {
				return target{}, newError(op, shown, ErrNotDirectory, nil)
			}
			continue
		}
		links++
		if links > maxSymlinks {
			return target{}, fromOS(op, shown, syscall.ELOOP)
		}
		dest, err := os.Readlink(host)
		if err != nil {
			return target{}, fromOS(op, shown, unwrapPathError(err))
		}
		cur = cur[:len(cur)-1]
		if path.IsAbs(dest) {
			rel, ok := r.relative(dest)
			if !ok {
				return target{}, newError(op, shown, ErrOutsideRoot, nil)
			}
			cur = cur[:0]
			dest = rel
		}
		todo = append(splitPath(dest), todo...)
	}
	return target{rel: strings.Join(cur, "/"), shown: shown, exists: exists}, nil
}

// relative returns the absolute path abs relative to the root, if it is inside.
func (r *Root) relative(abs string) (string, bool) {
	abs = path.Clean(abs)
	for _, a := range r.aliases {
		switch {
		case a == "/":
			return strings.TrimPrefix(abs, "/"), true
		case abs == a:
			return "", true
		case strings.HasPrefix(abs, a+"/"):
			return abs[len(a)+1:], true
		}
	}
	return "", false
}

// splitPath splits p into its components, dropping empty ones.
func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(c rune) bool { return c == '/' })
}

// unwrapPathError drops the *fs.PathError around err: its path is the host path, and messages
// name the client's path instead.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
