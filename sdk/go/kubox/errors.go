package kubox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"connectrpc.com/connect"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Sentinel errors. Every error the SDK returns that is one of these kinds wraps the sentinel, so
// callers test with errors.Is; the error's own message says which object it is about and what to
// do.
var (
	// ErrNotReady: the sandbox is not ready (no Pod IP, suspended, Ready not True) or the router
	// answered 503.
	ErrNotReady = errors.New("sandbox not ready")
	// ErrClaimFailed: the claim reached a state it will not leave by itself (its pool or template
	// does not exist, its metadata or env was rejected, it expired); its Ready condition says why.
	ErrClaimFailed = errors.New("sandbox claim failed")
	// ErrNotFound: the claim, sandbox, process or file does not exist (HTTP 404, connect NotFound,
	// or a Kubernetes NotFound).
	ErrNotFound = errors.New("not found")
	// ErrUnauthorized: the router, the agent or the API server did not accept the credentials
	// (HTTP 401).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the credentials were accepted but are not allowed to do this (HTTP 403).
	ErrForbidden = errors.New("forbidden")
	// ErrTimeout: Options.ReadyTimeout (or the context's deadline) passed before the claim or
	// sandbox reached the state waited for.
	ErrTimeout = errors.New("timed out")
)

// APIError is an error answered by kubox-router or kubox-agent: an HTTP status with a message,
// about an object. It matches the sentinel of its status with errors.Is: 401 ErrUnauthorized,
// 403 ErrForbidden, 404 ErrNotFound, 503 ErrNotReady, 504 ErrTimeout.
type APIError struct {
	// Status is the HTTP status (for Connect calls, the status that stands for the error's code).
	Status int
	// Code is the Connect error code ("not_found", "failed_precondition", ...) when the agent
	// answered through Connect; empty for plain HTTP and router errors.
	Code string
	// Message is what the server said.
	Message string
	// Object names what the request was about, e.g. `sandbox default/kubox-x7k2p` or
	// `file /tmp/a.txt in sandbox default/kubox-x7k2p`.
	Object string
}

// Error returns the message with the object it is about and, for authentication, authorization
// and readiness errors, what to do.
func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	s := fmt.Sprintf("%s: %s (HTTP %d)", e.Object, msg, e.Status)
	if hint := statusHint(e.Status); hint != "" {
		s += "; " + hint
	}
	return s
}

// Is reports whether target is the sentinel of e's status.
func (e *APIError) Is(target error) bool {
	s := sentinelOf(e.Status)
	return s != nil && s == target
}

func sentinelOf(status int) error {
	switch status {
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusForbidden:
		return ErrForbidden
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusServiceUnavailable:
		return ErrNotReady
	case http.StatusGatewayTimeout:
		return ErrTimeout
	}
	return nil
}

func statusHint(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "the router accepts a Kubernetes bearer token (kubeconfig token or exec plugin, `kubectl create token`), " +
			"a claim token (Client.MintClaimToken) or its shared token in Options.Token"
	case http.StatusForbidden:
		return "the identity needs create on sandboxes/connect (agents.x-k8s.io) or sandboxclaims/connect " +
			"(extensions.agents.x-k8s.io) for this object; see docs/sdk-go.md#rbac"
	case http.StatusServiceUnavailable:
		return "the sandbox is not ready (suspended, starting, or its Pod has no IP); Resume it or wait for Ready"
	case http.StatusBadGateway:
		return "the router could not reach the sandbox's agent; check that the sandbox's Pod runs kubox-agent (spec.agent)"
	}
	return ""
}

// codeStatus is the HTTP status that stands for a Connect code.
func codeStatus(c connect.Code) int {
	switch c {
	case connect.CodeCanceled:
		return 499
	case connect.CodeInvalidArgument, connect.CodeOutOfRange:
		return http.StatusBadRequest
	case connect.CodeDeadlineExceeded:
		return http.StatusGatewayTimeout
	case connect.CodeNotFound:
		return http.StatusNotFound
	case connect.CodeAlreadyExists, connect.CodeAborted:
		return http.StatusConflict
	case connect.CodePermissionDenied:
		return http.StatusForbidden
	case connect.CodeResourceExhausted:
		return http.StatusTooManyRequests
	case connect.CodeFailedPrecondition:
		return http.StatusPreconditionFailed
	case connect.CodeUnimplemented:
		return http.StatusNotImplemented
	case connect.CodeUnavailable:
		return http.StatusServiceUnavailable
	case connect.CodeUnauthenticated:
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}

// routerError is the body of kubox-router's errors: {"error": "...", "code": 404}.
type routerError struct {
	Error string `json:"error"`
	Code  int    `json:"code"`
}

// agentError is the body of kubox-agent's plain HTTP errors: {"code": "not_found", "message": "..."}.
type agentError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// errorFromResponse reads an error response (status >= 400) of the router or the agent into an
// *APIError about object, and closes its body.
func errorFromResponse(resp *http.Response, object string) *APIError {
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &APIError{Status: resp.StatusCode, Object: object}
	var re routerError
	var ae agentError
	switch {
	case json.Unmarshal(body, &re) == nil && re.Error != "":
		e.Message = re.Error
	case json.Unmarshal(body, &ae) == nil && ae.Message != "":
		e.Message, e.Code = ae.Message, ae.Code
	default:
		e.Message = string(bytes.TrimSpace(body))
	}
	return e
}

// routerErrors is an http.RoundTripper that turns kubox-router's own JSON errors into *APIError
// before a Connect client reads them: connect-go would otherwise map the status through gRPC's
// table (404 becomes Unimplemented) and lose the router's message. The agent's errors pass
// through unchanged. wrapCallError fills in the error's Object.
type routerErrors struct {
	base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *routerErrors) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	var re routerError
	if json.Unmarshal(body, &re) == nil && re.Error != "" && re.Code != 0 {
		return nil, &APIError{Status: resp.StatusCode, Message: re.Error}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// wrapCallError turns an error of a Connect call or an HTTP request to the agent into one that
// names object and matches the sentinels. Context errors are returned as they are, wrapped.
func wrapCallError(err error, object string) error {
	if err == nil {
		return nil
	}
	var ae *APIError
	if errors.As(err, &ae) {
		if ae.Object == "" {
			ae.Object = object
		}
		return ae
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", object, err)
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		if ce.Code() == connect.CodeUnavailable && ce.Message() == "" {
			return fmt.Errorf("%s: cannot reach the agent: %w", object, err)
		}
		return &APIError{Status: codeStatus(ce.Code()), Code: ce.Code().String(), Message: ce.Message(), Object: object}
	}
	return fmt.Errorf("%s: %w", object, err)
}

// kubeError wraps an error of the Kubernetes API about object, doing what, so that it matches
// the SDK's sentinels (NotFound, Forbidden, Unauthorized, Timeout) and says what to do.
func kubeError(err error, doing, object, rbac string) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %s: %w: %w", doing, object, ErrNotFound, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s %s: %w: %w; the identity needs RBAC %s", doing, object, ErrForbidden, err, rbac)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s %s: %w: %w; refresh the kubeconfig's credentials", doing, object, ErrUnauthorized, err)
	case apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err):
		return fmt.Errorf("%s %s: %w: %w", doing, object, ErrTimeout, err)
	}
	return fmt.Errorf("%s %s: %w", doing, object, err)
}
