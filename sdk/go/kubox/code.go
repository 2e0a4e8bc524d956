package kubox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/kubox-dev/kubox/api/contract"
)

// CodeLanguage is a language of the sandbox's code interpreter.
type CodeLanguage string

// The code interpreter's languages. Each context is one long-lived interpreter of its language.
const (
	LanguagePython     CodeLanguage = "python"
	LanguageJavaScript CodeLanguage = "javascript"
	LanguageBash       CodeLanguage = "bash"
)

// CodeContext is one interpreter of the sandbox's code interpreter: its variables, imports and
// working directory last from one RunCode to the next. The JSON names are the wire's (E2B's
// code-interpreter API, which kubox-agent serves on port 49999).
type CodeContext struct {
	// ID names the context in RunCodeOptions.Context, RestartCodeContext and RemoveCodeContext.
	ID string `json:"id"`
	// Language is the context's interpreter.
	Language CodeLanguage `json:"language"`
	// Cwd is the interpreter's working directory when it started.
	Cwd string `json:"cwd"`
}

// CodeContextOptions configure CreateCodeContext.
type CodeContextOptions struct {
	// Language is the interpreter; empty: Python.
	Language CodeLanguage
	// Cwd is the interpreter's working directory, an existing directory; empty: the agent's.
	Cwd string
}

// RunCodeOptions configure RunCode. A nil *RunCodeOptions runs Python in the default context.
type RunCodeOptions struct {
	// Language picks the default context of that language (one per sandbox, made on first use);
	// empty: Python. Set Language or Context, not both.
	Language CodeLanguage
	// Context runs the code in that context (CreateCodeContext).
	Context *CodeContext
	// Cwd, with no Context, runs the code in a context of Language started in Cwd, which this
	// Sandbox handle creates on first use and reuses for later calls with the same Language and
	// Cwd.
	Cwd string
	// Envs are set for this execution only.
	Envs map[string]string
	// Timeout, when positive, bounds the execution: when it passes, the SDK closes the stream,
	// the interpreter is interrupted, and the context keeps its state. RunCode returns an error
	// that wraps context.DeadlineExceeded.
	Timeout time.Duration
	// OnStdout and OnStderr receive output as the code prints it (a line, or what a flush
	// wrote), in order, while RunCode runs.
	OnStdout, OnStderr func(text string)
	// OnResult receives each result as it comes (a displayed value before the main result).
	OnResult func(CodeResult)
}

// CodeResult is one result of an execution, as a MIME bundle: every representation the value
// has. The JSON names are the wire's.
type CodeResult struct {
	// Text is text/plain (Python's repr, Node's inspect).
	Text string `json:"text,omitempty"`
	// HTML, Markdown, SVG, LaTeX and JavaScript are those representations' source.
	HTML       string `json:"html,omitempty"`
	Markdown   string `json:"markdown,omitempty"`
	SVG        string `json:"svg,omitempty"`
	LaTeX      string `json:"latex,omitempty"`
	JavaScript string `json:"javascript,omitempty"`
	// PNG, JPEG and PDF are the image's (or document's) bytes (base64 on the wire).
	PNG  []byte `json:"png,omitempty"`
	JPEG []byte `json:"jpeg,omitempty"`
	PDF  string `json:"pdf,omitempty"`
	// JSON is application/json.
	JSON json.RawMessage `json:"json,omitempty"`
	// IsMainResult is true for the value of the code's last expression; false for what the code
	// displayed on the way (a matplotlib figure, display()).
	IsMainResult bool `json:"is_main_result,omitempty"`
}

// ExecutionError is an exception the code raised (the interpreter and the context live on).
type ExecutionError struct {
	// Name is the exception's type, e.g. ZeroDivisionError.
	Name string `json:"name"`
	// Value is its message.
	Value string `json:"value"`
	// Traceback is the interpreter's traceback, as it prints it.
	Traceback string `json:"traceback"`
}

// Error makes an ExecutionError an error: "Name: Value".
func (e *ExecutionError) Error() string { return e.Name + ": " + e.Value }

// CodeLogs is what an execution printed, in the pieces it came in.
type CodeLogs struct {
	Stdout, Stderr []string
}

// What RunCode keeps of an execution, so that code printing without end cannot exhaust the
// caller's memory: the first DefaultCodeOutputBytes of stdout and of stderr each (as much as the
// agent keeps of a command's output by default), and results while their total (as the wire
// sends them, images in base64) stays within DefaultCodeResultBytes, as large as the one result
// the code interpreter sends at most. A result that does not fit is dropped whole, never cut. What
// is not kept is marked on the Execution (StdoutTruncated, StderrTruncated, ResultsTruncated);
// the callbacks (OnStdout, OnStderr, OnResult) still get everything, as it comes. The Python and
// TypeScript SDKs keep the same (sdk/testdata/contract-vectors.json).
const (
	DefaultCodeOutputBytes = 1 << 20
	DefaultCodeResultBytes = 32 << 20
)

// Execution is the outcome of RunCode.
type Execution struct {
	// Results are the execution's results in order; the main result (IsMainResult) is the last
	// expression's value.
	Results []CodeResult
	// Logs is what the code printed.
	Logs CodeLogs
	// Error is the exception the code raised; nil when it ran to the end.
	Error *ExecutionError
	// ExecutionCount is the context's count of executions so far, this one included.
	ExecutionCount int
	// StdoutTruncated and StderrTruncated say that the stream was longer than what Logs keeps
	// (DefaultCodeOutputBytes); ResultsTruncated that results were dropped
	// (DefaultCodeResultBytes).
	StdoutTruncated, StderrTruncated, ResultsTruncated bool
}

// Text is the main result's text, or "" when there is none.
func (e *Execution) Text() string {
	for _, r := range e.Results {
		if r.IsMainResult {
			return r.Text
		}
	}
	return ""
}

// codeMessage is one NDJSON line of POST /execute's answer: its type and the fields of the types
// that are not results (a result is read again as a CodeResult).
type codeMessage struct {
	Type           string `json:"type"`
	Text           string `json:"text"`
	ExecutionCount int    `json:"execution_count"`
	ExecutionError
}

// executeRequest is POST /execute's body.
type executeRequest struct {
	Code      string            `json:"code"`
	ContextID string            `json:"context_id,omitempty"`
	Language  string            `json:"language,omitempty"`
	EnvVars   map[string]string `json:"env_vars,omitempty"`
}

// createContextRequest is POST /contexts' body.
type createContextRequest struct {
	Language string `json:"language,omitempty"`
	Cwd      string `json:"cwd,omitempty"`
}

// RunCode runs code in one of the sandbox's code-interpreter contexts and returns its results,
// output and error. State (variables, imports, the working directory) stays in the context for
// the next call. An exception in the code is Execution.Error, not an error: RunCode's error means
// the code could not run (the context does not exist, the sandbox is not reachable, the timeout
// passed).
func (s *Sandbox) RunCode(ctx context.Context, code string, opts *RunCodeOptions) (*Execution, error) {
	if opts == nil {
		opts = &RunCodeOptions{}
	}
	req := executeRequest{Code: code, Language: string(opts.Language), EnvVars: opts.Envs}
	switch {
	case opts.Context != nil && (opts.Language != "" || opts.Cwd != ""):
		return nil, fmt.Errorf("kubox: RunCode in %s: set RunCodeOptions.Context or Language and Cwd, not both "+
			"(a context has its own language and working directory)", s.object())
	case opts.Context != nil:
		req.ContextID, req.Language = opts.Context.ID, ""
	case opts.Cwd != "":
		c, err := s.cwdContext(ctx, opts.Language, opts.Cwd)
		if err != nil {
			return nil, err
		}
		req.ContextID, req.Language = c.ID, ""
	}
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	resp, err := s.codeCall(ctx, http.MethodPost, "/execute", req)
	if err != nil {
		return nil, s.codeError(err, opts.Timeout)
	}
	defer func() { _ = resp.Body.Close() }()
	exec, err := readExecution(resp.Body, opts)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return exec, s.codeError(err, opts.Timeout)
	}
	return exec, nil
}

// codeError names the sandbox in err, and says what a timeout did.
func (s *Sandbox) codeError(err error, timeout time.Duration) error {
	if errors.Is(err, context.DeadlineExceeded) && timeout > 0 {
		return fmt.Errorf("kubox: RunCode in %s did not end within its timeout (%s): the code interpreter interrupted it and the "+
			"context keeps its state; raise RunCodeOptions.Timeout for longer code: %w", s.object(), timeout, err)
	}
	return wrapCallError(err, "code interpreter of "+s.object())
}

// readExecution reads POST /execute's NDJSON answer into an Execution, calling opts' callbacks
// as messages come. The answer must end with end_of_execution.
func readExecution(body io.Reader, opts *RunCodeOptions) (*Execution, error) {
	exec := &Execution{}
	var kept codeKept
	dec := json.NewDecoder(body)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return exec, fmt.Errorf("reading the code interpreter's answer (it ended before end_of_execution): %w", err)
		}
		var m codeMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return exec, fmt.Errorf("the code interpreter answered a line that is not a message: %w", err)
		}
		switch m.Type {
		case "stdout":
			exec.Logs.Stdout = keepText(exec.Logs.Stdout, m.Text, &kept.stdout, &exec.StdoutTruncated)
			call(opts.OnStdout, m.Text)
		case "stderr":
			exec.Logs.Stderr = keepText(exec.Logs.Stderr, m.Text, &kept.stderr, &exec.StderrTruncated)
			call(opts.OnStderr, m.Text)
		case "result":
			var r CodeResult
			if err := json.Unmarshal(raw, &r); err != nil {
				return exec, fmt.Errorf("the code interpreter answered a result that is not E2B's MIME bundle: %w", err)
			}
			if kept.results+len(raw) <= DefaultCodeResultBytes {
				kept.results += len(raw)
				exec.Results = append(exec.Results, r)
			} else {
				exec.ResultsTruncated = true
			}
			call(opts.OnResult, r)
		case "error":
			e := m.ExecutionError
			exec.Error = &e
		case "number_of_executions":
			exec.ExecutionCount = m.ExecutionCount
		case "end_of_execution":
			return exec, nil
		}
	}
}

// codeKept counts the bytes of an Execution's logs and results.
type codeKept struct{ stdout, stderr, results int }

// keepText appends what fits of text to pieces, *n bytes of them kept so far, within
// DefaultCodeOutputBytes: a piece that does not fit is cut (at a character's start), and
// *truncated set.
func keepText(pieces []string, text string, n *int, truncated *bool) []string {
	room := DefaultCodeOutputBytes - *n
	if len(text) > room {
		*truncated = true
		for room > 0 && !utf8.RuneStart(text[room]) {
			room--
		}
		text = text[:max(room, 0)]
	}
	if text == "" {
		return pieces
	}
	*n += len(text)
	return append(pieces, text)
}

func call[T any](fn func(T), v T) {
	if fn != nil {
		fn(v)
	}
}

// cwdContext returns the context of language started in cwd that this handle made, making it on
// first use.
func (s *Sandbox) cwdContext(ctx context.Context, language CodeLanguage, cwd string) (*CodeContext, error) {
	if language == "" {
		language = LanguagePython
	}
	key := string(language) + "\x00" + cwd
	s.mu.Lock()
	c := s.cwdContexts[key]
	s.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := s.CreateCodeContext(ctx, &CodeContextOptions{Language: language, Cwd: cwd})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev := s.cwdContexts[key]; prev != nil {
		return prev, nil
	}
	if s.cwdContexts == nil {
		s.cwdContexts = map[string]*CodeContext{}
	}
	s.cwdContexts[key] = c
	return c, nil
}

// CreateCodeContext starts a new context (an interpreter of its own; nil opts: Python in the
// agent's working directory).
func (s *Sandbox) CreateCodeContext(ctx context.Context, opts *CodeContextOptions) (*CodeContext, error) {
	if opts == nil {
		opts = &CodeContextOptions{}
	}
	var c CodeContext
	if err := s.codeJSON(ctx, http.MethodPost, "/contexts", createContextRequest{Language: string(opts.Language), Cwd: opts.Cwd}, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// ListCodeContexts returns the sandbox's contexts, the default ones of each language used so far
// among them.
func (s *Sandbox) ListCodeContexts(ctx context.Context) ([]CodeContext, error) {
	var list []CodeContext
	if err := s.codeJSON(ctx, http.MethodGet, "/contexts", nil, &list); err != nil {
		return nil, err
	}
	return list, nil
}

// RestartCodeContext stops c's interpreter; the next RunCode in c starts a new one, with none of
// the old state (an execution running in it ends with an error).
func (s *Sandbox) RestartCodeContext(ctx context.Context, c *CodeContext) error {
	return s.codeJSON(ctx, http.MethodPost, "/contexts/"+url.PathEscape(c.ID)+"/restart", nil, nil)
}

// RemoveCodeContext stops c's interpreter and removes c.
func (s *Sandbox) RemoveCodeContext(ctx context.Context, c *CodeContext) error {
	err := s.codeJSON(ctx, http.MethodDelete, "/contexts/"+url.PathEscape(c.ID), nil, nil)
	if err == nil {
		s.mu.Lock()
		for k, v := range s.cwdContexts {
			if v.ID == c.ID {
				delete(s.cwdContexts, k)
			}
		}
		s.mu.Unlock()
	}
	return err
}

// codeJSON makes a call of the code interpreter's context API, decoding the answer into out.
func (s *Sandbox) codeJSON(ctx context.Context, method, path string, in, out any) error {
	resp, err := s.codeCall(ctx, method, path, in)
	if err != nil {
		return wrapCallError(err, "code interpreter of "+s.object())
	}
	defer func() { _ = resp.Body.Close() }()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("kubox: %s %s of the code interpreter of %s answered JSON that is not E2B's: %w", method, path, s.object(), err)
	}
	return nil
}

// codeCall sends a request to the sandbox's code interpreter (kubox-agent's port 49999): through
// the router, naming the port with X-Sandbox-Port (the router adds the sandbox's agent token, as
// for the agent's own port); directly, at the Pod IP with the agent token. An answer of 400 or
// more is an *APIError.
func (s *Sandbox) codeCall(ctx context.Context, method, path string, in any) (*http.Response, error) {
	ep, err := s.endpoint(ctx)
	if err != nil {
		return nil, err
	}
	viaRouter := s.attached != nil || s.c.opts.Connection != ConnectDirect
	if !viaRouter {
		ep.base = directURL(s.Object().Status.PodIPs[0], contract.E2BCodeInterpreterPort)
	}
	var body io.Reader = http.NoBody
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, ep.base+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if viaRouter {
		req.Header.Set(contract.SandboxPortHeader, strconv.Itoa(contract.E2BCodeInterpreterPort))
	}
	resp, err := ep.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		return nil, errorFromResponse(resp, "code interpreter of "+s.object())
	}
	return resp, nil
}
