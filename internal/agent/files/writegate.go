package files

import (
	"net/http"

	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// WriteGate admits writes while the agent serves and refuses them once it shuts down (when the
// sandbox is suspended its Pod is deleted): kubox-agent's activity.Writes. A write the gate
// admitted runs to its end, and the agent syncs the file systems after the last one.
type WriteGate interface {
	// BeginWrite admits a write, returning the function to call when it has finished, or the
	// refusal, whose message the client gets.
	BeginWrite() (done func(), err error)
}

// WriteProcedures are FilesystemService's procedures that change files; the agent guards them
// with its WriteGate (file contents are written through the HTTP API, which guards PUT and DELETE
// itself).
var WriteProcedures = []string{
	agentv1connect.FilesystemServiceMakeDirProcedure,
	agentv1connect.FilesystemServiceMoveProcedure,
	agentv1connect.FilesystemServiceRemoveProcedure,
}

// admitted serves a PUT or DELETE with serve once the gate admits it, or answers 503 with the
// gate's refusal (code unavailable, or sandboxd's UNAVAILABLE).
func (s *fileServer) admitted(w http.ResponseWriter, r *http.Request, rest, op string,
	serve func(http.ResponseWriter, *http.Request, string)) {
	if s.writes == nil {
		serve(w, r, rest)
		return
	}
	done, err := s.writes.BeginWrite()
	if err != nil {
		s.writeError(w, &Error{Op: op, Path: s.root.shown(filePath(rest)), Kind: ErrUnavailable, Err: err})
		return
	}
	defer done()
	serve(w, r, rest)
}
