package codeinterp

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The types of E2B's execution messages: NDJSON lines of POST /execute's answer.
const (
	typeStdout             = "stdout"
	typeStderr             = "stderr"
	typeResult             = "result"
	typeError              = "error"
	typeNumberOfExecutions = "number_of_executions"
	typeEndOfExecution     = "end_of_execution"
	// typeEnd is the drivers' own frame that ends an execution; the client gets
	// typeEndOfExecution after the stderr mark too.
	typeEnd = "end"
)

// Message is one line of POST /execute's answer, as @e2b/code-interpreter parses it: stdout and
// stderr (Text, Timestamp), result (the MIME bundle: Text, HTML, Markdown, SVG, PNG and JPEG in
// base64, PDF, LaTeX, JSON, JavaScript; IsMainResult), error (Name, Value, Traceback),
// number_of_executions (ExecutionCount) and end_of_execution. Drivers write the same fields in
// their frames.
type Message struct {
	Type           string          `json:"type"`
	Text           string          `json:"text,omitempty"`
	Timestamp      string          `json:"timestamp,omitempty"`
	HTML           string          `json:"html,omitempty"`
	Markdown       string          `json:"markdown,omitempty"`
	SVG            string          `json:"svg,omitempty"`
	PNG            string          `json:"png,omitempty"`
	JPEG           string          `json:"jpeg,omitempty"`
	PDF            string          `json:"pdf,omitempty"`
	LaTeX          string          `json:"latex,omitempty"`
	JSON           json.RawMessage `json:"json,omitempty"`
	JavaScript     string          `json:"javascript,omitempty"`
	IsMainResult   *bool           `json:"is_main_result,omitempty"`
	Name           *string         `json:"name,omitempty"`
	Value          *string         `json:"value,omitempty"`
	Traceback      *string         `json:"traceback,omitempty"`
	ExecutionCount *int            `json:"execution_count,omitempty"`
}

// Context is a context as E2B's wire has it (POST and GET /contexts).
type Context struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

// ExecuteRequest is POST /execute's body.
type ExecuteRequest struct {
	Code      string            `json:"code"`
	ContextID string            `json:"context_id,omitempty"`
	Language  string            `json:"language,omitempty"`
	EnvVars   map[string]string `json:"env_vars,omitempty"`
}

// CreateContextRequest is POST /contexts' body.
type CreateContextRequest struct {
	Language string `json:"language,omitempty"`
	Cwd      string `json:"cwd,omitempty"`
}

func outputMessage(stderr bool, text []byte) Message {
	m := Message{Type: typeStdout, Text: string(text), Timestamp: time.Now().UTC().Format(time.RFC3339Nano)}
	if stderr {
		m.Type = typeStderr
	}
	return m
}

func errorMessage(name, value, traceback string) Message {
	return Message{Type: typeError, Name: &name, Value: &value, Traceback: &traceback}
}

// parseFrame reads a driver's frame: only the message types a driver writes, with only the
// fields of E2B's wire (json.Unmarshal drops others).
func parseFrame(b []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("the interpreter's driver wrote a frame that is not JSON: %w", err)
	}
	switch m.Type {
	case typeResult:
		// E2B's server shows a string result without its quotes (Python's repr 'x' is x).
		if len(m.Text) >= 2 && strings.HasPrefix(m.Text, "'") && strings.HasSuffix(m.Text, "'") {
			m.Text = m.Text[1 : len(m.Text)-1]
		}
		if m.IsMainResult == nil {
			m.IsMainResult = new(bool)
		}
		m.Timestamp, m.Name, m.Value, m.Traceback, m.ExecutionCount = "", nil, nil, nil, nil
	case typeError:
		for _, f := range []**string{&m.Name, &m.Value, &m.Traceback} {
			if *f == nil {
				*f = new(string)
			}
		}
		m = errorMessage(*m.Name, *m.Value, *m.Traceback)
	case typeNumberOfExecutions:
		if m.ExecutionCount == nil {
			return m, fmt.Errorf("the interpreter's driver wrote number_of_executions without execution_count")
		}
		m = Message{Type: m.Type, ExecutionCount: m.ExecutionCount}
	case typeEnd:
		m = Message{Type: typeEnd}
	default:
		return m, fmt.Errorf("the interpreter's driver wrote a frame of the unknown type %q", m.Type)
	}
	return m, nil
}
