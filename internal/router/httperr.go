package router

import (
	"github.com/kubox-dev/kubox/internal/router/httperr"
)

// httpError is an answer the router gives itself (internal/router/httperr).
type httpError = httperr.Error

var (
	errorf     = httperr.Errorf
	writeError = httperr.Write
	writeJSON  = httperr.WriteJSON
	clip       = httperr.Clip
)
