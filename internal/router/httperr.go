package router

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// httpError is an answer the router gives itself: a status and a message that says what is
// wrong and how to fix it.
type httpError struct {
	code int
	msg  string
	// retryAfter is the Retry-After in seconds of a 429 or 503 (0: 1), or of another answer
	// (a 504 of a wake) when not 0.
	retryAfter int
}

func (e *httpError) Error() string { return e.msg }

func errorf(code int, format string, args ...any) *httpError {
	return &httpError{code: code, msg: fmt.Sprintf(format, args...)}
}

// errorBody is the JSON of every error the router answers itself. Message repeats Error in the
// field E2B's SDKs read from envd's errors ({"message", "code"}), so an E2B program reaching a
// sandbox host through the router reports why (a sandbox that is waking, a refused token).
type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	Code    int    `json:"code"`
}

func writeError(w http.ResponseWriter, e *httpError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if e.code == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="kubox-router"`)
	}
	if e.code == http.StatusTooManyRequests || e.code == http.StatusServiceUnavailable || e.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(max(e.retryAfter, 1)))
	}
	w.WriteHeader(e.code)
	_ = json.NewEncoder(w).Encode(errorBody{Error: e.msg, Message: e.msg, Code: e.code})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
