package pyruntime

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"unicode/utf8"

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
	stdout, stderr, code, err := h.runner.Run(r.Context(), argv, h.baseDir, h.execTimeout, h.maxOutputBytes)
	var overLimit *OutputLimitError
	switch {
	case errors.As(err, &overLimit):
		writeJSON(w, StatusOutputTooLarge, failed(fmt.Errorf(
			"%w, so it was killed and none of its output is returned (never a part of it): raise %s, "+
				"or have the command write its output to a file and download that", err, h.outputSetting)))
		return
	case errors.Is(err, ErrTimeout):
		// Python's subprocess.TimeoutExpired, word for word.
		err = fmt.Errorf("Command '%s' timed out after %s seconds", pyList(argv), pyFloat(h.execTimeout.Seconds())) //nolint:staticcheck // Python's message
	case err != nil:
		// A program that cannot be started is reported as Python's OSError, which clients match.
		if oserr := findProgram(argv[0], h.baseDir, h.path); oserr != nil {
			err = oserr
		}
	}
	if err != nil {
		writeJSON(w, http.StatusOK, failed(err))
		return
	}
	writeExecuteResponse(w, stdout, stderr, code)
}

// writeExecuteResponse writes the ExecuteResponse of a command that ran, as writeJSON would
// write it with the output decoded by universal newlines, but streamed: the output is not copied
// into strings and an encoding buffer first, so an answer costs little memory beyond the output.
func writeExecuteResponse(w http.ResponseWriter, stdout, stderr []byte, code int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	_, _ = bw.WriteString(`{"stdout":`)
	writeText(bw, stdout)
	_, _ = bw.WriteString(`,"stderr":`)
	writeText(bw, stderr)
	_, _ = bw.WriteString(`,"exit_code":` + strconv.Itoa(code) + `}`)
	_ = bw.Flush()
}

// controlEscapes are the JSON escapes of the control characters that have no short one, as
// encoding/json writes them ("\u0000").
var controlEscapes = func() (e [0x20]string) {
	for c := range e {
		e[c] = fmt.Sprintf(`\u%04x`, c)
	}
	return e
}()

// writeText writes output as a JSON string, decoded as Python's subprocess does in text mode
// ("\r\n" and "\r" become "\n") except that each run of bytes that is not UTF-8 becomes one
// U+FFFD (where Python would fail the command), and escaped as encoding/json escapes a string
// without HTML escaping.
func writeText(w *bufio.Writer, b []byte) {
	_ = w.WriteByte('"')
	from := 0 // b[from:i] is still to be written as it is
	for i := 0; i < len(b); {
		c := b[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			i++
			continue
		}
		_, _ = w.Write(b[from:i])
		if c < utf8.RuneSelf {
			switch c {
			case '\r':
				if i+1 < len(b) && b[i+1] == '\n' {
					i++
				}
				_, _ = w.WriteString(`\n`)
			case '\n':
				_, _ = w.WriteString(`\n`)
			case '\t':
				_, _ = w.WriteString(`\t`)
			case '\b':
				_, _ = w.WriteString(`\b`)
			case '\f':
				_, _ = w.WriteString(`\f`)
			case '"':
				_, _ = w.WriteString(`\"`)
			case '\\':
				_, _ = w.WriteString(`\\`)
			default:
				_, _ = w.WriteString(controlEscapes[c])
			}
			i++
			from = i
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			for i < len(b) {
				if r, size := utf8.DecodeRune(b[i:]); r != utf8.RuneError || size != 1 {
					break
				}
				i++
			}
			_, _ = w.WriteString("\uFFFD")
		case r == '\u2028':
			_, _ = w.WriteString(`\u2028`)
			i += size
		case r == '\u2029':
			_, _ = w.WriteString(`\u2029`)
			i += size
		default:
			_, _ = w.Write(b[i : i+size])
			i += size
		}
		from = i
	}
	_, _ = w.Write(b[from:])
	_ = w.WriteByte('"')
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
