package files

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestWatchOverflow checks that when the kernel drops events because nobody read them, the watch
// ends with ErrResourceExhausted instead of silently missing changes.
func TestWatchOverflow(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Fatal(err)
	}
	limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	tr := newTree(t).mkdir("w")
	r := tr.root()
	w, err := r.Watch("w", false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	p := filepath.Join(tr.dir, "w", "f")
	// Each round queues a create and a remove, twice as many as the kernel keeps.
	for range limit {
		must(t, os.WriteFile(p, nil, 0o644))
		must(t, os.Remove(p))
	}
	for i := 0; ; i++ {
		_, err := w.Next(t.Context())
		if err == nil {
			if i > 4*limit {
				t.Fatalf("read %d events without the overflow being reported", i)
			}
			continue
		}
		if !errors.Is(err, ErrResourceExhausted) || CodeOf(err).String() != "resource_exhausted" {
			t.Fatalf("the watch ended with %v, want ErrResourceExhausted", err)
		}
		return
	}
}

// nextEvents reads events from w until one equals last, and returns them all.
func nextEvents(t *testing.T, w *Watcher, last Event) []Event {
	t.Helper()
	var got []Event
	for {
		e, err := w.Next(t.Context())
		if err != nil {
			t.Fatalf("Next after %v: %v", got, err)
		}
		got = append(got, e)
		if e == last {
			return got
		}
	}
}

// TestWatchMovedDirectory checks that after a watched subdirectory moves, changes in it are
// reported under its new path, and the move is reported once.
func TestWatchMovedDirectory(t *testing.T) {
	tr := newTree(t).mkdir("w/a/b")
	r := tr.root()
	w, err := r.Watch("w", true)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	host := filepath.Join(tr.dir, "w")
	must(t, os.Rename(filepath.Join(host, "a"), filepath.Join(host, "z")))
	must(t, os.WriteFile(filepath.Join(host, "z", "b", "y"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(host, "marker1"), nil, 0o644))
	got := nextEvents(t, w, Event{OpCreate, "/w/marker1"})
	// Move it again, and out of the tree: the watches move with it, then go.
	must(t, os.Rename(filepath.Join(host, "z"), filepath.Join(tr.dir, "gone")))
	must(t, os.WriteFile(filepath.Join(tr.dir, "gone", "b", "unseen"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(host, "marker2"), nil, 0o644))
	got = append(got, nextEvents(t, w, Event{OpCreate, "/w/marker2"})...)

	renames := map[string]int{}
	sawY := false
	for _, e := range got {
		switch {
		case e.Op == OpRename:
			renames[e.Path]++
		case strings.HasPrefix(e.Path, "/w/a/"):
			t.Errorf("%v is reported under the directory's old path", e)
		case e.Path == "/gone/b/unseen" || strings.HasPrefix(e.Path, "/w/z/b/unseen"):
			t.Errorf("%v is outside the watched directory", e)
		case e == Event{OpCreate, "/w/z/b/y"}:
			sawY = true
		}
	}
	if !sawY {
		t.Errorf("the file created in the moved directory was not reported: %v", got)
	}
	if renames["/w/a"] != 1 || renames["/w/z"] != 1 || len(renames) != 2 {
		t.Errorf("renames reported %v; want /w/a and /w/z once each (events %v)", renames, got)
	}
}

// TestWatchDirectoryRemoved checks that a watch ends with ErrNotFound once its directory is gone.
func TestWatchDirectoryRemoved(t *testing.T) {
	for _, recursive := range []bool{false, true} {
		tr := newTree(t).file("w/sub/f", "")
		w, err := tr.root().Watch("w", recursive)
		if err != nil {
			t.Fatal(err)
		}
		must(t, os.RemoveAll(filepath.Join(tr.dir, "w")))
		var got []Event
		for {
			e, err := w.Next(t.Context())
			if err != nil {
				if !errors.Is(err, ErrNotFound) {
					t.Errorf("recursive=%v: the watch ended with %v, want ErrNotFound", recursive, err)
				}
				break
			}
			got = append(got, e)
		}
		if len(got) == 0 || got[len(got)-1] != (Event{OpRemove, "/w"}) {
			t.Errorf("recursive=%v: events %v; want the last to be the removal of /w", recursive, got)
		}
		_ = w.Close()
	}
}

// TestWatchHidesUploadTemporaries checks that an upload (WriteFile: a temporary file renamed
// over the name) shows as the name appearing, without events for the temporary file.
func TestWatchHidesUploadTemporaries(t *testing.T) {
	tr := newTree(t).mkdir("w")
	r := tr.root()
	w, err := r.Watch("w", false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	if _, err := r.WriteFile("/w/up.txt", strings.NewReader("uploaded"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(tr.dir, "w", "marker"), nil, 0o644))
	got := nextEvents(t, w, Event{Op: OpCreate, Path: "/w/marker"})
	if len(got) < 2 || got[0] != (Event{Op: OpCreate, Path: "/w/up.txt"}) {
		t.Errorf("events of an upload: %v; want it to start with the create of /w/up.txt", got)
	}
	for _, e := range got {
		if strings.Contains(e.Path, tempPrefix) {
			t.Errorf("the upload's temporary file showed: %v", e)
		}
	}
}
