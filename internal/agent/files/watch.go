package files

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/fsnotify/fsnotify"
)

// EventOp is what happened to a file.
type EventOp int

const (
	// OpCreate means the file was created, or moved into a watched directory.
	OpCreate EventOp = iota + 1
	// OpWrite means the file's content changed.
	OpWrite
	// OpRemove means the file was removed.
	OpRemove
	// OpRename means the file was moved away; where it went is reported as OpCreate if watched.
	OpRename
	// OpChmod means the file's metadata (mode, owner, times) changed.
	OpChmod
)

// String returns "create", "write", "remove", "rename" or "chmod".
func (o EventOp) String() string {
	switch o {
	case OpCreate:
		return "create"
	case OpWrite:
		return "write"
	case OpRemove:
		return "remove"
	case OpRename:
		return "rename"
	case OpChmod:
		return "chmod"
	}
	return "unknown"
}

// Event is one change to one file.
type Event struct {
	Op EventOp
	// Path is the changed file's path in the sandbox.
	Path string
}

// Watcher reports changes under a directory. Close it when done.
type Watcher struct {
	root      *Root
	fsw       *fsnotify.Watcher
	recursive bool
	// host is the watched directory's path on the host, dir its path in the sandbox, shown the
	// client's spelling of it.
	host, dir, shown string
	// pending holds events waiting to be returned, oldest first.
	pending []Event
	// watched holds the host paths of the directories being watched.
	watched map[string]bool
	// selfRenamed holds the host paths of moved directories whose own report of the move (which
	// fsnotify sends besides their parent's) is still to come, to be dropped.
	selfRenamed map[string]bool
	// ended, once set, is returned when pending is empty: the watched directory is gone.
	ended error
}

// Watch starts watching the directory p (a final symbolic link is followed) for files created,
// written, removed, renamed and changing metadata in it, and with recursive in all its
// subdirectories, including those created or moved in later. Every change made after Watch
// returns is reported. Symbolic links to directories are not entered.
//
// A directory created under a recursive watch is watched as soon as its creation is seen; what is
// created in it before that is reported as OpCreate events found by reading it, so a file may be
// reported created twice. Changes are reported by path: a file renamed inside the tree is an
// OpRename of its old path and an OpCreate of its new one. When the watched directory itself is
// removed or moved, that is reported and Next then fails with ErrNotFound.
func (r *Root) Watch(p string, recursive bool) (*Watcher, error) {
	t, err := r.resolve("watch", p, true)
	if err != nil {
		return nil, err
	}
	info, err := r.fs.Lstat(t.name())
	if err != nil {
		return nil, fromOS("watch", t.shown, unwrapPathError(err))
	}
	if !info.IsDir() {
		return nil, &Error{Op: "watch", Path: t.shown, Kind: ErrNotDirectory, Hint: "only directories can be watched; watch its parent"}
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, watchError(t.shown, err)
	}
	w := &Watcher{
		root: r, fsw: fsw, recursive: recursive,
		host: r.hostPath(t.rel), dir: sandboxPath(t.rel), shown: t.shown,
		watched: map[string]bool{}, selfRenamed: map[string]bool{},
	}
	if err := w.add(w.host, false); err != nil {
		_ = fsw.Close()
		return nil, err
	}
	return w, nil
}

// Dir returns the watched directory's path in the sandbox (symbolic links resolved).
func (w *Watcher) Dir() string { return w.dir }

// Close stops the watch.
func (w *Watcher) Close() error { return w.fsw.Close() }

// add watches the host directory dir and, for a recursive watch, the directories under it. With
// report, what is found under dir is queued as OpCreate events (dir was just created).
func (w *Watcher) add(dir string, report bool) error {
	if !w.recursive {
		if err := w.fsw.Add(dir); err != nil {
			return watchError(w.shown, err)
		}
		w.watched[dir] = true
		return nil
	}
	return filepath.WalkDir(dir, func(host string, d fs.DirEntry, err error) error {
		if err != nil {
			if host != dir && errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return watchError(w.shown, err)
		}
		if report && host != dir {
			if rel, ok := w.root.relative(host); ok {
				w.pending = append(w.pending, Event{Op: OpCreate, Path: sandboxPath(rel)})
			}
		}
		if !d.IsDir() {
			return nil
		}
		if err := w.fsw.Add(host); err != nil {
			if host != dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipDir
			}
			return watchError(w.shown, err)
		}
		w.watched[host] = true
		return nil
	})
}

// forget stops watching the directory host and those under it (it was moved or removed). It
// reports whether host's own watch was still in place.
func (w *Watcher) forget(host string) bool {
	had := false
	for p := range w.watched {
		if p == host || strings.HasPrefix(p, host+"/") {
			delete(w.watched, p)
			if err := w.fsw.Remove(p); err == nil && p == host {
				had = true
			}
		}
	}
	return had
}

// Next returns the next change, waiting for one until ctx ends. It fails with ErrResourceExhausted when
// the kernel dropped events (the caller should list the directory again and start a new watch),
// and with ErrNotFound after the watched directory itself was removed or moved.
func (w *Watcher) Next(ctx context.Context) (Event, error) {
	for {
		if len(w.pending) > 0 {
			e := w.pending[0]
			w.pending = w.pending[1:]
			return e, nil
		}
		if w.ended != nil {
			return Event{}, w.ended
		}
		select {
		case <-ctx.Done():
			return Event{}, ctx.Err()
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return Event{}, fsnotify.ErrClosed
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				return Event{}, &Error{Op: "watch", Path: w.shown, Kind: ErrResourceExhausted, Err: err,
					Hint: "changes came faster than they were read and some were lost; list the directory again and start a new watch"}
			}
			return Event{}, watchError(w.shown, err)
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return Event{}, fsnotify.ErrClosed
			}
			w.queue(ev)
		}
	}
}

// eventOps maps fsnotify's operations to ours.
var eventOps = []struct {
	fs fsnotify.Op
	op EventOp
}{
	{fsnotify.Create, OpCreate}, {fsnotify.Write, OpWrite}, {fsnotify.Remove, OpRemove},
	{fsnotify.Rename, OpRename}, {fsnotify.Chmod, OpChmod},
}

// queue turns an fsnotify event into Events, and keeps the set of watched directories in step:
// a directory created or moved in under a recursive watch is watched, one moved away or removed
// is forgotten.
func (w *Watcher) queue(ev fsnotify.Event) {
	rel, ok := w.root.relative(ev.Name)
	if !ok {
		return
	}
	if strings.HasPrefix(filepath.Base(ev.Name), tempPrefix) {
		// An upload's temporary file: watchers see the upload as the file appearing under its
		// name, when the temporary file is renamed over it, not as writes to a name of kubox's.
		return
	}
	if ev.Op == fsnotify.Rename && w.selfRenamed[ev.Name] {
		delete(w.selfRenamed, ev.Name) // the moved directory's own report of a move already reported
		return
	}
	if ev.Name != w.host && !w.watched[filepath.Dir(ev.Name)] {
		// It comes from the watch of a directory already forgotten (moved away or removed), and
		// was queued before that watch was removed: its path is the directory's old one.
		return
	}
	p := sandboxPath(rel)
	for _, m := range eventOps {
		if ev.Has(m.fs) {
			w.pending = append(w.pending, Event{Op: m.op, Path: p})
		}
	}
	if ev.Name == w.host && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)) {
		w.forget(w.host)
		w.ended = &Error{Op: "watch", Path: w.shown, Kind: ErrNotFound,
			Hint: "the watched directory was removed or moved; watch it again where it is now"}
		return
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		if w.watched[ev.Name] && !w.forget(ev.Name) && ev.Has(fsnotify.Rename) {
			// fsnotify had already seen the directory's own move and will report it again.
			w.selfRenamed[ev.Name] = true
		}
	}
	if w.recursive && ev.Has(fsnotify.Create) {
		if info, err := w.root.fs.Lstat(nameOf(rel)); err == nil && info.IsDir() {
			// A failure to watch it (it is already gone) leaves its events unreported, nothing worse.
			_ = w.add(ev.Name, true)
		}
	}
}

// watchError explains a failure to set up a watch.
func watchError(shown string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE) {
		return &Error{Op: "watch", Path: shown, Kind: ErrResourceExhausted, Err: err,
			Hint: "the kernel's inotify limits (fs.inotify.max_user_watches, max_user_instances) are reached; watch a smaller tree or raise them"}
	}
	return fromOS("watch", shown, unwrapPathError(err))
}
