package sandboxd

import (
	"net/http"

	"github.com/kubox-dev/kubox/internal/agent/process"
	"github.com/kubox-dev/kubox/proto/process/v1/processv1connect"
	"github.com/kubox-dev/kubox/proto/watcher/v1/watcherv1connect"
)

// NewGRPCHandler returns the handler of the gRPC port: process.v1.ProcessService over m and
// watcher.v1.FileWatcherService over opts.Root. wrap, when not nil, wraps each service (the agent's
// stream and message-size limits). Serve it over HTTP/2 without TLS (h2c) for plain gRPC clients.
func NewGRPCHandler(m *process.Manager, opts ProcessOptions, wrap func(http.Handler) http.Handler) http.Handler {
	if wrap == nil {
		wrap = func(h http.Handler) http.Handler { return h }
	}
	mux := http.NewServeMux()
	path, h := processv1connect.NewProcessServiceHandler(NewProcessService(m, opts))
	mux.Handle(path, wrap(h))
	path, h = watcherv1connect.NewFileWatcherServiceHandler(NewWatcherService(opts.Root))
	mux.Handle(path, wrap(h))
	return mux
}
