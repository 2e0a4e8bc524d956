package codeinterp

import (
	"bytes"
	"unicode/utf8"
)

// recordSeparator starts each of the drivers' frames and marks, followed by the interpreter's
// nonce (see the drivers' headers).
const recordSeparator = 0x1e

// MaxFrameBytes bounds one frame of a driver (a result, with its PNG or HTML); a larger one is
// dropped and reported as an error of the execution, so a result cannot grow the agent's memory
// without bound.
const MaxFrameBytes = 32 << 20

// scanner splits one output stream of an interpreter into the user's text and the driver's
// frames (stdout) or marks (stderr). Text is passed on as soon as it arrives, except for a tail
// that may be the start of a marker or of a UTF-8 character.
type scanner struct {
	marker  []byte // RS + nonce
	frames  bool   // stdout: a marker starts a frame ending at LF; stderr: the marker ends at LF
	inFrame bool
	frame   []byte
	over    bool // the current frame passed MaxFrameBytes
	tail    []byte
}

// event is what a scanner found: text, a frame (or an oversized one), or a mark.
type event struct {
	stderr   bool // the stream: stderr, else stdout
	text     []byte
	frame    []byte
	oversize bool
	mark     bool
}

func newScanner(nonce string, frames bool) *scanner {
	m := append([]byte{recordSeparator}, nonce...)
	if !frames {
		m = append(m, '\n')
	}
	return &scanner{marker: m, frames: frames}
}

// feed scans data and calls emit for each event in order.
func (s *scanner) feed(data []byte, emit func(event) error) error {
	buf := data
	if len(s.tail) > 0 {
		buf = append(s.tail, data...)
		s.tail = nil
	}
	for len(buf) > 0 {
		if s.inFrame {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				s.addFrame(buf)
				return nil
			}
			s.addFrame(buf[:i])
			buf = buf[i+1:]
			ev := event{frame: s.frame, oversize: s.over}
			s.inFrame, s.frame, s.over = false, nil, false
			if err := emit(ev); err != nil {
				return err
			}
			continue
		}
		i := bytes.Index(buf, s.marker)
		if i < 0 {
			n := len(buf) - partialSuffix(buf, s.marker)
			n = completeUTF8(buf[:n])
			s.tail = bytes.Clone(buf[n:])
			return emitText(buf[:n], emit)
		}
		if err := emitText(buf[:i], emit); err != nil {
			return err
		}
		buf = buf[i+len(s.marker):]
		if !s.frames {
			if err := emit(event{mark: true}); err != nil {
				return err
			}
			continue
		}
		s.inFrame = true
	}
	return nil
}

func (s *scanner) addFrame(b []byte) {
	if s.over || len(s.frame)+len(b) > MaxFrameBytes {
		s.over, s.frame = true, nil
		return
	}
	s.frame = append(s.frame, b...)
}

// flush passes on the held tail (the stream ended).
func (s *scanner) flush(emit func(event) error) error {
	t := s.tail
	s.tail = nil
	return emitText(t, emit)
}

func emitText(b []byte, emit func(event) error) error {
	if len(b) == 0 {
		return nil
	}
	return emit(event{text: bytes.Clone(b)})
}

// partialSuffix is the length of the longest end of b that is a proper start of marker.
func partialSuffix(b, marker []byte) int {
	for n := min(len(b), len(marker)-1); n > 0; n-- {
		if bytes.HasSuffix(b, marker[:n]) {
			return n
		}
	}
	return 0
}

// completeUTF8 is the length of b without an incomplete UTF-8 character at its end (invalid
// bytes count as complete: they are passed on, and replaced, not held).
func completeUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if !utf8.RuneStart(b[i]) {
			continue
		}
		if !utf8.FullRune(b[i:]) {
			return i
		}
		return len(b)
	}
	return len(b)
}
