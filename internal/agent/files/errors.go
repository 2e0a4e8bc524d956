package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"syscall"

	"connectrpc.com/connect"
)

// The kinds of failure a caller can tell apart with errors.Is. Every error a Root method returns
// wraps exactly one of them (ErrInternal when nothing more precise applies), and StatusOf and
// CodeOf map them to an HTTP status and a Connect code.
var (
	// ErrOutsideRoot means the path, or a symbolic link on the way to it, leads outside the root.
	ErrOutsideRoot = errors.New("the path leads outside the sandbox root")
	// ErrNotFound means the path, or one of its parent directories, does not exist.
	ErrNotFound = errors.New("no such file or directory")
	// ErrIsDirectory means the operation needs a file and the path is a directory.
	ErrIsDirectory = errors.New("is a directory")
	// ErrNotDirectory means the operation needs a directory (or a parent is not one).
	ErrNotDirectory = errors.New("not a directory")
	// ErrNotEmpty means a directory with entries would have to be removed or replaced.
	ErrNotEmpty = errors.New("directory not empty")
	// ErrPermission means the operating system refused the agent access.
	ErrPermission = errors.New("permission denied")
	// ErrExists means the path exists and the operation must not replace it.
	ErrExists = errors.New("already exists")
	// ErrInvalid means the request itself is malformed (a bad mode, a NUL byte, a symbolic link loop, an
	// upload cut short).
	ErrInvalid = errors.New("invalid request")
	// ErrResourceExhausted means something ran out: space on the file system, the request body's
	// limit, or a watch's event queue.
	ErrResourceExhausted = errors.New("resource exhausted")
	// ErrUnavailable means the agent refuses the operation for now: it is shutting down (see
	// WriteGate).
	ErrUnavailable = errors.New("unavailable")
	// ErrInternal is anything else the operating system reported.
	ErrInternal = errors.New("internal error")
)

// Error is a failed file operation on a path as the client named it.
type Error struct {
	// Op is the operation, such as "stat" or "write".
	Op string
	// Path is the path in the sandbox (the client's spelling, cleaned).
	Path string
	// Kind is one of the Err* values above.
	Kind error
	// Err is the underlying operating-system error, if any.
	Err error
	// Hint says what the caller can do about it.
	Hint string
}

// Error reads "<op> <path>: <what went wrong>; <what to do>".
func (e *Error) Error() string {
	what := e.Kind.Error()
	if e.Err != nil && (e.Kind == ErrInternal || e.Kind == ErrInvalid || e.Kind == ErrResourceExhausted ||
		e.Kind == ErrUnavailable) {
		what = e.Err.Error()
	}
	msg := fmt.Sprintf("%s %s: %s", e.Op, e.Path, what)
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// Unwrap exposes both the kind and the underlying error to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// newError builds an Error of the given kind with the kind's usual hint.
func newError(op, path string, kind, err error) *Error {
	return &Error{Op: op, Path: path, Kind: kind, Err: err, Hint: hintFor(op, kind)}
}

// hintFor says what to do about a kind of failure.
func hintFor(op string, kind error) string {
	switch kind {
	case ErrOutsideRoot:
		return "use a path inside it (symbolic links may not lead out of it either)"
	case ErrNotFound:
		return "check the path, or list its parent directory to see what exists"
	case ErrIsDirectory:
		if op == "read" {
			return "list a directory instead of reading it"
		}
		return "give a file path, or remove the directory first"
	case ErrNotDirectory:
		return "a component of the path is a file, not a directory; check the path"
	case ErrNotEmpty:
		return "pass recursive=true to remove it with its contents"
	case ErrPermission:
		return "the agent's user may not access it; change the file's owner or mode"
	case ErrExists:
		return "choose another path, or ask to overwrite it"
	case ErrResourceExhausted:
		return "free space in the sandbox, or send less"
	}
	return ""
}

// fromOS turns an operating-system error from op on path into an *Error of the matching kind.
func fromOS(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var fe *Error
	if errors.As(err, &fe) {
		return err
	}
	kind := ErrInternal
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		kind = ErrNotFound
	case errors.Is(err, fs.ErrExist) && !errors.Is(err, syscall.ENOTEMPTY):
		kind = ErrExists
	case errors.Is(err, syscall.ENOTEMPTY):
		kind = ErrNotEmpty
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		kind = ErrPermission
	case errors.Is(err, syscall.EISDIR):
		kind = ErrIsDirectory
	case errors.Is(err, syscall.ENOTDIR):
		kind = ErrNotDirectory
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EFBIG),
		errors.As(err, &mbe):
		kind = ErrResourceExhausted
	case errors.Is(err, syscall.ELOOP):
		return &Error{Op: op, Path: path, Kind: ErrInvalid, Err: err,
			Hint: "a symbolic link on the path loops (or the chain is too long); fix or remove it"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Op: op, Path: path, Kind: ErrInvalid, Err: err,
			Hint: "the request body ended before its declared length; send the whole file again"}
	case errors.Is(err, fs.ErrInvalid), errors.Is(err, syscall.EINVAL):
		kind = ErrInvalid
	}
	return newError(op, path, kind, err)
}

// kinds lists every kind with its HTTP status and Connect code, most specific first.
var kinds = []struct {
	kind   error
	status int
	code   connect.Code
}{
	{ErrOutsideRoot, http.StatusForbidden, connect.CodePermissionDenied},
	{ErrPermission, http.StatusForbidden, connect.CodePermissionDenied},
	{ErrNotFound, http.StatusNotFound, connect.CodeNotFound},
	{ErrExists, http.StatusConflict, connect.CodeAlreadyExists},
	{ErrNotEmpty, http.StatusConflict, connect.CodeFailedPrecondition},
	{ErrNotDirectory, http.StatusConflict, connect.CodeFailedPrecondition},
	{ErrIsDirectory, http.StatusBadRequest, connect.CodeFailedPrecondition},
	{ErrInvalid, http.StatusBadRequest, connect.CodeInvalidArgument},
	{ErrResourceExhausted, http.StatusRequestEntityTooLarge, connect.CodeResourceExhausted},
	{ErrUnavailable, http.StatusServiceUnavailable, connect.CodeUnavailable},
}

// StatusOf returns the HTTP status for err: 403 outside the root or permission denied, 404 not
// found, 409 exists / not empty / not a directory, 400 is a directory or invalid, 413 resource
// exhausted, 503 unavailable, 500 anything else.
func StatusOf(err error) int {
	for _, k := range kinds {
		if errors.Is(err, k.kind) {
			return k.status
		}
	}
	return http.StatusInternalServerError
}

// CodeOf returns the Connect code for err: PermissionDenied outside the root or permission
// denied, NotFound, AlreadyExists, FailedPrecondition (not empty, not a directory, is a
// directory), InvalidArgument, ResourceExhausted, Unavailable, Internal for anything else.
func CodeOf(err error) connect.Code {
	for _, k := range kinds {
		if errors.Is(err, k.kind) {
			return k.code
		}
	}
	return connect.CodeInternal
}
