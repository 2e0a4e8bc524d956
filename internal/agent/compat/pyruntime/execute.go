package pyruntime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/kubox-dev/kubox/internal/agent/compat/shlex"
)

// ExecuteResponse is the body of every answer of POST /execute.
type ExecuteResponse struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
}

// execute runs {"command": str}. Like python-runtime it answers 200 whatever happens; a body
// over the limit gets 413, with the same shape.
func (h *Handler) execute(w http.ResponseWriter, r *http.Request) {
	command, err := h.readCommand(w, r)
	if err != nil {
		status := http.StatusOK
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			status = http.StatusRequestEntityTooLarge
			err = fmt.Errorf("the request body exceeds the limit of %d bytes", tooLarge.Limit)
		}
		writeJSON(w, status, failed(err))
		return
	}
	argv, err := shlex.Split(command)
	if err != nil {
		writeJSON(w, http.StatusOK, failed(err))
		return
	}
	if len(argv) == 0 {
		writeJSON(w, http.StatusOK, failed(errors.New("the command is empty")))
		return
	}
	stdout, stderr, code, err := h.runner.Run(r.Context(), argv, h.baseDir, h.execTimeout)
	if errors.Is(err, ErrTimeout) {
		// Python's subprocess.TimeoutExpired, word for word.
		err = fmt.Errorf("Command '%s' timed out after %s seconds", pyList(argv), pyFloat(h.execTimeout.Seconds())) //nolint:staticcheck // Python's message
	}
	if err != nil {
		writeJSON(w, http.StatusOK, failed(err))
		return
	}
	writeJSON(w, http.StatusOK, ExecuteResponse{
		Stdout:   universalNewlines(stdout),
		Stderr:   universalNewlines(stderr),
		ExitCode: code,
	})
}

func failed(err error) ExecuteResponse {
	return ExecuteResponse{Stderr: "Failed to execute command: " + err.Error(), ExitCode: 1}
}

// readCommand decodes the body: one JSON object with a string "command"; other members are
// ignored, and a repeated member counts with its last value, as pydantic reads it.
func (h *Handler) readCommand(w http.ResponseWriter, r *http.Request) (string, error) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, h.maxJSONBytes))
	var body map[string]json.RawMessage
	if err := dec.Decode(&body); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return "", err
		}
		return "", fmt.Errorf(`the request body is not a JSON object {"command": "..."}: %w`, err)
	}
	if err := dec.Decode(new(json.RawMessage)); !errors.Is(err, io.EOF) {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return "", err
		}
		return "", errors.New(`the request body has more after its JSON object; send one object {"command": "..."}`)
	}
	if body == nil {
		return "", errors.New(`the request body is null; send {"command": "..."}`)
	}
	raw, ok := body["command"]
	if !ok {
		return "", errors.New(`the request body has no "command"; send {"command": "..."}`)
	}
	var command string
	if !bytes.HasPrefix(raw, []byte(`"`)) || json.Unmarshal(raw, &command) != nil {
		return "", errors.New(`"command" is not a string; send {"command": "..."}`)
	}
	return command, nil
}

// universalNewlines decodes output as Python's subprocess does in text mode: "\r\n" and "\r"
// become "\n". Bytes that are not UTF-8 become U+FFFD (where Python would fail the command).
func universalNewlines(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}
