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
