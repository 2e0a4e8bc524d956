// Package audit is kubox-router's side of the audit trail (package internal/audit): for each
// request the router lets through to a sandbox it writes a record of what it saw at its edge,
// outside the sandbox, so that code in the sandbox can neither erase nor forge it.
//
// What a record says comes from two places only: the router's own decisions (the principal its
// authentication resolved, the sandbox and claim it resolved, the port) and the bytes that
// passed through it (the client's request, the status and byte counts the client got). The
// operation (an exec's command line, a file's path and action, a terminal's opening) is read
// from the client's request before it is forwarded: at most the first message, bounded by
// MaxPeekBytes, replayed to the sandbox byte for byte; nothing is read from the sandbox's
// answer but its status line and sizes.
package audit
