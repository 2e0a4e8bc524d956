package audit

import "time"

// Route kinds of Record.Route: which of a sandbox's servers a request went to.
const (
	// RouteAgent: kubox-agent's API (its process, file and activity services, /files/).
	RouteAgent = "agent"
	// RouteEnvd: E2B's in-sandbox protocol, envd, which kubox-agent serves on E2B's port.
	RouteEnvd = "envd"
	// RoutePort: any other port of the sandbox (a preview host, a path route, an app's port).
	RoutePort = "port"
)

// Operation kinds of Operation.Kind.
const (
	// OpExec runs a command (the agent's StartProcess or RunProcess, envd's process Start).
	OpExec = "exec"
	// OpPTY runs a command on a terminal; its session is open from Record.Time for
	// Record.DurationSeconds.
	OpPTY = "pty"
	// OpFile reads, writes or changes files (Operation.Action says which).
	OpFile = "file"
	// OpRPC is any other call of the agent or of envd (Operation.Procedure names it).
	OpRPC = "rpc"
)

// Phases of Record.Phase.
const (
	// PhaseOpen is written when a terminal session starts, before it ends; a record of
	// PhaseClose follows when it does.
	PhaseOpen = "open"
	// PhaseClose is the record of a request that ended: every request has one.
	PhaseClose = "close"
)

// SourceRouter marks what kubox-router recorded itself (Record.Source).
const SourceRouter = "router"

// Record is one request kubox-router let through to a sandbox, as the router saw it.
type Record struct {
	// time is when the request reached the router.
	Time time.Time `json:"time"`
	// source is who wrote the record: "router".
	Source string `json:"source"`
	// phase is "open" (a terminal session starting) or "close" (the request ended).
	Phase string `json:"phase"`
	// principal is the caller as the router authenticated it: a Kubernetes user or
	// ServiceAccount (system:serviceaccount:ns:name), claim:ns/claim for a claim token,
	// shared-token, or anonymous.
	Principal string `json:"principal"`
	// namespace and sandbox name the sandbox; claim the SandboxClaim it was reached through or
	// is owned by ("" when none).
	Namespace string `json:"namespace"`
	Sandbox   string `json:"sandbox"`
	Claim     string `json:"claim,omitempty"`
	// route is agent, envd or port; port the sandbox's port.
	Route string `json:"route"`
	Port  int    `json:"port"`
	// method and path are the HTTP request's, as forwarded to the sandbox.
	Method string `json:"method"`
	Path   string `json:"path"`
	// operation is what the request asked of the agent or envd, read from the request the
	// client sent (never from the sandbox's answer); nil on a route other than agent or envd.
	Operation *Operation `json:"operation,omitempty"`
	// reported is what the sandbox's own answer said about the operation (an exec's exit), read
	// by the router from the response it passed on. Code in the sandbox wrote it, so it may be
	// false; everything else in the record is what the router saw itself.
	Reported *Reported `json:"reported,omitempty"`
	// status is the HTTP status the router sent the client (101 for an upgraded connection,
	// 502 when the sandbox did not answer); 0 in a record of phase open.
	Status int `json:"status"`
	// bytesIn and bytesOut are the body bytes the router read from the client and wrote to it
	// (an upgraded connection's bytes each way included).
	BytesIn  int64 `json:"bytesIn"`
	BytesOut int64 `json:"bytesOut"`
	// durationSeconds is from time to the end of the response (streams and upgraded connections
	// included).
	DurationSeconds float64 `json:"durationSeconds"`
	// error says why the sandbox gave no complete answer, when it did not.
	Error string `json:"error,omitempty"`
}

// Operation is what a request asked of the sandbox's agent or envd.
type Operation struct {
	// kind is exec, pty, file or rpc.
	Kind string `json:"kind"`
	// procedure is the Connect or gRPC procedure (/kubox.agent.v1.ProcessService/RunProcess);
	// empty for a plain HTTP file request.
	Procedure string `json:"procedure,omitempty"`
	// command is the command line of exec and pty: argv, or ["/bin/sh", "-c", shell command].
	Command []string `json:"command,omitempty"`
	// action is what a file operation does: read, write, delete, stat, list, mkdir, move, watch.
	Action string `json:"action,omitempty"`
	// path is the file or directory; destination the target of a move.
	Path        string `json:"path,omitempty"`
	Destination string `json:"destination,omitempty"`
	// truncated is true when the command line or a path was longer than MaxOperationBytes and
	// is cut there.
	Truncated bool `json:"truncated,omitempty"`
	// unread says why the router could not read the operation's details from the request (its
	// first message is larger than the router reads, compressed in a way it does not read, or
	// malformed); the request still went to the sandbox unchanged.
	Unread string `json:"unread,omitempty"`
}

// Reported is what a sandbox's answer said about an operation: reported by the sandbox, not
// observed by the router.
type Reported struct {
	// exitCode is the command's exit status as the agent or envd reported it (agent: 128 plus
	// the signal number when a signal killed it; envd: -1).
	ExitCode *int32 `json:"exitCode,omitempty"`
	// signal names the signal that killed the command, when the answer says so.
	Signal string `json:"signal,omitempty"`
	// unread says why the router could not read the exit from the answer (compressed in a way
	// it does not read, larger than it reads, malformed, or the stream ended without one).
	Unread string `json:"unread,omitempty"`
}

// MaxOperationBytes bounds the command line (all its arguments together) and each path an
// Operation holds: the rest is cut, and Truncated set.
const MaxOperationBytes = 16 << 10

// recordOverhead is what a record holds besides its strings: the struct, the operation, the
// slice headers.
const recordOverhead = 512

// Size is about the memory r holds: what bounds the queue (QueueConfig.MaxBytes).
func (r *Record) Size() int {
	n := recordOverhead + len(r.Principal) + len(r.Namespace) + len(r.Sandbox) + len(r.Claim) + len(r.Route) + len(r.Method) +
		len(r.Path) + len(r.Error) + len(r.Phase) + len(r.Source)
	if op := r.Operation; op != nil {
		n += len(op.Kind) + len(op.Procedure) + len(op.Action) + len(op.Path) + len(op.Destination) + len(op.Unread)
		for _, a := range op.Command {
			n += len(a) + 16
		}
	}
	if rp := r.Reported; rp != nil {
		n += 64 + len(rp.Signal) + len(rp.Unread)
	}
	return n
}
