package files

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"

	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// client serves FilesystemService over the tree's root on 127.0.0.1 and returns a Connect client.
func client(t *testing.T, tr *tree) agentv1connect.FilesystemServiceClient {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(NewHandler(tr.root()))
	srv := serve(t, mux)
	return agentv1connect.NewFilesystemServiceClient(srv.Client(), srv.URL)
}

func TestServiceUnary(t *testing.T) {
	tr := newTree(t).file("d/f.txt", "hello").link("d/l", "f.txt").link("out", "{outside}")
	c := client(t, tr)
	ctx := t.Context()

	st, err := c.Stat(ctx, connect.NewRequest(&agentv1.StatRequest{Path: "/d/l"}))
	if err != nil {
		t.Fatal(err)
	}
	if e := st.Msg.GetEntry(); e.GetType() != agentv1.FileType_FILE_TYPE_SYMLINK || e.GetSymlinkTarget() != "f.txt" || e.GetPath() != "/d/l" {
		t.Errorf("Stat(/d/l) = %v", e)
	}
	st, err = c.Stat(ctx, connect.NewRequest(&agentv1.StatRequest{Path: "d/f.txt"}))
	if err != nil {
		t.Fatal(err)
	}
	if e := st.Msg.GetEntry(); e.GetType() != agentv1.FileType_FILE_TYPE_FILE || e.GetSize() != 5 || e.GetMode() != 0o644 ||
		e.GetName() != "f.txt" || e.GetModifiedTime().AsTime().IsZero() {
		t.Errorf("Stat(d/f.txt) = %v", e)
	}

	md, err := c.MakeDir(ctx, connect.NewRequest(&agentv1.MakeDirRequest{Path: "/d/x/y", Parents: true, Mode: 0o2750}))
	if err != nil {
		t.Fatal(err)
	}
	if e := md.Msg.GetEntry(); e.GetType() != agentv1.FileType_FILE_TYPE_DIRECTORY || e.GetMode() != 0o2750 {
		t.Errorf("MakeDir = %v; want a directory with mode 02750", e)
	}

	mv, err := c.Move(ctx, connect.NewRequest(&agentv1.MoveRequest{Source: "/d/f.txt", Destination: "/d/x/g.txt"}))
	if err != nil {
		t.Fatal(err)
	}
	if mv.Msg.GetEntry().GetPath() != "/d/x/g.txt" || tr.read("d/x/g.txt") != "hello" {
		t.Errorf("Move = %v", mv.Msg.GetEntry())
	}

	ls, err := c.List(ctx, connect.NewRequest(&agentv1.ListRequest{Path: "/d", Depth: 3}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ls.Msg.GetEntries() {
		got = append(got, e.GetPath())
	}
	if diff := cmp.Diff([]string{"/d/l", "/d/x", "/d/x/g.txt", "/d/x/y"}, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}

	if _, err := c.Remove(ctx, connect.NewRequest(&agentv1.RemoveRequest{Path: "/d", Recursive: true})); err != nil {
		t.Fatal(err)
	}
	if tr.exists("d") {
		t.Error("/d still exists")
	}
}

func TestServiceErrors(t *testing.T) {
	tr := newTree(t).file("f", "x").file("d/in", "x").link("out", "{outside}")
	c := client(t, tr)
	ctx := t.Context()
	cases := map[string]struct {
		call func() error
		want connect.Code
	}{
		"stat missing": {func() error {
			_, err := c.Stat(ctx, connect.NewRequest(&agentv1.StatRequest{Path: "/nope"}))
			return err
		}, connect.CodeNotFound},
		"stat outside": {func() error {
			_, err := c.Stat(ctx, connect.NewRequest(&agentv1.StatRequest{Path: "/../outside/secret"}))
			return err
		}, connect.CodePermissionDenied},
		"list through a link outside": {func() error {
			_, err := c.List(ctx, connect.NewRequest(&agentv1.ListRequest{Path: "/out"}))
			return err
		}, connect.CodePermissionDenied},
		"list a file": {func() error {
			_, err := c.List(ctx, connect.NewRequest(&agentv1.ListRequest{Path: "/f"}))
			return err
		}, connect.CodeFailedPrecondition},
		"mkdir existing": {func() error {
			_, err := c.MakeDir(ctx, connect.NewRequest(&agentv1.MakeDirRequest{Path: "/d"}))
			return err
		}, connect.CodeAlreadyExists},
		"mkdir bad mode": {func() error {
			_, err := c.MakeDir(ctx, connect.NewRequest(&agentv1.MakeDirRequest{Path: "/e", Mode: 0o10000}))
			return err
		}, connect.CodeInvalidArgument},
		"move onto existing": {func() error {
			_, err := c.Move(ctx, connect.NewRequest(&agentv1.MoveRequest{Source: "/f", Destination: "/d/in"}))
			return err
		}, connect.CodeAlreadyExists},
		"move without destination": {func() error {
			_, err := c.Move(ctx, connect.NewRequest(&agentv1.MoveRequest{Source: "/f"}))
			return err
		}, connect.CodeInvalidArgument},
		"remove non-empty": {func() error {
			_, err := c.Remove(ctx, connect.NewRequest(&agentv1.RemoveRequest{Path: "/d"}))
			return err
		}, connect.CodeFailedPrecondition},
		"remove without a path": {func() error {
			_, err := c.Remove(ctx, connect.NewRequest(&agentv1.RemoveRequest{}))
			return err
		}, connect.CodeInvalidArgument},
		"watch a file": {func() error {
			s, err := c.Watch(ctx, connect.NewRequest(&agentv1.WatchRequest{Directory: "/f"}))
			if err != nil {
				return err
			}
			defer func() { _ = s.Close() }()
			for s.Receive() {
			}
			return s.Err()
		}, connect.CodeFailedPrecondition},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.call()
			if got := connect.CodeOf(err); got != tc.want {
				t.Fatalf("error %v has code %v, want %v", err, got, tc.want)
			}
			var ce *connect.Error
			if errors.As(err, &ce) && ce.Message() == "" {
				t.Error("the error has no message")
			}
		})
	}
	tr.secretIntact()
}

// event is a FileEvent as tests compare it.
type event struct {
	Type agentv1.FileEventType
	Path string
}

// watch starts a Watch and returns the stream once the agent says the watch is in place.
func watch(t *testing.T, c agentv1connect.FilesystemServiceClient, dir string, recursive bool) (*connect.ServerStreamForClient[agentv1.WatchResponse], context.CancelFunc) {
	t.Helper()
	// The deadline only keeps a broken test from hanging; no assertion depends on time.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	s, err := c.Watch(ctx, connect.NewRequest(&agentv1.WatchRequest{Directory: dir, Recursive: recursive}))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if !s.Receive() || s.Msg().GetStarted() == nil {
		cancel()
		t.Fatalf("the first message is %v (%v), want started", s.Msg(), s.Err())
	}
	return s, cancel
}

// expectEvents reads events until every one of want has been seen, in order; others may come between.
func expectEvents(t *testing.T, s *connect.ServerStreamForClient[agentv1.WatchResponse], want ...event) {
	t.Helper()
	var seen []event
	for len(want) > 0 {
		if !s.Receive() {
			t.Fatalf("the stream ended (%v) before %v; saw %v", s.Err(), want, seen)
		}
		ev := s.Msg().GetEvent()
		got := event{ev.GetType(), ev.GetPath()}
		seen = append(seen, got)
		if got == want[0] {
			want = want[1:]
		}
	}
}

func TestWatch(t *testing.T) {
	tr := newTree(t).mkdir("w/sub")
	c := client(t, tr)
	s, cancel := watch(t, c, "/w", false)
	defer cancel()
	if got := s.Msg().GetStarted().GetDirectory(); got != "/w" {
		t.Errorf("started directory %q, want /w", got)
	}
	host := filepath.Join(tr.dir, "w")
	must(t, os.WriteFile(filepath.Join(host, "a.txt"), []byte("1"), 0o644))
	must(t, os.Chmod(filepath.Join(host, "a.txt"), 0o600))
	must(t, os.Rename(filepath.Join(host, "a.txt"), filepath.Join(host, "b.txt")))
	must(t, os.Remove(filepath.Join(host, "b.txt")))
	// Not recursive: a change in a subdirectory is not reported, so the marker comes next.
	must(t, os.WriteFile(filepath.Join(host, "sub", "hidden"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(host, "marker"), nil, 0o644))
	const (
		create = agentv1.FileEventType_FILE_EVENT_TYPE_CREATE
		write  = agentv1.FileEventType_FILE_EVENT_TYPE_WRITE
		chmod  = agentv1.FileEventType_FILE_EVENT_TYPE_CHMOD
		rename = agentv1.FileEventType_FILE_EVENT_TYPE_RENAME
		remove = agentv1.FileEventType_FILE_EVENT_TYPE_REMOVE
	)
	var seen []event
	want := []event{
		{create, "/w/a.txt"}, {write, "/w/a.txt"}, {chmod, "/w/a.txt"}, {rename, "/w/a.txt"},
		{create, "/w/b.txt"}, {remove, "/w/b.txt"}, {create, "/w/marker"},
	}
	for len(seen) < len(want) && s.Receive() {
		ev := s.Msg().GetEvent()
		seen = append(seen, event{ev.GetType(), ev.GetPath()})
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	cancel()
	for s.Receive() {
	}
	_ = s.Close()
}

func TestWatchRecursive(t *testing.T) {
	tr := newTree(t).mkdir("w/old")
	c := client(t, tr)
	s, cancel := watch(t, c, "w", true)
	defer cancel()
	host := filepath.Join(tr.dir, "w")
	must(t, os.WriteFile(filepath.Join(host, "old", "f"), nil, 0o644))
	must(t, os.MkdirAll(filepath.Join(host, "new", "deeper"), 0o755))
	must(t, os.WriteFile(filepath.Join(host, "new", "deeper", "g"), []byte("x"), 0o644))
	const create = agentv1.FileEventType_FILE_EVENT_TYPE_CREATE
	expectEvents(t, s, event{create, "/w/old/f"}, event{create, "/w/new"})
	// Created before or after the agent watched /w/new: reported either way.
	expectEvents(t, s, event{create, "/w/new/deeper/g"})
	// Now the new tree is watched for certain.
	must(t, os.WriteFile(filepath.Join(host, "new", "deeper", "h"), nil, 0o644))
	expectEvents(t, s, event{create, "/w/new/deeper/h"})
	cancel()
	for s.Receive() {
	}
	_ = s.Close()
}

func TestWatchOutside(t *testing.T) {
	tr := newTree(t).link("out", "{outside}")
	c := client(t, tr)
	s, err := c.Watch(t.Context(), connect.NewRequest(&agentv1.WatchRequest{Directory: "/out"}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	for s.Receive() {
		t.Errorf("a watch outside the root sent %v", s.Msg())
	}
	if connect.CodeOf(s.Err()) != connect.CodePermissionDenied {
		t.Errorf("watch outside = %v, want PermissionDenied", s.Err())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
