package httperr

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// StatusClientClosedRequest is nginx's "client closed request": nobody reads it, the access log
// shows it.
const StatusClientClosedRequest = 499

// Error is an answer the router gives itself: a status and a message that says what is wrong,
// on which object, and how to fix it.
type Error struct {
	Code int
	Msg  string
	// RetryAfter is the Retry-After in seconds of a 429 or 503 (0: 1), or of another answer (a
	// 504 of a wake) when not 0.
	RetryAfter int
	// Body, when set, is the JSON body instead of {"error", "message", "code"}: an answer whose
	// shape a client's own protocol fixes (E2B's paused sandbox).
	Body any
}

func (e *Error) Error() string { return e.Msg }

// Errorf is an Error of status code with a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// body is the JSON of every error the router answers itself. Message repeats Error in the field
// E2B's SDKs read from envd's errors ({"message", "code"}), so an E2B program reaching a sandbox
// host through the router reports why (a sandbox that is waking, a refused token).
type body struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	Code    int    `json:"code"`
}

// Write answers e as JSON, with Retry-After where it applies and WWW-Authenticate on a 401.
func Write(w http.ResponseWriter, e *Error) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if e.Code == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="kubox-router"`)
	}
	if e.Code == http.StatusTooManyRequests || e.Code == http.StatusServiceUnavailable || e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(max(e.RetryAfter, 1)))
	}
	w.WriteHeader(e.Code)
	if e.Body != nil {
		_ = json.NewEncoder(w).Encode(e.Body)
		return
	}
	_ = json.NewEncoder(w).Encode(body{Error: e.Msg, Message: e.Msg, Code: e.Code})
}

// WriteJSON answers v as JSON with status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Clip shortens what a client sent before it is quoted back in a message.
func Clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
