package ui

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubox-dev/kubox/internal/router/authn"
)

// Paths of the API, under APIPrefix; {ns} and {name} name a namespace and a Sandbox.
const sandboxPath = APIPrefix + "namespaces/{ns}/sandboxes/{name}"

// newAPI routes the API's operations.
func (h *Handler) newAPI() *http.ServeMux {
	mux := http.NewServeMux()
	for pattern, f := range map[string]handlerFunc{
		"GET " + APIPrefix + "whoami":                         h.whoami,
		"GET " + APIPrefix + "metrics":                        h.serveMetrics,
		"GET " + APIPrefix + "namespaces/{ns}/overview":       h.overview,
		"GET " + APIPrefix + "namespaces/{ns}/metrics":        h.serveNamespaceMetrics,
		"GET " + sandboxPath:                                  h.sandbox,
		"DELETE " + sandboxPath:                               h.deleteSandbox,
		"POST " + sandboxPath + "/suspend":                    h.suspend,
		"POST " + sandboxPath + "/resume":                     h.resume,
		"POST " + sandboxPath + "/extend":                     h.extend,
		"GET " + sandboxPath + "/files":                       h.listFiles,
		"GET " + sandboxPath + "/files/content":               h.download,
		"PUT " + sandboxPath + "/files/content":               h.upload,
		"POST " + sandboxPath + "/code":                       h.runCode,
		"POST " + sandboxPath + "/code/contexts":              h.createCodeContext,
		"POST " + sandboxPath + "/code/contexts/{id}/restart": h.restartCodeContext,
	} {
		mux.HandleFunc(pattern, h.authed(f))
	}
	// A WebSocket carries its token in its first message: browsers cannot set its headers.
	mux.HandleFunc("GET "+sandboxPath+"/terminal", h.terminal)
	mux.HandleFunc(APIPrefix, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errorf(http.StatusNotFound, "the dashboard's API has no %s %s", r.Method, clip(r.URL.Path)))
	})
	return mux
}

// whoami names the viewer and the namespace the dashboard opens first: the router's only one,
// else a ServiceAccount's own, else "default".
func (h *Handler) whoami(_ context.Context, w http.ResponseWriter, _ *http.Request, v *viewer) *Error {
	ns := h.opts.Namespace
	if ns == "" {
		ns = authn.ServiceAccountNamespace(v.user)
	}
	if ns == "" {
		ns = "default"
	}
	writeJSON(w, http.StatusOK, map[string]any{"user": v.user, "namespace": ns, "fixedNamespace": h.opts.Namespace != ""})
	return nil
}

// overview lists the namespace's pools, claims and sandboxes, as far as the viewer may list
// them: a list RBAC refuses is reported, not fatal.
func (h *Handler) overview(ctx context.Context, w http.ResponseWriter, r *http.Request, _ *viewer) *Error {
	ns, herr := h.namespace(r)
	if herr != nil {
		return herr
	}
	o, err := h.loadOverview(ctx, ns)
	if err != nil {
		return kubeError(err, "listing the sandboxes of namespace "+ns)
	}
	writeJSON(w, http.StatusOK, o)
	return nil
}

// sandbox shows one sandbox: its conditions, Events and the actions RBAC allows the viewer.
func (h *Handler) sandbox(ctx context.Context, w http.ResponseWriter, r *http.Request, _ *viewer) *Error {
	ns, name, herr := h.sandboxName(r)
	if herr != nil {
		return herr
	}
	d, err := h.loadDetail(ctx, ns, name)
	if err != nil {
		return kubeError(err, "reading Sandbox "+ns+"/"+name)
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

// namespace reads and checks {ns}.
func (h *Handler) namespace(r *http.Request) (string, *Error) {
	ns := r.PathValue("ns")
	if len(validation.IsDNS1123Label(ns)) > 0 {
		return "", errorf(http.StatusBadRequest, "%q is not a namespace name", clip(ns))
	}
	if h.opts.Namespace != "" && ns != h.opts.Namespace {
		return "", errorf(http.StatusNotFound, "namespace %q is not served by this router: it serves only namespace %q", ns, h.opts.Namespace)
	}
	return ns, nil
}

// sandboxName reads and checks {ns} and {name}.
func (h *Handler) sandboxName(r *http.Request) (string, string, *Error) {
	ns, herr := h.namespace(r)
	if herr != nil {
		return "", "", herr
	}
	name := r.PathValue("name")
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return "", "", errorf(http.StatusBadRequest, "%q is not a Sandbox name", clip(name))
	}
	return ns, name, nil
}

// kubeError turns an API server's answer to the viewer's request into the dashboard's: its
// status (403 when RBAC refuses the viewer) and message.
func kubeError(err error, doing string) *Error {
	code := http.StatusBadGateway
	if s := apierrors.APIStatus(nil); errors.As(err, &s) && s.Status().Code != 0 {
		code = int(s.Status().Code)
	}
	return errorf(code, "%s: %v", doing, err)
}

// decodeJSON reads a small JSON body.
func decodeJSON(r *http.Request, v any) *Error {
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<16)).Decode(v); err != nil {
		return errorf(http.StatusBadRequest, "the body is not the JSON this operation takes: %v", err)
	}
	return nil
}

// clip shortens what a client sent before it goes into a message.
func clip(s string) string {
	if len(s) > 128 {
		return s[:128] + "..."
	}
	return s
}
