// Package files is the file-system side of kubox-agent: it resolves the paths clients name, and
// serves the operations on them over three APIs that share one implementation (Root):
//
//   - FilesystemService (proto/kubox/agent/v1/filesystem.proto) over Connect, gRPC and gRPC-Web:
//     Stat, List, MakeDir, Move, Remove and a streaming Watch (NewHandler);
//   - file contents over plain HTTP at /files/<path>: GET (with Range), HEAD, PUT (streamed to a
//     temporary file, synced, then renamed into place) and DELETE (NewContentHandler);
//   - agent-sandbox's sandboxd REST API at /v1/files/<path>, /v1/health and /v1/metadata, for
//     clients written against sandboxd (NewSandboxdHandler).
//
// # Paths and the root
//
// A Root made by NewRoot confines every path to one directory: relative and absolute paths alike
// are taken relative to it, and no path reaches outside it, whether through "..", through a
// symbolic link in any component, or through a final symbolic link. Such a path fails with
// ErrOutsideRoot. A Root made by NewHostRoot confines nothing: paths are the container's own, and
// relative paths are relative to its working directory.
//
// Resolution walks the path one component at a time, reading symbolic links itself so that it can
// accept absolute links that stay inside the root (common in workspaces, and refused by the
// kernel's RESOLVE_BENEATH) and so that errors name the path the client gave. The walk only
// chooses the path; the operation itself then goes through an os.Root opened on the root
// directory, which descends with openat(O_NOFOLLOW) one component at a time. So a symbolic link
// swapped in after resolution (the classic check-then-use race) can make an operation fail or
// follow a link that stays inside the root, but never reach outside it.
//
// Errors are *Error values that wrap one of the Err* kinds; StatusOf and CodeOf map a kind to an
// HTTP status and a Connect code, and every message names the path and says what to do.
package files
