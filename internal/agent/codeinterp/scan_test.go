package codeinterp

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestScanner: text passes on as it comes, frames and marks are found whatever the chunking
// (a marker or a UTF-8 character split between reads), and text without the nonce is text.
func TestScanner(t *testing.T) {
	const nonce = "n0nce"
	rs := string(rune(recordSeparator))
	cases := map[string]struct {
		frames bool
		chunks []string
		want   []string
	}{
		"text and a frame":          {frames: true, chunks: []string{"hi\n" + rs + nonce + `{"type":"end"}` + "\n"}, want: []string{"text:hi\n", `frame:{"type":"end"}`}},
		"marker split across reads": {frames: true, chunks: []string{"a" + rs + "n0", "nce{\"x\":1", "}\nb"}, want: []string{"text:a", `frame:{"x":1}`, "text:b"}},
		"text right before a frame": {frames: true, chunks: []string{"no newline" + rs + nonce + "{}\n"}, want: []string{"text:no newline", "frame:{}"}},
		"forged without the nonce":  {frames: true, chunks: []string{rs + `{"type":"end"}` + "\n"}, want: []string{"text:" + rs + `{"type":"end"}` + "\n"}},
		"forged with another nonce": {frames: true, chunks: []string{rs + "other" + `{}` + "\n"}, want: []string{"text:" + rs + "other{}\n"}},
		"UTF-8 split across reads":  {frames: true, chunks: []string{"caf\xc3", "\xa9!"}, want: []string{"text:caf", "text:\u00e9!"}},
		"stderr mark":               {chunks: []string{"oops\n" + rs + nonce + "\n", "late"}, want: []string{"text:oops\n", "mark", "text:late"}},
		"stderr marker split":       {chunks: []string{"x" + rs + nonce, "\n"}, want: []string{"text:x", "mark"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newScanner(nonce, tc.frames)
			var got []string
			emit := func(e event) error {
				switch {
				case e.mark:
					got = append(got, "mark")
				case e.text != nil:
					got = append(got, "text:"+string(e.text))
				default:
					got = append(got, "frame:"+string(e.frame))
				}
				return nil
			}
			for _, c := range tc.chunks {
				if err := s.feed([]byte(c), emit); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.flush(emit); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScannerBoundsFrames: a frame over MaxFrameBytes is dropped, not kept in memory, and the
// stream goes on after it.
func TestScannerBoundsFrames(t *testing.T) {
	s := newScanner("n", true)
	var got []event
	emit := func(e event) error { got = append(got, e); return nil }
	big := strings.Repeat("x", 1<<20)
	_ = s.feed([]byte(string(rune(recordSeparator))+"n"), emit)
	for range MaxFrameBytes/len(big) + 1 {
		_ = s.feed([]byte(big), emit)
	}
	if len(s.frame) != 0 {
		t.Errorf("the scanner holds %d bytes of an oversized frame", len(s.frame))
	}
	_ = s.feed([]byte("\nafter"), emit)
	_ = s.flush(emit)
	if len(got) != 2 || !got[0].oversize || string(got[1].text) != "after" {
		t.Errorf("events = %d (first oversize: %v), want an oversized frame, then the text after it", len(got), len(got) > 0 && got[0].oversize)
	}
}
