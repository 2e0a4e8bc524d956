package install

import (
	"errors"
	"strconv"
	"strings"
)

// addImport returns config with path added to its top-level imports array, or nil if the array
// already names it. Every other byte is kept: the array may span lines and carry comments, and
// the path goes right after its last item (or into the empty array), so uninstall can restore
// the original exactly. Without an imports key, one is added after version (or first).
func addImport(config []byte, path string) ([]byte, error) {
	s := string(config)
	insertAt, off := 0, 0
	for off < len(s) {
		end := strings.IndexByte(s[off:], '\n') + 1
		if end == 0 {
			end = len(s) - off
		}
		line := s[off : off+end]
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") {
			break // the first table: top-level keys end here
		}
		if isKey(t, "version") {
			insertAt = off + end
		}
		if isKey(t, "imports") {
			return addToArray(s, off+strings.IndexByte(line, '='), path)
		}
		off += end
	}
	prefix := s[:insertAt]
	if prefix != "" && !strings.HasSuffix(prefix, "\n") {
		prefix += "\n"
	}
	return []byte(prefix + "imports = [" + strconv.Quote(path) + "]\n" + s[insertAt:]), nil
}

// isKey reports whether the trimmed line t assigns the bare key.
func isKey(t, key string) bool {
	rest, ok := strings.CutPrefix(t, key)
	return ok && strings.HasPrefix(strings.TrimLeft(rest, " \t"), "=")
}

// addToArray adds path to the array whose key's "=" is at s[eq].
func addToArray(s string, eq int, path string) ([]byte, error) {
	open := eq + 1 + len(s[eq+1:]) - len(strings.TrimLeft(s[eq+1:], " \t"))
	if open >= len(s) || s[open] != '[' {
		return nil, errors.New("its imports is not an array of file names: make it one (imports = [...]), then restart kubox-node")
	}
	items, last, err := scanArray(s, open)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		if it == path {
			return nil, nil
		}
	}
	add := strconv.Quote(path)
	switch s[last] {
	case '[':
	case ',':
		add = " " + add + ","
	default:
		add = ", " + add
	}
	return []byte(s[:last+1] + add + s[last+1:]), nil
}

// scanArray reads the TOML array of strings opening at s[open]: its items and the index of the
// last byte that is not space or comment before its closing bracket (the "[", a "," or the end
// of the last string).
func scanArray(s string, open int) (items []string, last int, err error) {
	last = open
	for i := open + 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == ']':
			return items, last, nil
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == ',':
			last = i
		case c == '"' || c == '\'':
			end, item, err := scanString(s, i)
			if err != nil {
				return nil, 0, err
			}
			items, i, last = append(items, item), end, end
		case c != ' ' && c != '\t' && c != '\n' && c != '\r':
			return nil, 0, errors.New("its imports holds something other than file names: fix it, then restart kubox-node")
		}
	}
	return nil, 0, errors.New("its imports array is not closed: fix it, then restart kubox-node")
}

// scanString reads the one-line TOML string starting at s[start] ('...' literal or "..." basic)
// and returns the index of its closing quote and its value.
func scanString(s string, start int) (int, string, error) {
	q := s[start]
	if strings.HasPrefix(s[start:], strings.Repeat(string(q), 3)) {
		return 0, "", errors.New("its imports holds a multi-line string: write each path as a one-line \"...\" string, then restart kubox-node")
	}
	for i := start + 1; i < len(s) && s[i] != '\n'; i++ {
		if q == '"' && s[i] == '\\' {
			i++
			continue
		}
		if s[i] != q {
			continue
		}
		if q == '\'' {
			return i, s[start+1 : i], nil
		}
		v, err := strconv.Unquote(s[start : i+1])
		if err != nil {
			return 0, "", errors.New("its imports holds a string kubox-node cannot read: write it as a plain \"...\" path, then restart kubox-node")
		}
		return i, v, nil
	}
	return 0, "", errors.New("its imports holds an unterminated string: fix it, then restart kubox-node")
}
