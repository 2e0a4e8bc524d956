package kubox

import (
	"encoding/json"
	"strings"
	"testing"
)

// codeAnswer is POST /execute's NDJSON answer of msgs, ended by end_of_execution.
func codeAnswer(t *testing.T, msgs ...map[string]any) *strings.Reader {
	t.Helper()
	var b strings.Builder
	for _, m := range append(msgs, map[string]any{"type": "end_of_execution"}) {
		line, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return strings.NewReader(b.String())
}

// TestRunCodeKeepsBoundedOutput: code that prints more than DefaultCodeOutputBytes (or displays
// results past DefaultCodeResultBytes) cannot grow the Execution without end: what is kept stops
// at the bound, cut at a character, the Execution says so, and the callbacks still get every
// piece.
func TestRunCodeKeepsBoundedOutput(t *testing.T) {
	piece := strings.Repeat("é", 100<<10) // 200 KiB, two bytes a character
	pieces := DefaultCodeOutputBytes/len(piece) + 3
	var msgs []map[string]any
	for range pieces {
		msgs = append(msgs, map[string]any{"type": "stdout", "text": piece}, map[string]any{"type": "stderr", "text": "short\n"})
	}
	png := strings.Repeat("A", 8<<20) // base64 of an image
	results := DefaultCodeResultBytes/len(png) + 2
	for range results {
		msgs = append(msgs, map[string]any{"type": "result", "png": png})
	}
	msgs = append(msgs, map[string]any{"type": "result", "text": "42", "is_main_result": true})
	var seen, seenResults int
	exec, err := readExecution(codeAnswer(t, msgs...), &RunCodeOptions{
		OnStdout: func(s string) { seen += len(s) },
		OnResult: func(CodeResult) { seenResults++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	out := strings.Join(exec.Logs.Stdout, "")
	if len(out) > DefaultCodeOutputBytes || len(out) < DefaultCodeOutputBytes-1 || !exec.StdoutTruncated {
		t.Errorf("kept %d bytes of stdout (truncated %v); want %d, marked truncated", len(out), exec.StdoutTruncated, DefaultCodeOutputBytes)
	}
	if strings.Trim(out, "é") != "" {
		t.Errorf("the kept stdout was cut inside a character")
	}
	if exec.StderrTruncated || len(exec.Logs.Stderr) != pieces {
		t.Errorf("stderr, within its bound: %d pieces kept (truncated %v); want all %d", len(exec.Logs.Stderr), exec.StderrTruncated, pieces)
	}
	if seen != pieces*len(piece) || seenResults != results+1 {
		t.Errorf("OnStdout got %d bytes, OnResult %d results; want every one: %d, %d", seen, seenResults, pieces*len(piece), results+1)
	}
	if !exec.ResultsTruncated || len(exec.Results) > DefaultCodeResultBytes/len(png)+1 || exec.Text() != "42" {
		t.Errorf("kept %d results (truncated %v, main %q); want at most %d images and the main result 42, marked truncated",
			len(exec.Results), exec.ResultsTruncated, exec.Text(), DefaultCodeResultBytes/len(png))
	}
}
