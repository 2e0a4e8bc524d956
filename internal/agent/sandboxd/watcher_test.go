package sandboxd

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"

	watcherv1 "github.com/kubox-dev/kubox/proto/watcher/v1"
)

// events receives a watch's events on a channel, closed when the stream ends.
func (f *fixture) watch(t *testing.T, ctx context.Context, path string, recursive bool) (<-chan *watcherv1.FileEvent, func() error) {
	t.Helper()
	stream, err := f.watcher.WatchDir(ctx, connect.NewRequest(&watcherv1.WatchDirRequest{Path: path, Recursive: recursive}))
	if err != nil {
		t.Fatalf("WatchDir: %v", err)
	}
	ch := make(chan *watcherv1.FileEvent)
	done := make(chan struct{})
	go func() {
		defer close(ch)
		for stream.Receive() {
			ch <- stream.Msg()
		}
		close(done)
	}()
	t.Cleanup(func() {
		_ = stream.Close()
		for range ch { // let the reader end
		}
	})
	return ch, func() error { <-done; return stream.Err() }
}

// touchUntil writes the file rel until an event for it of type want arrives: a watch has no
// "started" event, so the first writes may come before it is in place.
func (f *fixture) touchUntil(t *testing.T, ch <-chan *watcherv1.FileEvent, rel string, want watcherv1.FileEventType) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(guard)
	for i := 0; ; i++ {
		if err := os.WriteFile(filepath.Join(f.root, rel), []byte{byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		for wait := true; wait; {
			select {
			case ev, ok := <-ch:
				if !ok {
					t.Fatalf("the watch ended before an event for %s", rel)
				}
				if ev.GetPath() == rel && ev.GetType() == want {
					return
				}
			case <-tick.C:
				wait = false
			case <-deadline:
				t.Fatalf("no %v event for %s", want, rel)
			}
		}
	}
}

func TestWatchDirReportsSandboxRelativePaths(t *testing.T) {
	f := newFixture(t, ProcessOptions{})
	f.mkdir(t, "src/deep")
	ctx, cancel := context.WithCancel(guardCtx(t))
	ch, end := f.watch(t, ctx, "src", true)
	f.touchUntil(t, ch, "src/deep/a.txt", watcherv1.FileEventType_FILE_EVENT_TYPE_CREATE)
	if err := os.Remove(filepath.Join(f.root, "src/deep/a.txt")); err != nil {
		t.Fatal(err)
	}
	for ev := range ch {
		if ev.GetPath() == "src/deep/a.txt" && ev.GetType() == watcherv1.FileEventType_FILE_EVENT_TYPE_REMOVE {
			break
		}
	}
	cancel()
	if err := end(); err != nil && codeOf(err) != connect.CodeCanceled {
		t.Errorf("the watch ended with %v after the client cancelled", err)
	}
}

func TestWatchDirEndsWithAnErrorEventWhenTheDirectoryGoes(t *testing.T) {
	f := newFixture(t, ProcessOptions{})
	f.mkdir(t, "gone")
	ch, end := f.watch(t, guardCtx(t), "gone", false)
	f.touchUntil(t, ch, "gone/x", watcherv1.FileEventType_FILE_EVENT_TYPE_CREATE)
	if err := os.RemoveAll(filepath.Join(f.root, "gone")); err != nil {
		t.Fatal(err)
	}
	var last *watcherv1.FileEvent
	for ev := range ch {
		last = ev
	}
	if err := end(); err != nil {
		t.Fatalf("the watch ended with %v, want a normal end after the ERROR event", err)
	}
	if last.GetType() != watcherv1.FileEventType_FILE_EVENT_TYPE_ERROR || last.GetError() == "" {
		t.Errorf("last event %v, want FILE_EVENT_TYPE_ERROR with a message", last)
	}
}

func TestWatchDirRefusals(t *testing.T) {
	f := newFixture(t, ProcessOptions{})
	if err := os.WriteFile(filepath.Join(f.root, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		path string
		want connect.Code
	}{
		"a file":           {"file", connect.CodeInvalidArgument},
		"missing":          {"missing", connect.CodeNotFound},
		"outside the root": {"../..", connect.CodePermissionDenied},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			stream, err := f.watcher.WatchDir(guardCtx(t), connect.NewRequest(&watcherv1.WatchDirRequest{Path: tc.path}))
			if err == nil {
				for stream.Receive() {
				}
				err = stream.Err()
				_ = stream.Close()
			}
			if codeOf(err) != tc.want {
				t.Errorf("WatchDir(%q): %v, want code %v", tc.path, err, tc.want)
			}
		})
	}
}
