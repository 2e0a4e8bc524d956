package ui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kubox-dev/kubox/api/contract"
)

// The Code tab runs code in the sandbox's code interpreter, which kubox-agent serves on the
// code interpreter's port (contract.E2BCodeInterpreterPort, E2B's wire: docs/e2b.md) with the
// sandbox's agent token, as the terminal reaches the agent's own port: whoever may open a
// terminal (create on sandboxes/connect) may run code, and nobody else reaches the sandbox.
const (
	// maxCodeBytes bounds the JSON body of a run: the code box's program.
	maxCodeBytes = 1 << 20
	// maxCodeLine bounds one NDJSON message from the interpreter: a result is at most 32 MiB
	// (the agent replaces a larger one with an error), base64 grows an image by a third.
	maxCodeLine = 48 << 20
	// maxCodeError bounds an interpreter's error answer read into a message.
	maxCodeError = 4 << 10
)

// codeLanguages are the code interpreter's languages the page offers.
var codeLanguages = []string{"python", "javascript", "bash"}

// contextID is what a code interpreter's context ID may be before it goes into the agent's URL.
var contextID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// codeRun is the body of POST .../code: the code and either the context that keeps the page's
// state or a language (its default context).
type codeRun struct {
	Code      string `json:"code"`
	Language  string `json:"language,omitempty"`
	ContextID string `json:"context_id,omitempty"`
}

// codeContext is a context: what the page creates (language) and the interpreter answers.
type codeContext struct {
	ID       string `json:"id,omitempty"`
	Language string `json:"language"`
	Cwd      string `json:"cwd,omitempty"`
}

// runCode runs the body's code in the sandbox's code interpreter and streams its NDJSON back,
// one message a line, each flushed as it comes.
func (h *Handler) runCode(ctx context.Context, w http.ResponseWriter, r *http.Request, v *viewer) *Error {
	var run codeRun
	if herr := decodeCode(w, r, &run); herr != nil {
		return herr
	}
	if run.ContextID != "" && run.Language != "" {
		return errorf(http.StatusBadRequest, "a run names either a context_id or a language, not both")
	}
	if herr := checkCodeTarget(run.ContextID, run.Language); herr != nil {
		return herr
	}
	res, herr := h.callCode(ctx, r, v, http.MethodPost, "/execute", run)
	if herr != nil {
		return herr
	}
	defer func() { _ = res.Body.Close() }()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	streamCode(w, res.Body)
	return nil
}

// createCodeContext creates a context of the body's language: the page keeps one per language.
func (h *Handler) createCodeContext(ctx context.Context, w http.ResponseWriter, r *http.Request, v *viewer) *Error {
	var c codeContext
	if herr := decodeCode(w, r, &c); herr != nil {
		return herr
	}
	if c.Language == "" {
		c.Language = "python"
	}
	if herr := checkCodeTarget("", c.Language); herr != nil {
		return herr
	}
	res, herr := h.callCode(ctx, r, v, http.MethodPost, "/contexts", codeContext{Language: c.Language})
	if herr != nil {
		return herr
	}
	defer func() { _ = res.Body.Close() }()
	var made codeContext
	if err := json.NewDecoder(io.LimitReader(res.Body, maxCodeError)).Decode(&made); err != nil || !contextID.MatchString(made.ID) {
		return errorf(http.StatusBadGateway, "the code interpreter of the sandbox answered a context that is not E2B's {id, language, cwd} (%v)", err)
	}
	writeJSON(w, http.StatusOK, made)
	return nil
}

// restartCodeContext restarts context {id}: its interpreter is stopped, the next run starts a
// new one without the old state.
func (h *Handler) restartCodeContext(ctx context.Context, w http.ResponseWriter, r *http.Request, v *viewer) *Error {
	id := r.PathValue("id")
	if herr := checkCodeTarget(id, ""); herr != nil {
		return herr
	}
	res, herr := h.callCode(ctx, r, v, http.MethodPost, "/contexts/"+url.PathEscape(id)+"/restart", nil)
	if herr != nil {
		return herr
	}
	_ = res.Body.Close()
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "restarted": true})
	return nil
}

// decodeCode reads a code tab's JSON body, at most maxCodeBytes.
func decodeCode(w http.ResponseWriter, r *http.Request, v any) *Error {
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxCodeBytes)).Decode(v)
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return errorf(http.StatusRequestEntityTooLarge, "the code is more than the dashboard's limit of %d bytes; "+
			"upload a larger program in Files and run it from there", int64(maxCodeBytes))
	}
	if err != nil {
		return errorf(http.StatusBadRequest, `the body is not {"code": "...", "language" or "context_id": "..."}: %v`, err)
	}
	return nil
}

// checkCodeTarget checks a context ID and a language the page sent (either may be empty).
func checkCodeTarget(id, language string) *Error {
	if id != "" && !contextID.MatchString(id) {
		return errorf(http.StatusBadRequest, "%q is not a code interpreter context ID (letters, digits, - and _)", clip(id))
	}
	if language != "" && !slices.Contains(codeLanguages, language) {
		return errorf(http.StatusBadRequest, "the dashboard runs %s, not %q", strings.Join(codeLanguages, ", "), clip(language))
	}
	return nil
}

// callCode authorizes the viewer to connect to the sandbox, then sends method path (with body
// as JSON, when not nil) to its code interpreter with the agent token. An answer other than 200
// is the dashboard's error.
func (h *Handler) callCode(ctx context.Context, r *http.Request, v *viewer, method, path string, body any) (*http.Response, *Error) {
	a, herr := h.agentFor(ctx, r, v)
	if herr != nil {
		return nil, herr
	}
	// The use of the sandbox lasts as long as the request: a run's stream included.
	context.AfterFunc(ctx, a.Done)
	base, err := codeURL(a.URL, h.codePort)
	if err != nil {
		return nil, errorf(http.StatusBadGateway, "the router gave the sandbox's agent the address %q: %v", a.URL, err)
	}
	var payload io.Reader = http.NoBody
	if body != nil {
		b, _ := json.Marshal(body)
		payload = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, payload)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "%v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(contract.AuthorizationHeader, contract.BearerScheme+" "+a.Token)
	res, err := h.agents.Do(req)
	if err != nil {
		return nil, errorf(http.StatusBadGateway, "reaching the sandbox's code interpreter (port %d): %v; kubox-agent serves it "+
			"unless it runs with --code-interpreter-port=0", h.codePort, err)
	}
	if res.StatusCode == http.StatusOK {
		return res, nil
	}
	defer func() { _ = res.Body.Close() }()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, maxCodeError))
	code := http.StatusBadGateway
	if res.StatusCode == http.StatusBadRequest || res.StatusCode == http.StatusNotFound {
		code = res.StatusCode
	}
	return nil, errorf(code, "the sandbox's code interpreter answered %s %s with %d: %s", method, path, res.StatusCode,
		clip(strings.TrimSpace(string(msg))))
}

// codeURL is the base URL of the code interpreter beside the agent at agentURL: the same host,
// the code interpreter's port.
func codeURL(agentURL string, port int) (string, error) {
	u, err := url.Parse(agentURL)
	if err != nil {
		return "", err
	}
	if u.Hostname() == "" {
		return "", errors.New("no host")
	}
	return "http://" + net.JoinHostPort(u.Hostname(), strconv.Itoa(port)), nil
}

// streamCode copies the interpreter's NDJSON to w a message at a time, flushing each. Only
// JSON lines pass: a line that is not JSON, or longer than maxCodeLine, ends the stream with
// an error message the page shows. What a message says is the sandbox's, and the page treats
// it as hostile (docs/dashboard.md).
func streamCode(w http.ResponseWriter, body io.Reader) {
	rc := http.NewResponseController(w)
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxCodeLine)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			writeCodeError(w, "StreamError", "the code interpreter sent a line that is not JSON; the rest of the run's output is not shown")
			return
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return
		}
		_ = rc.Flush()
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		writeCodeError(w, "OutputTooLarge", "a message of the code interpreter is more than the dashboard's limit of "+
			strconv.Itoa(maxCodeLine>>20)+" MiB; the rest of the run's output is not shown")
	case err != nil:
		writeCodeError(w, "StreamError", "reading the code interpreter's output: "+err.Error())
	}
}

// writeCodeError ends a stream with an error message of the interpreter's kind.
func writeCodeError(w http.ResponseWriter, name, value string) {
	b, _ := json.Marshal(map[string]string{"type": "error", "name": name, "value": value, "traceback": ""})
	_, _ = w.Write(append(b, '\n'))
	_ = http.NewResponseController(w).Flush()
}
