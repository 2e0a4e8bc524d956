package e2b

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/kubox-dev/kubox/internal/agent/files"
	envdfilesystem "github.com/kubox-dev/kubox/proto/e2b/envd/filesystem"
	"github.com/kubox-dev/kubox/proto/e2b/envd/filesystem/envdfilesystemconnect"
)

// WriteProcedures are the Filesystem procedures that change files; the agent guards them with its
// write gate, like its own FilesystemService's (file contents go through POST /files, which the
// HTTP handler guards itself).
var WriteProcedures = []string{
	envdfilesystemconnect.FilesystemMakeDirProcedure,
	envdfilesystemconnect.FilesystemMoveProcedure,
	envdfilesystemconnect.FilesystemRemoveProcedure,
}

// FilesystemService serves envd's filesystem.Filesystem over the agent's files.Root.
type FilesystemService struct {
	root     *files.Root
	owners   *owners
	watchers *watchers
}

var _ envdfilesystemconnect.FilesystemHandler = (*FilesystemService)(nil)

// NewFilesystemService returns the service over root. Close stops its polled watchers.
func NewFilesystemService(root *files.Root) *FilesystemService {
	return &FilesystemService{root: root, owners: newOwners(), watchers: newWatchers()}
}

// Close stops every watcher CreateWatcher started.
func (s *FilesystemService) Close() { s.watchers.closeAll() }

// Stat implements envdfilesystemconnect.FilesystemHandler.
func (s *FilesystemService) Stat(_ context.Context, req *connect.Request[envdfilesystem.StatRequest]) (*connect.Response[envdfilesystem.StatResponse], error) {
	e, err := s.root.Stat(req.Msg.GetPath())
	if err != nil {
		return nil, fileError(err)
	}
	return connect.NewResponse(&envdfilesystem.StatResponse{Entry: s.entryInfo(e)}), nil
}

// MakeDir implements envdfilesystemconnect.FilesystemHandler: parents are created; a directory
// already there is already_exists (E2B's SDKs answer false to makeDir then), anything else there
// invalid_argument, as envd answers.
func (s *FilesystemService) MakeDir(_ context.Context, req *connect.Request[envdfilesystem.MakeDirRequest]) (*connect.Response[envdfilesystem.MakeDirResponse], error) {
	p := req.Msg.GetPath()
	if e, err := s.root.Stat(p); err == nil {
		if e.Type == files.TypeDirectory {
			return nil, connect.NewError(connect.CodeAlreadyExists, fmt.Errorf("directory %s already exists", e.Path))
		}
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(
			"%s already exists and is not a directory: remove it first or choose another path", e.Path))
	}
	e, err := s.root.MakeDir(p, true, 0)
	if err != nil {
		return nil, fileError(err)
	}
	return connect.NewResponse(&envdfilesystem.MakeDirResponse{Entry: s.entryInfo(e)}), nil
}

// Move implements envdfilesystemconnect.FilesystemHandler: the destination's missing parents are
// created, and a file or empty directory at the destination is replaced, as envd does.
func (s *FilesystemService) Move(_ context.Context, req *connect.Request[envdfilesystem.MoveRequest]) (*connect.Response[envdfilesystem.MoveResponse], error) {
	if _, err := s.root.Stat(req.Msg.GetSource()); err != nil {
		return nil, fileError(err) // not found: create no parents for nothing
	}
	if parent := path.Dir(req.Msg.GetDestination()); parent != "." && parent != "/" {
		if _, err := s.root.MakeDir(parent, true, 0); err != nil {
			return nil, fileError(err)
		}
	}
	e, err := s.root.Move(req.Msg.GetSource(), req.Msg.GetDestination(), true)
	if err != nil {
		return nil, fileError(err)
	}
	return connect.NewResponse(&envdfilesystem.MoveResponse{Entry: s.entryInfo(e)}), nil
}

// ListDir implements envdfilesystemconnect.FilesystemHandler.
func (s *FilesystemService) ListDir(_ context.Context, req *connect.Request[envdfilesystem.ListDirRequest]) (*connect.Response[envdfilesystem.ListDirResponse], error) {
	entries, err := s.root.List(req.Msg.GetPath(), int(min(req.Msg.GetDepth(), 1<<16)))
	if err != nil {
		return nil, fileError(err)
	}
	// envd's order: directories first, then by name regardless of case.
	slices.SortStableFunc(entries, func(a, b files.Entry) int {
		if (a.Type == files.TypeDirectory) != (b.Type == files.TypeDirectory) {
			if a.Type == files.TypeDirectory {
				return -1
			}
			return 1
		}
		return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
	})
	res := &envdfilesystem.ListDirResponse{Entries: make([]*envdfilesystem.EntryInfo, 0, len(entries))}
	for _, e := range entries {
		res.Entries = append(res.Entries, s.entryInfo(e))
	}
	return connect.NewResponse(res), nil
}

// Remove implements envdfilesystemconnect.FilesystemHandler: a directory goes with everything in
// it, and a path that does not exist is already removed (envd answers success, and E2B's SDKs
// count on it).
func (s *FilesystemService) Remove(_ context.Context, req *connect.Request[envdfilesystem.RemoveRequest]) (*connect.Response[envdfilesystem.RemoveResponse], error) {
	if err := s.root.Remove(req.Msg.GetPath(), true); err != nil && !errors.Is(err, files.ErrNotFound) {
		return nil, fileError(err)
	}
	return connect.NewResponse(&envdfilesystem.RemoveResponse{}), nil
}

// fileError is the Connect error for a failed file operation. A path of the wrong kind (a file
// where a directory is needed, or the other way) is invalid_argument, as E2B's SDKs expect.
func fileError(err error) error {
	code := files.CodeOf(err)
	if errors.Is(err, files.ErrNotDirectory) || errors.Is(err, files.ErrIsDirectory) {
		code = connect.CodeInvalidArgument
	}
	return connect.NewError(code, err)
}

// entryInfo describes e on envd's wire.
func (s *FilesystemService) entryInfo(e files.Entry) *envdfilesystem.EntryInfo {
	info := &envdfilesystem.EntryInfo{
		Name: e.Name, Type: fileType(e.Type), Path: e.Path, Size: e.Size,
		Mode: unixMode(e.Mode), Permissions: permissions(e), ModifiedTime: timestamppb.New(e.ModTime),
	}
	if e.Type == files.TypeSymlink {
		info.SymlinkTarget = &e.SymlinkTarget
	}
	info.Owner, info.Group = s.owners.of(filepath.Join(s.root.Dir(), e.Path))
	return info
}

func fileType(t files.EntryType) envdfilesystem.FileType {
	switch t {
	case files.TypeFile:
		return envdfilesystem.FileType_FILE_TYPE_FILE
	case files.TypeDirectory:
		return envdfilesystem.FileType_FILE_TYPE_DIRECTORY
	case files.TypeSymlink:
		return envdfilesystem.FileType_FILE_TYPE_SYMLINK
	}
	return envdfilesystem.FileType_FILE_TYPE_UNSPECIFIED
}

// unixMode is m's permission, setuid, setgid and sticky bits as chmod(2) numbers them.
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	for _, b := range []struct {
		mode fs.FileMode
		bit  uint32
	}{{fs.ModeSetuid, syscall.S_ISUID}, {fs.ModeSetgid, syscall.S_ISGID}, {fs.ModeSticky, syscall.S_ISVTX}} {
		if m&b.mode != 0 {
			u |= b.bit
		}
	}
	return u
}

// permissions is the entry's mode as `ls -l` shows it.
func permissions(e files.Entry) string {
	m := e.Mode
	switch e.Type {
	case files.TypeDirectory:
		m |= fs.ModeDir
	case files.TypeSymlink:
		m |= fs.ModeSymlink
	}
	return m.String()
}

// owners names the owners of files, caching the user database's answers.
type owners struct {
	mu            sync.Mutex
	users, groups map[uint32]string
}

func newOwners() *owners {
	return &owners{users: map[uint32]string{}, groups: map[uint32]string{}}
}

// of returns the owner and group of the file at host (not following a final link), by name when
// the user database has one, else by number; empty when the file cannot be read.
func (o *owners) of(host string) (string, string) {
	fi, err := os.Lstat(host)
	if err != nil {
		return "", ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.name(o.users, st.Uid, lookupUser), o.name(o.groups, st.Gid, lookupGroup)
}

func (o *owners) name(cache map[uint32]string, id uint32, lookup func(string) (string, error)) string {
	if n, ok := cache[id]; ok {
		return n
	}
	n, err := lookup(strconv.FormatUint(uint64(id), 10))
	if err != nil {
		n = strconv.FormatUint(uint64(id), 10)
	}
	cache[id] = n
	return n
}

func lookupUser(id string) (string, error) {
	u, err := user.LookupId(id)
	if err != nil {
		return "", err
	}
	return u.Username, nil
}

func lookupGroup(id string) (string, error) {
	g, err := user.LookupGroupId(id)
	if err != nil {
		return "", err
	}
	return g.Name, nil
}

// relativeName is p relative to the watched directory dir, as envd names a watch's entries.
func relativeName(dir, p string) string {
	if dir == "/" {
		return strings.TrimPrefix(p, "/")
	}
	if rel, ok := strings.CutPrefix(p, dir+"/"); ok {
		return rel
	}
	return path.Base(p)
}
