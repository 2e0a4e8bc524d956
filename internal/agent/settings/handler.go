package settings

import (
	"context"
	"net/http"

	"connectrpc.com/connect"

	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// handler serves SettingsService from a Store.
type handler struct{ store *Store }

var _ agentv1connect.SettingsServiceHandler = handler{}

// NewHandler returns SettingsService's path and handler, serving s. The caller puts it behind the
// agent's token: the settings are the claim's secrets.
func NewHandler(s *Store, opts ...connect.HandlerOption) (string, http.Handler) {
	return agentv1connect.NewSettingsServiceHandler(handler{s}, opts...)
}

// ApplySettings implements agentv1connect.SettingsServiceHandler.
func (h handler) ApplySettings(_ context.Context, req *connect.Request[agentv1.ApplySettingsRequest]) (*connect.Response[agentv1.ApplySettingsResponse], error) {
	if err := h.store.Apply(req.Msg); err != nil {
		return nil, err
	}
	return connect.NewResponse(&agentv1.ApplySettingsResponse{}), nil
}
