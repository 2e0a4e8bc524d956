// Package shlex splits a command line into words the way Python's shlex.split does in its
// default POSIX mode, which agent-sandbox's python-runtime applies to the command of POST
// /execute. No shell runs: there is no expansion, globbing, redirection or comment.
//
// The rules, in Python's POSIX mode:
//   - Words are separated by runs of space, tab, carriage return and newline.
//   - Outside quotes a backslash takes the next character literally (a backslash-newline is a
//     newline, not a line continuation).
//   - Between single quotes every character is literal.
//   - Between double quotes a backslash escapes only a double quote or a backslash; before any
//     other character it stays, with that character.
//   - Quotes join with adjacent text into one word; a quoted empty string is an empty word.
//   - An unclosed quote and a trailing lone backslash are errors.
package shlex

import (
	"errors"
	"strings"
)

// The errors Split returns carry Python's messages, which python-runtime reports to clients.
var (
	ErrNoClosingQuotation = errors.New("No closing quotation") //nolint:staticcheck // Python's message
	ErrNoEscapedCharacter = errors.New("No escaped character") //nolint:staticcheck // Python's message
)

// Split returns the words of s.
func Split(s string) ([]string, error) {
	words := []string{}
	var word strings.Builder
	inWord := false // a word has begun, even if still empty (as after '')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\r', '\n':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case '\\':
			if i+1 == len(s) {
				return nil, ErrNoEscapedCharacter
			}
			i++
			word.WriteByte(s[i])
			inWord = true
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, ErrNoClosingQuotation
			}
			word.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case '"':
			n, err := doubleQuoted(s[i+1:], &word)
			if err != nil {
				return nil, err
			}
			i += n + 1
			inWord = true
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// doubleQuoted appends to word the text of s up to the closing double quote and returns the index
// of that quote in s.
func doubleQuoted(s string, word *strings.Builder) (int, error) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return i, nil
		case '\\':
			if i+1 == len(s) {
				// Python reports the escape first: the backslash consumed the end of input.
				return 0, ErrNoEscapedCharacter
			}
			if next := s[i+1]; next == '"' || next == '\\' {
				word.WriteByte(next)
			} else {
				word.WriteByte('\\')
				word.WriteByte(next)
			}
			i++
		default:
			word.WriteByte(c)
		}
	}
	return 0, ErrNoClosingQuotation
}

// Quote returns s quoted so that Split reads it back as exactly one word, as Python's
// shlex.quote does: unchanged when it holds only characters no shell treats specially, otherwise
// between single quotes, with each single quote written as '"'"'.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(s); i++ {
		if !isSafe(s[i]) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// Join returns the words quoted and separated by spaces: Split(Join(words)) gives words back.
func Join(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = Quote(w)
	}
	return strings.Join(quoted, " ")
}

// isSafe reports whether c needs no quoting: Python's set, ASCII \w plus @%+=:,./- (any other
// byte, non-ASCII included, is quoted).
func isSafe(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("_@%+=:,./-", c) >= 0
}
