package mcpserver

import (
	"strings"
	"testing"

	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// TestRunCodeResultsAreBounded: run_code returns results' text bounded as its stdout is
// (MaxOutputBytes, all results together), cut at a character and marked results_truncated, so a
// value whose repr is huge cannot flood the model's context; the main result stays, and images
// stay image content.
func TestRunCodeResultsAreBounded(t *testing.T) {
	const max = 1000
	exec := &kubox.Execution{Results: []kubox.CodeResult{
		{HTML: strings.Repeat("<p>é</p>", 100)}, // 900 bytes
		{PNG: []byte("\x89PNG"), Text: "<Figure>"},
		{Text: strings.Repeat("é", 5000), IsMainResult: true},
	}}
	results, images, truncated := codeResults(exec, max)
	var n int
	for _, r := range results {
		n += len(r.Text) + len(r.HTML) + len(r.Markdown) + len(r.SVG) + len(r.LaTeX) + len(r.JSON)
	}
	if n > max || !truncated {
		t.Errorf("results carry %d bytes of text (truncated %v); want at most %d, marked truncated", n, truncated, max)
	}
	if len(results) != 3 || !results[2].IsMainResult || results[2].Text == "" || strings.Trim(results[2].Text, "é") != "" {
		t.Errorf("results %+v; want all three, the main one cut at a character", results)
	}
	if len(images) != 1 || results[1].Image != "image/png" {
		t.Errorf("images %v; want the PNG as image content", images)
	}

	small := &kubox.Execution{Results: []kubox.CodeResult{{Text: "42", IsMainResult: true}}}
	if results, _, truncated := codeResults(small, max); truncated || results[0].Text != "42" {
		t.Errorf("a small result: %+v, truncated %v; want 42 whole", results, truncated)
	}
	if _, _, truncated := codeResults(&kubox.Execution{ResultsTruncated: true}, max); !truncated {
		t.Errorf("results the SDK dropped are not marked results_truncated")
	}
}

// TestCutTextKeepsWholeCharacters: run_code's error value and traceback are cut with cutText (to
// MaxOutputBytes each), never inside a character.
func TestCutTextKeepsWholeCharacters(t *testing.T) {
	if got := cutText(strings.Repeat("é", 1000), 101); len(got) != 100 || strings.Trim(got, "é") != "" {
		t.Errorf("cutText of 2000 bytes to 101 = %d bytes %q; want 100, whole characters", len(got), got)
	}
	if got := cutText("short", 101); got != "short" {
		t.Errorf("cutText(short) = %q", got)
	}
}
