package audit

import (
	"net/http"
	"strings"

	"google.golang.org/protobuf/proto"

	auditrec "github.com/kubox-dev/kubox/internal/audit"
	envdfilesystem "github.com/kubox-dev/kubox/proto/e2b/envd/filesystem"
	envdprocess "github.com/kubox-dev/kubox/proto/e2b/envd/process"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
)

// Actions of a file operation (auditrec.Operation.Action).
const (
	actionRead   = "read"
	actionWrite  = "write"
	actionDelete = "delete"
	actionStat   = "stat"
	actionList   = "list"
	actionMkdir  = "mkdir"
	actionMove   = "move"
	actionWatch  = "watch"
)

// procedure is a Connect/gRPC procedure whose first request message the router reads.
type procedure struct {
	kind, action string
	// msg is a new message of the procedure's request type; nil for python-runtime's /execute,
	// whose body is plain JSON (pyExecute).
	msg func() proto.Message
}

// pyExecute is python-runtime's POST /execute (agent-sandbox's runtime API on the agent's
// compatibility port): a JSON object whose "command" the agent splits as shlex does.
var pyExecute = procedure{kind: auditrec.OpExec}

// python-runtime's file paths (internal/agent/compat/pyruntime).
var pyFilePrefixes = map[string]string{"/download/": actionRead, "/list/": actionList, "/exists/": actionStat}

// agentProcedures are kubox-agent's (proto/kubox/agent/v1), envdProcedures envd's
// (proto/e2b/envd): the calls that run commands or touch files.
var (
	agentProcedures = map[string]procedure{
		"/kubox.agent.v1.ProcessService/StartProcess": {auditrec.OpExec, "", func() proto.Message { return &agentv1.StartProcessRequest{} }},
		"/kubox.agent.v1.ProcessService/RunProcess":   {auditrec.OpExec, "", func() proto.Message { return &agentv1.RunProcessRequest{} }},
		"/kubox.agent.v1.FilesystemService/Stat":      {auditrec.OpFile, actionStat, func() proto.Message { return &agentv1.StatRequest{} }},
		"/kubox.agent.v1.FilesystemService/List":      {auditrec.OpFile, actionList, func() proto.Message { return &agentv1.ListRequest{} }},
		"/kubox.agent.v1.FilesystemService/MakeDir":   {auditrec.OpFile, actionMkdir, func() proto.Message { return &agentv1.MakeDirRequest{} }},
		"/kubox.agent.v1.FilesystemService/Move":      {auditrec.OpFile, actionMove, func() proto.Message { return &agentv1.MoveRequest{} }},
		"/kubox.agent.v1.FilesystemService/Remove":    {auditrec.OpFile, actionDelete, func() proto.Message { return &agentv1.RemoveRequest{} }},
		"/kubox.agent.v1.FilesystemService/Watch":     {auditrec.OpFile, actionWatch, func() proto.Message { return &agentv1.WatchRequest{} }},
	}
	envdProcedures = map[string]procedure{
		"/process.Process/Start":               {auditrec.OpExec, "", func() proto.Message { return &envdprocess.StartRequest{} }},
		"/filesystem.Filesystem/Stat":          {auditrec.OpFile, actionStat, func() proto.Message { return &envdfilesystem.StatRequest{} }},
		"/filesystem.Filesystem/ListDir":       {auditrec.OpFile, actionList, func() proto.Message { return &envdfilesystem.ListDirRequest{} }},
		"/filesystem.Filesystem/MakeDir":       {auditrec.OpFile, actionMkdir, func() proto.Message { return &envdfilesystem.MakeDirRequest{} }},
		"/filesystem.Filesystem/Move":          {auditrec.OpFile, actionMove, func() proto.Message { return &envdfilesystem.MoveRequest{} }},
		"/filesystem.Filesystem/Remove":        {auditrec.OpFile, actionDelete, func() proto.Message { return &envdfilesystem.RemoveRequest{} }},
		"/filesystem.Filesystem/WatchDir":      {auditrec.OpFile, actionWatch, func() proto.Message { return &envdfilesystem.WatchDirRequest{} }},
		"/filesystem.Filesystem/CreateWatcher": {auditrec.OpFile, actionWatch, func() proto.Message { return &envdfilesystem.CreateWatcherRequest{} }},
	}
)

// agentFilesPrefix is kubox-agent's file content API (internal/agent/files.ContentPrefix);
// envdFilesPath envd's (?path=).
const (
	agentFilesPrefix = "/files/"
	envdFilesPath    = "/files"
)

// classify says what a request on route asks, from its method, path and query alone: the
// operation without the details in its body, and the procedure whose first message holds
// them (nil when there is none to read). It returns nil for requests that are no operation of
// the agent or envd (any request on a RoutePort).
func classify(route string, r *http.Request, path string) (*auditrec.Operation, *procedure) {
	var procs map[string]procedure
	switch route {
	case auditrec.RouteAgent:
		procs = agentProcedures
		if strings.HasPrefix(path, agentFilesPrefix) {
			return &auditrec.Operation{Kind: auditrec.OpFile, Action: fileAction(r.Method), Path: "/" + strings.TrimPrefix(path, agentFilesPrefix)}, nil
		}
		if op, proc := classifyPyRuntime(r, path); op != nil {
			return op, proc
		}
	case auditrec.RouteEnvd:
		procs = envdProcedures
		if path == envdFilesPath {
			return &auditrec.Operation{Kind: auditrec.OpFile, Action: fileAction(r.Method), Path: r.URL.Query().Get("path")}, nil
		}
	default:
		return nil, nil
	}
	if p, ok := procs[path]; ok {
		return &auditrec.Operation{Kind: p.kind, Action: p.action, Procedure: path}, &p
	}
	if isRPC(r.Header.Get("Content-Type")) {
		return &auditrec.Operation{Kind: auditrec.OpRPC, Procedure: path}, nil
	}
	return nil, nil
}

// classifyPyRuntime reads python-runtime's API: /execute, /upload and the file paths.
func classifyPyRuntime(r *http.Request, path string) (*auditrec.Operation, *procedure) {
	switch {
	case path == "/execute" && r.Method == http.MethodPost:
		return &auditrec.Operation{Kind: auditrec.OpExec}, &pyExecute
	case path == "/upload" && r.Method == http.MethodPost:
		return &auditrec.Operation{Kind: auditrec.OpFile, Action: actionWrite}, nil
	}
	for prefix, action := range pyFilePrefixes {
		if strings.HasPrefix(path, prefix) && r.Method == http.MethodGet {
			return &auditrec.Operation{Kind: auditrec.OpFile, Action: action, Path: "/" + strings.TrimPrefix(path, prefix)}, nil
		}
	}
	return nil, nil
}

// fileAction is what an HTTP method does to a file of the agent's or envd's file API.
func fileAction(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return actionRead
	case http.MethodPut, http.MethodPost:
		return actionWrite
	case http.MethodDelete:
		return actionDelete
	}
	return strings.ToLower(method)
}

// describe fills op's details from its procedure's request message m.
func describe(op *auditrec.Operation, m proto.Message) {
	switch m := m.(type) {
	case *agentv1.StartProcessRequest:
		op.Command = agentCommand(m.GetSpec())
		if m.GetPty() != nil {
			op.Kind = auditrec.OpPTY
		}
	case *agentv1.RunProcessRequest:
		op.Command = agentCommand(m.GetSpec())
	case *envdprocess.StartRequest:
		op.Command = append([]string{m.GetProcess().GetCmd()}, m.GetProcess().GetArgs()...)
		if m.GetPty() != nil {
			op.Kind = auditrec.OpPTY
		}
	case interface {
		GetSource() string
		GetDestination() string
	}:
		op.Path, op.Destination = m.GetSource(), m.GetDestination()
	case interface{ GetDirectory() string }:
		op.Path = m.GetDirectory()
	case interface{ GetPath() string }:
		op.Path = m.GetPath()
	}
}

// agentCommand is the command line of a kubox-agent ProcessSpec: its argv, or its shell command
// as the agent runs it (sh -c).
func agentCommand(s *agentv1.ProcessSpec) []string {
	if s.GetShellCommand() != "" {
		return []string{"sh", "-c", s.GetShellCommand()}
	}
	return s.GetArgv()
}

// bound cuts op's command line (all its arguments together) and its paths at
// auditrec.MaxOperationBytes, so that a caller's long command cannot make its record, and the
// queue holding it, large.
func bound(op *auditrec.Operation) {
	total := 0
	for i, a := range op.Command {
		if total+len(a) > auditrec.MaxOperationBytes {
			op.Command = append(op.Command[:i:i], a[:auditrec.MaxOperationBytes-total])
			op.Truncated = true
			break
		}
		total += len(a)
	}
	for _, p := range []*string{&op.Path, &op.Destination} {
		if len(*p) > auditrec.MaxOperationBytes {
			*p = (*p)[:auditrec.MaxOperationBytes]
			op.Truncated = true
		}
	}
}
