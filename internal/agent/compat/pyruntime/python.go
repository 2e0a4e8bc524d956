package pyruntime

import (
	"fmt"
	"strconv"
	"strings"
)

// This file writes values the way Python would, where python-runtime's clients may see them.

// epochSeconds is a time in seconds since the epoch, encoded as a Python float (always with a
// fraction or exponent, like 1712345678.0).
type epochSeconds float64

// MarshalJSON implements json.Marshaler.
func (s epochSeconds) MarshalJSON() ([]byte, error) {
	return []byte(pyFloat(float64(s))), nil
}

// pyFloat formats f like Python's repr of a float, for the finite values used here.
func pyFloat(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// pyList formats a list of strings like Python's repr: ['ls', '-la'].
func pyList(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = pyRepr(w)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// pyRepr formats s like Python's repr of a str: single quotes unless s holds a single quote and
// no double quote; backslashes, the quote and control characters escaped.
func pyRepr(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\' || r == rune(q):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < ' ' || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// pyQuote percent-encodes s like Python's urllib.parse.quote with its default safe "/": letters,
// digits, "_.-~" and "/" stay; every other byte of the UTF-8 encoding becomes %XX.
func pyQuote(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.-~/", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String()
}
