package pyruntime

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// referenceText is what writeText must write for b: the output decoded the way it was before
// the answer was streamed (invalid runs to U+FFFD, then universal newlines), encoded by
// encoding/json without HTML escaping.
func referenceText(t *testing.T, b []byte) string {
	t.Helper()
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func streamedText(b []byte) string {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	writeText(w, b)
	_ = w.Flush()
	return buf.String()
}

func TestWriteTextMatchesEncodingJSON(t *testing.T) {
	cases := map[string]string{
		"empty":               "",
		"plain":               "hello, world",
		"newlines":            "a\r\nb\rc\n\r\r\n",
		"cr at the end":       "abc\r",
		"quotes, backslash":   `"\ <&>`,
		"controls":            "\x00\x01\b\f\t\x1f\x7f",
		"separators":          "a\u2028b\u2029c",
		"invalid runs":        "ok\xff\xfe\xfd!\xc3(\xed\xa0\x80x",
		"cr, invalid, lf":     "\r\xff\n",
		"literal U+FFFD":      "\uFFFD\xff",
		"multibyte":           "żółw 🐢 日本",
		"truncated multibyte": "abc\xe6\x97",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if got, want := streamedText([]byte(in)), referenceText(t, []byte(in)); got != want {
				t.Errorf("writeText(%q) = %s, want %s", in, got, want)
			}
		})
	}
	// Random bytes drawn mostly from the interesting ones.
	alphabet := []byte("ab\r\n\"\\\x00\x1f\x7f\xff\xc3\xa9\xe2\x80\xa8\xf0\x9f")
	rng := rand.New(rand.NewPCG(7, 11))
	for range 5000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if got, want := streamedText(b), referenceText(t, b); got != want {
			t.Fatalf("writeText(%q) = %s, want %s", b, got, want)
		}
	}
}
