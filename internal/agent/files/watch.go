package files

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
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
	dir       string
	shown     string
	// pending holds events waiting to be returned, oldest first.
	pending []Event
}

// Watch starts watching the directory p (a final symbolic link is followed) for files created,
// written, removed, renamed and changing metadata in it, and with recursive in all its
// subdirectories, including those created later. Every change made after Watch returns is
// reported. Symbolic links to directories are not entered.
//
// A directory created under a recursive watch is watched as soon as its creation is seen; what is
// created in it before that is reported as OpCreate events found by reading it, so a file may be
// reported created twice. Changes are reported by path: a file renamed inside the tree is an
// OpRename of its old path and an OpCreate of its new one.
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
	w := &Watcher{root: r, fsw: fsw, recursive: recursive, dir: sandboxPath(t.rel), shown: t.shown}
	if err := w.add(r.hostPath(t.rel), false); err != nil {
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
		return watchError(w.shown, w.fsw.Add(dir))
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
		return nil
	})
}

// Next returns the next change, waiting for one until ctx ends. It fails with ErrResourceExhausted when
// the kernel dropped events (the caller should list the directory again and start a new watch).
func (w *Watcher) Next(ctx context.Context) (Event, error) {
	for {
		if len(w.pending) > 0 {
			e := w.pending[0]
			w.pending = w.pending[1:]
			return e, nil
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

// queue turns an fsnotify event into Events, and watches a directory created under a recursive watch.
func (w *Watcher) queue(ev fsnotify.Event) {
	rel, ok := w.root.relative(ev.Name)
	if !ok {
		return
	}
	p := sandboxPath(rel)
	for _, m := range []struct {
		fs fsnotify.Op
		op EventOp
	}{
		{fsnotify.Create, OpCreate}, {fsnotify.Write, OpWrite}, {fsnotify.Remove, OpRemove},
		{fsnotify.Rename, OpRename}, {fsnotify.Chmod, OpChmod},
	} {
		if ev.Has(m.fs) {
			w.pending = append(w.pending, Event{Op: m.op, Path: p})
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
