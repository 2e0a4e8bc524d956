package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// run_code runs code in the sandbox's code interpreter (kubox-agent's E2B code-interpreter port),
// in the default context of its language: one per sandbox, so per claim and language, kept by
// the agent between tool calls (and across restarts of this server) until the claim ends.

type codeIn struct {
	Claim          string            `json:"claim,omitempty" jsonschema:"the claim claim_sandbox returned (optional with a claim token)"`
	Namespace      string            `json:"namespace,omitempty" jsonschema:"the claim's namespace; default: the server's namespace"`
	Language       string            `json:"language,omitempty" jsonschema:"python (default), javascript (or node) or bash"`
	Code           string            `json:"code" jsonschema:"the code; variables, imports and the working directory stay for the next run_code of this claim and language"`
	Env            map[string]string `json:"env,omitempty" jsonschema:"environment variables for this run only"`
	TimeoutSeconds int               `json:"timeout_seconds,omitempty" jsonschema:"interrupt the code after this many seconds (its state is kept); default 300"`
}

type codeResult struct {
	Text         string `json:"text,omitempty" jsonschema:"text/plain"`
	HTML         string `json:"html,omitempty"`
	Markdown     string `json:"markdown,omitempty"`
	SVG          string `json:"svg,omitempty"`
	LaTeX        string `json:"latex,omitempty"`
	JSON         string `json:"json,omitempty" jsonschema:"application/json, as JSON text"`
	Image        string `json:"image,omitempty" jsonschema:"image/png or image/jpeg: the image is returned as image content of this call"`
	IsMainResult bool   `json:"is_main_result,omitempty" jsonschema:"the value of the code's last expression"`
}

type codeError struct {
	Name      string `json:"name" jsonschema:"the exception's type, e.g. ZeroDivisionError"`
	Value     string `json:"value"`
	Traceback string `json:"traceback"`
}

type codeOut struct {
	Results         []codeResult `json:"results"`
	Stdout          string       `json:"stdout"`
	Stderr          string       `json:"stderr"`
	StdoutTruncated bool         `json:"stdout_truncated,omitempty" jsonschema:"stdout was longer than returned (all of it was sent as progress)"`
	StderrTruncated bool         `json:"stderr_truncated,omitempty"`
	// ResultsTruncated: the results' text representations together are bounded like stdout.
	ResultsTruncated bool       `json:"results_truncated,omitempty" jsonschema:"results were longer than returned: their text representations are cut, or results were dropped"`
	Error            *codeError `json:"error,omitempty" jsonschema:"the exception the code raised; the context lives on"`
	ExecutionCount   int        `json:"execution_count" jsonschema:"executions so far in this claim's context of the language"`
}

// codeLanguages are run_code's languages, by the names it accepts.
var codeLanguages = map[string]kubox.CodeLanguage{
	"":           kubox.LanguagePython,
	"python":     kubox.LanguagePython,
	"javascript": kubox.LanguageJavaScript,
	"js":         kubox.LanguageJavaScript,
	"node":       kubox.LanguageJavaScript,
	"bash":       kubox.LanguageBash,
}

func (s *Server) runCode(ctx context.Context, req *mcp.CallToolRequest, in codeIn) (*mcp.CallToolResult, codeOut, error) {
	lang, ok := codeLanguages[strings.ToLower(in.Language)]
	if !ok {
		return nil, codeOut{}, fmt.Errorf("language %q is not one of python, bash, node (javascript); for anything else use run_command", in.Language)
	}
	sb, err := s.sandbox(ctx, req, in.Namespace, in.Claim)
	if err != nil {
		return nil, codeOut{}, err
	}
	stdout, stderr := &capped{max: s.cfg.MaxOutputBytes}, &capped{max: s.cfg.MaxOutputBytes}
	prog := newProgress(ctx, req)
	progOut, progErr := prog.stream("stdout"), prog.stream("stderr")
	exec, err := sb.RunCode(ctx, in.Code, &kubox.RunCodeOptions{
		Language: lang, Envs: in.Env, Timeout: timeout(in.TimeoutSeconds),
		OnStdout: func(text string) { _, _ = stdout.Write([]byte(text)); _, _ = progOut.Write([]byte(text)) },
		OnStderr: func(text string) { _, _ = stderr.Write([]byte(text)); _, _ = progErr.Write([]byte(text)) },
	})
	if err != nil {
		return nil, codeOut{}, err
	}
	out := codeOut{Results: []codeResult{}, Stdout: stdout.String(), Stderr: stderr.String(),
		StdoutTruncated: stdout.truncated, StderrTruncated: stderr.truncated, ExecutionCount: exec.ExecutionCount}
	if e := exec.Error; e != nil {
		// Bounded as a stream is: a traceback can be as large as a result.
		out.Error = &codeError{Name: e.Name, Value: cutText(e.Value, s.cfg.MaxOutputBytes), Traceback: cutText(e.Traceback, s.cfg.MaxOutputBytes)}
	}
	var images []mcp.Content
	out.Results, images, out.ResultsTruncated = codeResults(exec, s.cfg.MaxOutputBytes)
	if len(images) == 0 {
		return nil, out, nil
	}
	// With content of its own, the result carries the structured output's JSON as its first text
	// content, as the SDK does for results without content.
	text, err := json.Marshal(out)
	if err != nil {
		return nil, codeOut{}, err
	}
	return &mcp.CallToolResult{Content: append([]mcp.Content{&mcp.TextContent{Text: string(text)}}, images...)}, out, nil
}

// codeResults are exec's results as run_code returns them, with their images as content. Their
// text representations, all together, are bounded as stdout is (maxText, MaxOutputBytes), cut at
// a character; images as the SDK keeps them (kubox.DefaultCodeResultBytes). truncated says that
// something was cut or dropped.
func codeResults(exec *kubox.Execution, maxText int) (results []codeResult, images []mcp.Content, truncated bool) {
	texts := &capped{max: maxText}
	take := func(v string) string {
		before := texts.buf.Len()
		_, _ = texts.Write([]byte(v))
		return strings.ToValidUTF8(string(texts.buf.Bytes()[before:]), "")
	}
	results = []codeResult{}
	for _, r := range exec.Results {
		cr := codeResult{Text: take(r.Text), HTML: take(r.HTML), Markdown: take(r.Markdown), SVG: take(r.SVG), LaTeX: take(r.LaTeX),
			JSON: take(string(r.JSON)), IsMainResult: r.IsMainResult}
		switch {
		case len(r.PNG) > 0:
			cr.Image = "image/png"
			images = append(images, &mcp.ImageContent{Data: r.PNG, MIMEType: cr.Image})
		case len(r.JPEG) > 0:
			cr.Image = "image/jpeg"
			images = append(images, &mcp.ImageContent{Data: r.JPEG, MIMEType: cr.Image})
		}
		results = append(results, cr)
	}
	return results, images, texts.truncated || exec.ResultsTruncated
}

// cutText is the first max bytes of v, cut at a character.
func cutText(v string, max int) string {
	c := &capped{max: max}
	_, _ = c.Write([]byte(v))
	return strings.ToValidUTF8(c.String(), "")
}
