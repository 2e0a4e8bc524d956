package kubox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"connectrpc.com/connect"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestAPIErrorMatchesTheSentinelOfItsStatus(t *testing.T) {
	sentinels := []error{ErrNotReady, ErrClaimFailed, ErrNotFound, ErrUnauthorized, ErrForbidden, ErrTimeout}
	cases := map[string]struct {
		status int
		want   error
	}{
		"401": {status: http.StatusUnauthorized, want: ErrUnauthorized},
		"403": {status: http.StatusForbidden, want: ErrForbidden},
		"404": {status: http.StatusNotFound, want: ErrNotFound},
		"503": {status: http.StatusServiceUnavailable, want: ErrNotReady},
		"504": {status: http.StatusGatewayTimeout, want: ErrTimeout},
		"400": {status: http.StatusBadRequest},
		"502": {status: http.StatusBadGateway},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := fmt.Errorf("wrapped: %w", &APIError{Status: tc.status, Message: "m", Object: "sandbox ns/a"})
			for _, s := range sentinels {
				if got := errors.Is(err, s); got != (s == tc.want) {
					t.Errorf("errors.Is(HTTP %d, %v) = %v, want %v", tc.status, s, got, s == tc.want)
				}
			}
		})
	}
}

func TestAPIErrorMessageNamesTheObjectAndTheFix(t *testing.T) {
	cases := map[string]struct {
		err  *APIError
		want []string
	}{
		"unauthorized": {err: &APIError{Status: 401, Message: "no credentials", Object: "sandbox ns/a"},
			want: []string{"sandbox ns/a", "no credentials", "HTTP 401", "kubectl create token", "Options.Token"}},
		"forbidden": {err: &APIError{Status: 403, Message: "not allowed", Object: "sandbox ns/a"},
			want: []string{"sandbox ns/a", "sandboxes/connect", "sandboxclaims/connect"}},
		"not ready": {err: &APIError{Status: 503, Object: "sandbox ns/a"},
			want: []string{"sandbox ns/a", "Service Unavailable", "Resume"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			msg := tc.err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Error() = %q; want it to contain %q", msg, w)
				}
			}
		})
	}
}

func TestWrapCallErrorMapsConnectCodesAndRouterErrors(t *testing.T) {
	routerErr := &url.Error{Op: "Post", URL: "http://r/x", Err: &APIError{Status: 404, Message: "sandbox ns/a not found"}}
	cases := map[string]struct {
		err      error
		sentinel error
		status   int
		code     string
		contains string
	}{
		"agent not found": {err: connect.NewError(connect.CodeNotFound, errors.New("open /x: no such file")),
			sentinel: ErrNotFound, status: 404, code: "not_found", contains: "no such file"},
		"agent unauthenticated": {err: connect.NewError(connect.CodeUnauthenticated, errors.New("wrong token")),
			sentinel: ErrUnauthorized, status: 401, code: "unauthenticated"},
		"permission denied": {err: connect.NewError(connect.CodePermissionDenied, errors.New("outside the root")),
			sentinel: ErrForbidden, status: 403, code: "permission_denied"},
		"unavailable": {err: connect.NewError(connect.CodeUnavailable, errors.New("draining")),
			sentinel: ErrNotReady, status: 503, code: "unavailable"},
		"failed precondition": {err: connect.NewError(connect.CodeFailedPrecondition, errors.New("no pty")),
			status: 412, code: "failed_precondition"},
		"router error through the transport": {err: connect.NewError(connect.CodeUnavailable, routerErr),
			sentinel: ErrNotFound, status: 404, contains: "sandbox ns/a not found"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := wrapCallError(tc.err, "sandbox ns/a")
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("wrapCallError = %T %v; want an *APIError", err, err)
			}
			if ae.Status != tc.status || ae.Code != tc.code || ae.Object != "sandbox ns/a" {
				t.Errorf("APIError = %+v; want status %d, code %q, object sandbox ns/a", ae, tc.status, tc.code)
			}
			if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.sentinel)
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("Error() = %q; want it to contain %q", err.Error(), tc.contains)
			}
		})
	}
	t.Run("context", func(t *testing.T) {
		err := wrapCallError(connect.NewError(connect.CodeCanceled, context.Canceled), "sandbox ns/a")
		if !errors.Is(err, context.Canceled) {
			t.Errorf("wrapCallError(canceled) = %v; want it to wrap context.Canceled", err)
		}
	})
	if wrapCallError(nil, "x") != nil {
		t.Error("wrapCallError(nil) != nil")
	}
}

func TestErrorFromResponseReadsRouterAndAgentBodies(t *testing.T) {
	cases := map[string]struct {
		status      int
		body        string
		wantMessage string
		wantCode    string
	}{
		"router":     {status: 404, body: `{"error":"sandbox ns/a does not exist","code":404}`, wantMessage: "sandbox ns/a does not exist"},
		"agent":      {status: 404, body: `{"code":"not_found","message":"read /x: no such file"}`, wantMessage: "read /x: no such file", wantCode: "not_found"},
		"plain text": {status: 502, body: "bad gateway\n", wantMessage: "bad gateway"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tc.status, Body: io.NopCloser(strings.NewReader(tc.body))}
			got := errorFromResponse(resp, "file /x in sandbox ns/a")
			if got.Status != tc.status || got.Message != tc.wantMessage || got.Code != tc.wantCode || got.Object != "file /x in sandbox ns/a" {
				t.Errorf("errorFromResponse = %+v; want status %d, message %q, code %q", got, tc.status, tc.wantMessage, tc.wantCode)
			}
		})
	}
}

func TestKubeErrorMatchesTheSentinelsAndNamesTheRBAC(t *testing.T) {
	gr := schema.GroupResource{Group: "extensions.agents.x-k8s.io", Resource: "sandboxclaims"}
	cases := map[string]struct {
		err  error
		want error
	}{
		"not found":    {err: apierrors.NewNotFound(gr, "c"), want: ErrNotFound},
		"forbidden":    {err: apierrors.NewForbidden(gr, "c", errors.New("no")), want: ErrForbidden},
		"unauthorized": {err: apierrors.NewUnauthorized("expired"), want: ErrUnauthorized},
		"timeout":      {err: apierrors.NewTimeoutError("slow", 1), want: ErrTimeout},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := kubeError(tc.err, "creating", "SandboxClaim ns/c", "create on sandboxclaims")
			if !errors.Is(err, tc.want) || !apierrors.IsNotFound(err) == (tc.want == ErrNotFound) {
				t.Errorf("kubeError = %v; want it to match %v and keep the API error", err, tc.want)
			}
			if !strings.Contains(err.Error(), "SandboxClaim ns/c") {
				t.Errorf("kubeError = %q; want it to name the object", err)
			}
			if tc.want == ErrForbidden && !strings.Contains(err.Error(), "create on sandboxclaims") {
				t.Errorf("kubeError = %q; want it to name the RBAC needed", err)
			}
		})
	}
}
