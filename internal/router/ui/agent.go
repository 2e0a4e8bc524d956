package ui

import (
	"context"
	"net"
	"net/http"
	"time"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// newAgentClient is the HTTP client to sandboxes' agents: plain HTTP/1.1 to the pod IP the
// router resolved, no proxy from the environment.
func newAgentClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: time.Minute,
	}}
}

// agentFor authorizes the viewer to connect to sandbox ns/name and resolves its agent.
func (h *Handler) agentFor(ctx context.Context, r *http.Request, v *viewer) (Agent, *Error) {
	ns, name, herr := h.sandboxName(r)
	if herr != nil {
		return Agent{}, herr
	}
	a, herr := h.opts.Agent(ctx, r, v.token, ns, name)
	if herr != nil {
		return Agent{}, herr
	}
	if a.Done == nil {
		a.Done = func() {}
	}
	return a, nil
}

// withAgentToken sends the agent's token on each call.
func withAgentToken(token string) connect.ClientOption {
	return connect.WithInterceptors(tokenInterceptor(token))
}

type tokenInterceptor string

func (t tokenInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set(contract.AuthorizationHeader, contract.BearerScheme+" "+string(t))
		return next(ctx, req)
	}
}

func (t tokenInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set(contract.AuthorizationHeader, contract.BearerScheme+" "+string(t))
		return conn
	}
}

func (t tokenInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func (h *Handler) processes(a Agent) agentv1connect.ProcessServiceClient {
	return agentv1connect.NewProcessServiceClient(h.agents, a.URL, withAgentToken(a.Token))
}

func (h *Handler) filesystem(a Agent) agentv1connect.FilesystemServiceClient {
	return agentv1connect.NewFilesystemServiceClient(h.agents, a.URL, withAgentToken(a.Token))
}

// agentError turns an agent's Connect error into the dashboard's.
func agentError(err error, doing string) *Error {
	code := http.StatusBadGateway
	switch connect.CodeOf(err) {
	case connect.CodeNotFound:
		code = http.StatusNotFound
	case connect.CodeInvalidArgument, connect.CodeFailedPrecondition:
		code = http.StatusBadRequest
	case connect.CodePermissionDenied:
		code = http.StatusForbidden
	}
	return errorf(code, "%s: %v", doing, err)
}
