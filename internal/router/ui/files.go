package ui

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/api/contract"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
)

// fileRow is one entry of a directory listing.
type fileRow struct {
	Name     string    `json:"name"`
	Path     string    `json:"path"`
	Dir      bool      `json:"dir"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// listFiles lists the directory ?path= (default "/") through the agent's FilesystemService.
func (h *Handler) listFiles(ctx context.Context, w http.ResponseWriter, r *http.Request, v *viewer) *Error {
	p, herr := filePath(r)
	if herr != nil {
		return herr
	}
	a, herr := h.agentFor(ctx, r, v)
	if herr != nil {
		return herr
	}
	defer a.Done()
	res, err := h.filesystem(a).List(ctx, connect.NewRequest(&agentv1.ListRequest{Path: p}))
	if err != nil {
		return agentError(err, "listing "+p)
	}
	rows := []fileRow{}
	for _, e := range res.Msg.GetEntries() {
		rows = append(rows, fileRow{Name: e.GetName(), Path: e.GetPath(), Dir: e.GetType() == agentv1.FileType_FILE_TYPE_DIRECTORY,
			Size: e.GetSize(), Modified: e.GetModifiedTime().AsTime()})
	}
	writeJSON(w, http.StatusOK, map[string]any{"path": p, "entries": rows})
	return nil
}

// download streams the file ?path= from the agent's file API.
func (h *Handler) download(ctx context.Context, w http.ResponseWriter, r *http.Request, v *viewer) *Error {
	return h.forwardFile(ctx, w, r, v, http.MethodGet, nil)
}

// upload streams the body into the file ?path= through the agent's file API.
func (h *Handler) upload(ctx context.Context, w http.ResponseWriter, r *http.Request, v *viewer) *Error {
	if m := h.opts.MaxUploadBytes; m > 0 {
		if r.ContentLength > m {
			return errorf(http.StatusRequestEntityTooLarge, "the file has %d bytes, more than the router's limit of %d (--max-request-body-bytes)", r.ContentLength, m)
		}
		r.Body = http.MaxBytesReader(w, r.Body, m)
	}
	return h.forwardFile(ctx, w, r, v, http.MethodPut, r.Body)
}

// forwardFile sends method for the file ?path= to the agent's /files/ API with the agent token,
// and streams the agent's answer back.
func (h *Handler) forwardFile(ctx context.Context, w http.ResponseWriter, r *http.Request, v *viewer, method string, body io.Reader) *Error {
	p, herr := filePath(r)
	if herr != nil {
		return herr
	}
	a, herr := h.agentFor(ctx, r, v)
	if herr != nil {
		return herr
	}
	defer a.Done()
	segs := strings.Split(strings.TrimLeft(p, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	u := strings.TrimSuffix(a.URL, "/") + "/files/" + strings.Join(segs, "/")
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	if body != nil {
		req.ContentLength = r.ContentLength
	}
	req.Header.Set(contract.AuthorizationHeader, contract.BearerScheme+" "+a.Token)
	res, err := h.agents.Do(req)
	if err != nil {
		return errorf(http.StatusBadGateway, "reaching the sandbox's agent for %s: %v", p, err)
	}
	defer func() { _ = res.Body.Close() }()
	for _, k := range []string{"Content-Type", "Content-Length", "Last-Modified"} {
		if val := res.Header.Get(k); val != "" {
			w.Header().Set(k, val)
		}
	}
	if method == http.MethodGet && res.StatusCode == http.StatusOK {
		w.Header().Set("Content-Disposition", "attachment; filename="+strconv.Quote(path.Base(p)))
	}
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, res.Body)
	return nil
}

// filePath reads ?path=, an absolute path in the sandbox.
func filePath(r *http.Request) (string, *Error) {
	p := r.URL.Query().Get("path")
	if p == "" {
		p = "/"
	}
	if !strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return "", errorf(http.StatusBadRequest, "path %q is not an absolute path", clip(p))
	}
	return path.Clean(p), nil
}
