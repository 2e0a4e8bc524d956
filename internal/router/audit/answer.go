package audit

import (
	"encoding/binary"
	"fmt"
	"net/http"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	envdprocess "github.com/kubox-dev/kubox/proto/e2b/envd/process"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"

	auditrec "github.com/kubox-dev/kubox/internal/audit"
)

// maxExitMessage bounds a streamed answer message the router decodes for an exit: exit events
// are a few bytes; larger messages (output) are passed on without being decoded.
const maxExitMessage = 4 << 10

// Connect's and gRPC-Web's flags of an envelope that is not a message: Connect's end of stream
// (a JSON error and trailers) and gRPC-Web's trailers.
const (
	flagEndStream  = 0x02
	flagWebTrailer = 0x80
)

// exitAnswer is how an exec procedure's answer reports the command's exit.
type exitAnswer struct {
	// answer is a new message of the procedure's answer type.
	answer func() proto.Message
	// exit reads the exit from an answer message; ok is false when it holds none.
	exit func(proto.Message) (code int32, signal string, ok bool)
	// field is the unary answer's field that holds the exit (0 for a streamed answer).
	field protowire.Number
}

// exitAnswers are the exec procedures whose answers the router reads for the exit.
var exitAnswers = map[string]*exitAnswer{
	"/kubox.agent.v1.ProcessService/RunProcess": {
		answer: func() proto.Message { return &agentv1.RunProcessResponse{} },
		exit: func(m proto.Message) (int32, string, bool) {
			e := m.(*agentv1.RunProcessResponse).GetExit()
			return e.GetExitCode(), e.GetSignal(), e != nil
		},
		field: 9,
	},
	"/kubox.agent.v1.ProcessService/StartProcess": {
		answer: func() proto.Message { return &agentv1.StartProcessResponse{} },
		exit: func(m proto.Message) (int32, string, bool) {
			e := m.(*agentv1.StartProcessResponse).GetEvent().GetExited()
			return e.GetExitCode(), e.GetSignal(), e != nil
		},
	},
	"/process.Process/Start": {
		answer: func() proto.Message { return &envdprocess.StartResponse{} },
		exit: func(m proto.Message) (int32, string, bool) {
			e := m.(*envdprocess.StartResponse).GetEvent().GetEnd()
			return e.GetExitCode(), "", e != nil
		},
	},
}

// exitReader finds the exit the sandbox reports in an exec call's answer as the router passes
// it on, in bounded memory: it decodes only small streamed messages and, in a unary answer,
// only its exit field; nothing it reads changes what the client gets. Not safe for concurrent
// use: the proxy writes a response from one goroutine.
type exitReader struct {
	proc *exitAnswer
	wire wire
	ok   bool // wire is known and readable
	// enveloped answers: the envelope being read.
	prefix     [envelopePrefix]byte
	havePrefix int
	need       int // bytes of the current message still to come
	msg        []byte
	skip       bool // the current message is not decoded
	// unary proto answers: the field scanner; other unary answers are kept whole, bounded.
	fields fieldScanner
	whole  []byte
	over   bool

	reported *auditrec.Reported
}

// start reads the answer's framing from its headers.
func (x *exitReader) start(h http.Header) {
	x.wire, x.ok = wireOf(h)
	x.fields.field = x.proc.field
}

func (x *exitReader) write(b []byte) {
	switch {
	case !x.ok || x.reported != nil && x.reported.Unread == "" && x.reported.ExitCode != nil:
	case x.wire.enveloped:
		x.envelopes(b)
	case !x.wire.json && !isCompressed(x.wire.encoding):
		x.fields.write(b)
	case len(x.whole)+len(b) > MaxPeekBytes:
		x.over, x.whole = true, nil
	case !x.over:
		x.whole = append(x.whole, b...)
	}
}

func (x *exitReader) envelopes(b []byte) {
	for len(b) > 0 {
		if x.havePrefix < envelopePrefix {
			n := copy(x.prefix[x.havePrefix:], b)
			x.havePrefix, b = x.havePrefix+n, b[n:]
			if x.havePrefix < envelopePrefix {
				return
			}
			x.need = int(binary.BigEndian.Uint32(x.prefix[1:]))
			x.skip = x.prefix[0]&(flagEndStream|flagWebTrailer) != 0 || x.need > maxExitMessage
			x.msg = x.msg[:0]
		}
		n := min(x.need, len(b))
		if !x.skip {
			x.msg = append(x.msg, b[:n]...)
		}
		x.need, b = x.need-n, b[n:]
		if x.need == 0 {
			if !x.skip {
				x.decodeMessage(x.msg, x.prefix[0]&flagCompressed != 0)
			}
			x.havePrefix = 0
		}
	}
}

// decodeMessage decodes one answer message and keeps the exit it holds, if any.
func (x *exitReader) decodeMessage(msg []byte, compressed bool) {
	m := x.proc.answer()
	if unread := decode(x.wire, msg, compressed, m, "answer"); unread != "" {
		x.reported = &auditrec.Reported{Unread: unread}
		return
	}
	if code, signal, ok := x.proc.exit(m); ok {
		x.reported = &auditrec.Reported{ExitCode: &code, Signal: signal}
	}
}

// end is what the answer reported; nil for a call that is not an exec the router reads.
func (x *exitReader) end() *auditrec.Reported {
	if x == nil || !x.ok {
		return nil
	}
	if !x.wire.enveloped {
		switch {
		case x.over:
			return &auditrec.Reported{Unread: fmt.Sprintf("the answer is larger than the %d bytes the router reads", MaxPeekBytes)}
		case x.whole != nil:
			x.decodeMessage(x.whole, isCompressed(x.wire.encoding))
		case !x.wire.json && !isCompressed(x.wire.encoding):
			if unread := x.fields.unread(); unread != "" {
				return &auditrec.Reported{Unread: unread}
			}
			if x.fields.value != nil {
				x.decodeMessage(protowire.AppendBytes(protowire.AppendTag(nil, x.fields.field, protowire.BytesType), x.fields.value), false)
			}
		}
	}
	if x.reported == nil {
		return &auditrec.Reported{Unread: "the answer holds no exit (the call failed, or the stream ended before the command did)"}
	}
	return x.reported
}

// fieldScanner reads a protobuf message as it streams past and keeps one length-delimited
// field (at most maxExitMessage bytes of it), skipping every other field without keeping it.
type fieldScanner struct {
	field protowire.Number
	// head holds the bytes of a tag and length not complete yet.
	head []byte
	// skipping counts the bytes of a field still to skip; keep, those still to keep.
	skipping, keeping int
	value             []byte
	bad               string
}

func (f *fieldScanner) write(b []byte) {
	for len(b) > 0 && f.bad == "" {
		switch {
		case f.skipping > 0:
			n := min(f.skipping, len(b))
			f.skipping, b = f.skipping-n, b[n:]
		case f.keeping > 0:
			n := min(f.keeping, len(b))
			f.value, f.keeping, b = append(f.value, b[:n]...), f.keeping-n, b[n:]
		default:
			f.head = append(f.head, b[0])
			b = b[1:]
			f.readHead()
		}
	}
}

// readHead reads a field's tag and, for a length-delimited field, its length from head once
// they are complete, and says what to do with the field's bytes.
func (f *fieldScanner) readHead() {
	num, typ, n := protowire.ConsumeTag(f.head)
	if n < 0 {
		f.badIf(len(f.head) > 10, "the answer's message is malformed")
		return
	}
	rest := f.head[n:]
	switch typ {
	case protowire.VarintType:
		if _, m := protowire.ConsumeVarint(rest); m >= 0 {
			f.head = f.head[:0]
		} else {
			f.badIf(len(rest) > 10, "the answer's message is malformed")
		}
	case protowire.Fixed32Type, protowire.Fixed64Type:
		f.skipping, f.head = map[protowire.Type]int{protowire.Fixed32Type: 4, protowire.Fixed64Type: 8}[typ], f.head[:0]
	case protowire.BytesType:
		size, m := protowire.ConsumeVarint(rest)
		if m < 0 {
			f.badIf(len(rest) > 10, "the answer's message is malformed")
			return
		}
		f.head = f.head[:0]
		if num == f.field && size <= maxExitMessage {
			f.value, f.keeping = make([]byte, 0, size), int(size)
		} else {
			f.skipping = int(size)
		}
	default:
		f.bad = "the answer's message is malformed"
	}
}

func (f *fieldScanner) badIf(cond bool, why string) {
	if cond {
		f.bad = why
	}
}

// unread says why the message could not be read to its end; "" when it was.
func (f *fieldScanner) unread() string {
	switch {
	case f.bad != "":
		return f.bad
	case len(f.head) > 0 || f.skipping > 0 || f.keeping > 0:
		return "the answer's message is cut short"
	}
	return ""
}
