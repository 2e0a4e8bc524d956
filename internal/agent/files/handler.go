package files

import (
	"context"
	"errors"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// Service implements kubox.agent.v1.FilesystemService over a Root.
type Service struct {
	root *Root
}

var _ agentv1connect.FilesystemServiceHandler = (*Service)(nil)

// NewService returns the FilesystemService implementation over root.
func NewService(root *Root) *Service { return &Service{root: root} }

// NewHandler returns the path to mount and the Connect handler (gRPC, gRPC-Web and Connect) of
// FilesystemService over root.
func NewHandler(root *Root, opts ...connect.HandlerOption) (string, http.Handler) {
	return agentv1connect.NewFilesystemServiceHandler(NewService(root), opts...)
}

// Stat implements FilesystemService.Stat.
func (s *Service) Stat(_ context.Context, req *connect.Request[agentv1.StatRequest]) (*connect.Response[agentv1.StatResponse], error) {
	e, err := s.root.Stat(req.Msg.GetPath())
	if err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&agentv1.StatResponse{Entry: toProto(e)}), nil
}

// List implements FilesystemService.List.
func (s *Service) List(_ context.Context, req *connect.Request[agentv1.ListRequest]) (*connect.Response[agentv1.ListResponse], error) {
	depth := int(min(req.Msg.GetDepth(), 1<<16))
	entries, err := s.root.List(req.Msg.GetPath(), depth)
	if err != nil {
		return nil, connectError(err)
	}
	out := make([]*agentv1.FileEntry, len(entries))
	for i, e := range entries {
		out[i] = toProto(e)
	}
	return connect.NewResponse(&agentv1.ListResponse{Entries: out}), nil
}

// MakeDir implements FilesystemService.MakeDir.
func (s *Service) MakeDir(_ context.Context, req *connect.Request[agentv1.MakeDirRequest]) (*connect.Response[agentv1.MakeDirResponse], error) {
	mode := req.Msg.GetMode()
	if mode > 0o7777 {
		return nil, connect.NewError(connect.CodeInvalidArgument, &Error{Op: "mkdir", Path: req.Msg.GetPath(), Kind: ErrInvalid,
			Hint: "mode holds Unix permission bits, at most 07777 (4095)"})
	}
	e, err := s.root.MakeDir(req.Msg.GetPath(), req.Msg.GetParents(), fileMode(mode))
	if err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&agentv1.MakeDirResponse{Entry: toProto(e)}), nil
}

// Move implements FilesystemService.Move.
func (s *Service) Move(_ context.Context, req *connect.Request[agentv1.MoveRequest]) (*connect.Response[agentv1.MoveResponse], error) {
	if req.Msg.GetSource() == "" || req.Msg.GetDestination() == "" {
		return nil, connect.NewError(connect.CodeInvalidArgument,
			errors.New("move: source and destination are both required; give the file to move and its new path"))
	}
	e, err := s.root.Move(req.Msg.GetSource(), req.Msg.GetDestination(), req.Msg.GetOverwrite())
	if err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&agentv1.MoveResponse{Entry: toProto(e)}), nil
}

// Remove implements FilesystemService.Remove.
func (s *Service) Remove(_ context.Context, req *connect.Request[agentv1.RemoveRequest]) (*connect.Response[agentv1.RemoveResponse], error) {
	if req.Msg.GetPath() == "" {
		return nil, connect.NewError(connect.CodeInvalidArgument,
			errors.New("remove: path is required; give the file or directory to remove (\"/\" for the root's contents)"))
	}
	if err := s.root.Remove(req.Msg.GetPath(), req.Msg.GetRecursive()); err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&agentv1.RemoveResponse{}), nil
}

// Watch implements FilesystemService.Watch.
func (s *Service) Watch(ctx context.Context, req *connect.Request[agentv1.WatchRequest], stream *connect.ServerStream[agentv1.WatchResponse]) error {
	w, err := s.root.Watch(req.Msg.GetDirectory(), req.Msg.GetRecursive())
	if err != nil {
		return connectError(err)
	}
	defer func() { _ = w.Close() }()
	if err := stream.Send(&agentv1.WatchResponse{Message: &agentv1.WatchResponse_Started{
		Started: &agentv1.WatchStarted{Directory: w.Dir()},
	}}); err != nil {
		return err
	}
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // the client cancelled: the normal end of a watch
			}
			return connectError(err)
		}
		if err := stream.Send(&agentv1.WatchResponse{Message: &agentv1.WatchResponse_Event{
			Event: &agentv1.FileEvent{Type: eventTypes[ev.Op], Path: ev.Path},
		}}); err != nil {
			return err
		}
	}
}

var eventTypes = map[EventOp]agentv1.FileEventType{
	OpCreate: agentv1.FileEventType_FILE_EVENT_TYPE_CREATE,
	OpWrite:  agentv1.FileEventType_FILE_EVENT_TYPE_WRITE,
	OpRemove: agentv1.FileEventType_FILE_EVENT_TYPE_REMOVE,
	OpRename: agentv1.FileEventType_FILE_EVENT_TYPE_RENAME,
	OpChmod:  agentv1.FileEventType_FILE_EVENT_TYPE_CHMOD,
}

var fileTypes = map[EntryType]agentv1.FileType{
	TypeFile:      agentv1.FileType_FILE_TYPE_FILE,
	TypeDirectory: agentv1.FileType_FILE_TYPE_DIRECTORY,
	TypeSymlink:   agentv1.FileType_FILE_TYPE_SYMLINK,
	TypeOther:     agentv1.FileType_FILE_TYPE_OTHER,
}

func toProto(e Entry) *agentv1.FileEntry {
	return &agentv1.FileEntry{
		Name:          e.Name,
		Path:          e.Path,
		Type:          fileTypes[e.Type],
		Size:          e.Size,
		Mode:          unixMode(e.Mode),
		ModifiedTime:  timestamppb.New(e.ModTime),
		SymlinkTarget: e.SymlinkTarget,
	}
}

// connectError gives err the Connect code of its kind.
func connectError(err error) error {
	return connect.NewError(CodeOf(err), err)
}
