package sandboxd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/internal/agent/files"
	watcherv1 "github.com/kubox-dev/kubox/proto/watcher/v1"
	"github.com/kubox-dev/kubox/proto/watcher/v1/watcherv1connect"
)

// WatcherService serves watcher.v1.FileWatcherService over the agent's files.Root.Watch.
type WatcherService struct {
	root *files.Root
}

var _ watcherv1connect.FileWatcherServiceHandler = (*WatcherService)(nil)

// NewWatcherService returns the service over root (sandboxd's root).
func NewWatcherService(root *files.Root) *WatcherService { return &WatcherService{root: root} }

// WatchDir implements watcherv1connect.FileWatcherServiceHandler.
func (s *WatcherService) WatchDir(ctx context.Context, req *connect.Request[watcherv1.WatchDirRequest], stream *connect.ServerStream[watcherv1.FileEvent]) error {
	w, err := s.root.Watch(req.Msg.GetPath(), req.Msg.GetRecursive())
	if err != nil {
		return connect.NewError(watchCode(err), err)
	}
	defer func() { _ = w.Close() }()
	// Headers go out now, so a client sees the watch is in place before the first change.
	if err := stream.Conn().Send(nil); err != nil {
		return err
	}
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // the client cancelled: the normal end of a watch
			}
			return stream.Send(&watcherv1.FileEvent{Type: watcherv1.FileEventType_FILE_EVENT_TYPE_ERROR, Error: err.Error()})
		}
		if err := stream.Send(&watcherv1.FileEvent{Type: eventType(ev.Op), Path: strings.TrimPrefix(ev.Path, "/")}); err != nil {
			return err
		}
	}
}

// watchCode is the code sandboxd gives a watch that cannot start: PERMISSION_DENIED outside the
// root, NOT_FOUND for a missing directory, INVALID_ARGUMENT for a file.
func watchCode(err error) connect.Code {
	if errors.Is(err, files.ErrNotDirectory) {
		return connect.CodeInvalidArgument
	}
	return files.CodeOf(err)
}

func eventType(op files.EventOp) watcherv1.FileEventType {
	switch op {
	case files.OpCreate:
		return watcherv1.FileEventType_FILE_EVENT_TYPE_CREATE
	case files.OpWrite:
		return watcherv1.FileEventType_FILE_EVENT_TYPE_WRITE
	case files.OpRemove:
		return watcherv1.FileEventType_FILE_EVENT_TYPE_REMOVE
	case files.OpRename:
		return watcherv1.FileEventType_FILE_EVENT_TYPE_RENAME
	case files.OpChmod:
		return watcherv1.FileEventType_FILE_EVENT_TYPE_CHMOD
	}
	panic(fmt.Sprintf("sandboxd: no FileEventType for the watch operation %v", op))
}
