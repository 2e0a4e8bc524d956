package e2b

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/internal/agent/files"
	envdfilesystem "github.com/kubox-dev/kubox/proto/e2b/envd/filesystem"
)

// MaxWatcherEvents is how many events a polled watcher keeps until GetWatcherEvents takes them;
// past that it stops and GetWatcherEvents fails with resource_exhausted, rather than keep
// growing for a client that no longer polls.
const MaxWatcherEvents = 10000

// MaxWatchers is how many polled watchers may exist at once; CreateWatcher fails with
// resource_exhausted beyond it (each holds inotify watches).
const MaxWatchers = 64

// WatchDir implements envdfilesystemconnect.FilesystemHandler: a start event once the watch is in
// place, then one event per change, until the client ends the stream or the directory goes.
func (s *FilesystemService) WatchDir(ctx context.Context, req *connect.Request[envdfilesystem.WatchDirRequest],
	stream *connect.ServerStream[envdfilesystem.WatchDirResponse]) error {
	w, err := s.root.Watch(req.Msg.GetPath(), req.Msg.GetRecursive())
	if err != nil {
		return fileError(err)
	}
	defer func() { _ = w.Close() }()
	out := newSender(ctx, req.Header(), stream.Send, func() *envdfilesystem.WatchDirResponse {
		return &envdfilesystem.WatchDirResponse{Event: &envdfilesystem.WatchDirResponse_Keepalive{
			Keepalive: &envdfilesystem.WatchDirResponse_KeepAlive{}}}
	})
	defer out.stop()
	if err := out.send(&envdfilesystem.WatchDirResponse{Event: &envdfilesystem.WatchDirResponse_Start{
		Start: &envdfilesystem.WatchDirResponse_StartEvent{}}}); err != nil {
		return err
	}
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // the client ended the watch
			}
			return fileError(err)
		}
		if err := out.send(&envdfilesystem.WatchDirResponse{Event: &envdfilesystem.WatchDirResponse_Filesystem{
			Filesystem: s.event(w, ev, req.Msg.GetIncludeEntry())}}); err != nil {
			return err
		}
	}
}

// event describes a change on envd's wire: the path relative to the watched directory and, when
// asked and the entry still exists, its EntryInfo.
func (s *FilesystemService) event(w *files.Watcher, ev files.Event, withEntry bool) *envdfilesystem.FilesystemEvent {
	fe := &envdfilesystem.FilesystemEvent{Name: relativeName(w.Dir(), ev.Path), Type: eventType(ev.Op)}
	if withEntry && ev.Op != files.OpRemove && ev.Op != files.OpRename {
		if e, err := s.root.Stat(ev.Path); err == nil {
			fe.Entry = s.entryInfo(e)
		}
	}
	return fe
}

func eventType(op files.EventOp) envdfilesystem.EventType {
	switch op {
	case files.OpCreate:
		return envdfilesystem.EventType_EVENT_TYPE_CREATE
	case files.OpWrite:
		return envdfilesystem.EventType_EVENT_TYPE_WRITE
	case files.OpRemove:
		return envdfilesystem.EventType_EVENT_TYPE_REMOVE
	case files.OpRename:
		return envdfilesystem.EventType_EVENT_TYPE_RENAME
	case files.OpChmod:
		return envdfilesystem.EventType_EVENT_TYPE_CHMOD
	}
	return envdfilesystem.EventType_EVENT_TYPE_UNSPECIFIED
}

// CreateWatcher implements envdfilesystemconnect.FilesystemHandler. The watch is in place when it
// returns: every later change is collected for GetWatcherEvents.
func (s *FilesystemService) CreateWatcher(_ context.Context, req *connect.Request[envdfilesystem.CreateWatcherRequest]) (*connect.Response[envdfilesystem.CreateWatcherResponse], error) {
	w, err := s.root.Watch(req.Msg.GetPath(), req.Msg.GetRecursive())
	if err != nil {
		return nil, fileError(err)
	}
	pw := &polled{w: w, done: make(chan struct{})}
	id, err := s.watchers.add(pw)
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	pw.cancel = cancel
	go pw.collect(ctx, func(ev files.Event) *envdfilesystem.FilesystemEvent {
		return s.event(w, ev, req.Msg.GetIncludeEntry())
	})
	return connect.NewResponse(&envdfilesystem.CreateWatcherResponse{WatcherId: id}), nil
}

// GetWatcherEvents implements envdfilesystemconnect.FilesystemHandler. Once a watch has failed
// (its directory was removed, or it overflowed), the events before the failure are returned and
// the next call reports it.
func (s *FilesystemService) GetWatcherEvents(_ context.Context, req *connect.Request[envdfilesystem.GetWatcherEventsRequest]) (*connect.Response[envdfilesystem.GetWatcherEventsResponse], error) {
	pw, err := s.watchers.get(req.Msg.GetWatcherId())
	if err != nil {
		return nil, err
	}
	events, err := pw.take()
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&envdfilesystem.GetWatcherEventsResponse{Events: events}), nil
}

// RemoveWatcher implements envdfilesystemconnect.FilesystemHandler.
func (s *FilesystemService) RemoveWatcher(_ context.Context, req *connect.Request[envdfilesystem.RemoveWatcherRequest]) (*connect.Response[envdfilesystem.RemoveWatcherResponse], error) {
	pw, err := s.watchers.remove(req.Msg.GetWatcherId())
	if err != nil {
		return nil, err
	}
	pw.stop()
	return connect.NewResponse(&envdfilesystem.RemoveWatcherResponse{}), nil
}

// polled is a watch whose events wait for GetWatcherEvents.
type polled struct {
	w      *files.Watcher
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	events []*envdfilesystem.FilesystemEvent
	err    error
}

// collect queues the watch's events until ctx ends, the watch fails or the queue is full.
func (p *polled) collect(ctx context.Context, describe func(files.Event) *envdfilesystem.FilesystemEvent) {
	defer close(p.done)
	defer func() { _ = p.w.Close() }()
	for {
		ev, err := p.w.Next(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.fail(fileError(err))
			}
			return
		}
		fe := describe(ev)
		p.mu.Lock()
		full := len(p.events) >= MaxWatcherEvents
		if !full {
			p.events = append(p.events, fe)
		}
		p.mu.Unlock()
		if full {
			p.fail(connect.NewError(connect.CodeResourceExhausted, fmt.Errorf(
				"the watcher stopped after %d events nobody took: call GetWatcherEvents more often, list the directory again "+
					"and create a new watcher", MaxWatcherEvents)))
			return
		}
	}
}

func (p *polled) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
}

// take returns the queued events, or the watch's failure once they were all taken.
func (p *polled) take() ([]*envdfilesystem.FilesystemEvent, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	events := p.events
	p.events = nil
	if len(events) == 0 && p.err != nil {
		return nil, p.err
	}
	return events, nil
}

func (p *polled) stop() {
	p.cancel()
	<-p.done
}

// watchers are the polled watchers by id.
type watchers struct {
	mu   sync.Mutex
	byID map[string]*polled
}

func newWatchers() *watchers { return &watchers{byID: map[string]*polled{}} }

func (ws *watchers) add(p *polled) (string, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if len(ws.byID) >= MaxWatchers {
		return "", connect.NewError(connect.CodeResourceExhausted, fmt.Errorf(
			"%d watchers exist, the most the agent keeps: remove those no longer polled with RemoveWatcher", MaxWatchers))
	}
	id := rand.Text()
	ws.byID[id] = p
	return id, nil
}

func (ws *watchers) get(id string) (*polled, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if p, ok := ws.byID[id]; ok {
		return p, nil
	}
	return nil, errNoWatcher(id)
}

func (ws *watchers) remove(id string) (*polled, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	p, ok := ws.byID[id]
	if !ok {
		return nil, errNoWatcher(id)
	}
	delete(ws.byID, id)
	return p, nil
}

func (ws *watchers) closeAll() {
	ws.mu.Lock()
	all := ws.byID
	ws.byID = map[string]*polled{}
	ws.mu.Unlock()
	for _, p := range all {
		p.stop()
	}
}

func errNoWatcher(id string) error {
	return connect.NewError(connect.CodeNotFound, errors.New(
		"watcher "+id+" not found: it was removed, or the agent restarted; create a new one"))
}
