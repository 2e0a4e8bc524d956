package audit

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// MaxPeekBytes bounds what the router reads of a request before forwarding it: the first
// message of an exec or file call (a command line, a path), never a file's content. A
// message larger than this is forwarded unread and recorded as such (Operation.Unread).
const MaxPeekBytes = 64 << 10

// envelopePrefix is the size of a Connect streaming or gRPC message's prefix: a flags byte and
// a big-endian length.
const envelopePrefix = 5

// flagCompressed marks a compressed message in an envelope's flags.
const flagCompressed = 0x01

// wire is how a request's messages are framed and encoded, from its Content-Type.
type wire struct {
	enveloped, json bool
	// encoding is the compression of the messages ("" or identity: none).
	encoding string
}

// isRPC reports whether contentType is Connect's, gRPC's or gRPC-Web's.
func isRPC(contentType string) bool {
	_, ok := wireOf(http.Header{"Content-Type": {contentType}})
	return ok
}

// wireOf reads the framing of a Connect (unary or streaming), gRPC or gRPC-Web request.
func wireOf(h http.Header) (wire, bool) {
	ct, _, _ := strings.Cut(strings.ToLower(h.Get("Content-Type")), ";")
	ct = strings.TrimSpace(ct)
	switch {
	case ct == "application/proto":
		return wire{encoding: h.Get("Content-Encoding")}, true
	case ct == "application/json":
		return wire{json: true, encoding: h.Get("Content-Encoding")}, true
	case strings.HasPrefix(ct, "application/connect+"):
		return wire{enveloped: true, json: ct == "application/connect+json", encoding: h.Get("Connect-Content-Encoding")}, true
	case ct == "application/grpc" || ct == "application/grpc-web" || strings.HasPrefix(ct, "application/grpc+") ||
		strings.HasPrefix(ct, "application/grpc-web+"):
		return wire{enveloped: true, json: strings.HasSuffix(ct, "+json"), encoding: h.Get("Grpc-Encoding")}, true
	}
	return wire{}, false
}

// peek reads the first message of r's body, at most MaxPeekBytes of it, and gives r a body
// that replays those bytes and then the rest: the sandbox gets the body unchanged. It
// returns the message's bytes (nil with a reason when it cannot be read whole).
func peek(r *http.Request, w wire) (msg []byte, compressed bool, unread string) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, false, "the request has no body"
	}
	if !w.enveloped && r.ContentLength > MaxPeekBytes {
		return nil, false, fmt.Sprintf("the request's message has %d bytes, more than the %d the router reads", r.ContentLength, MaxPeekBytes)
	}
	var read []byte
	defer func() { r.Body = &replayBody{Reader: io.MultiReader(bytes.NewReader(read), r.Body), closer: r.Body} }()
	if !w.enveloped {
		n := int64(MaxPeekBytes)
		if r.ContentLength >= 0 && r.ContentLength <= n {
			n = r.ContentLength
		}
		read = make([]byte, n)
		got, err := io.ReadFull(r.Body, read)
		read = read[:got]
		switch {
		case err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF):
			return nil, false, "the request body could not be read: " + err.Error()
		case int64(got) == MaxPeekBytes && r.ContentLength != int64(got):
			return nil, false, fmt.Sprintf("the request's message is larger than the %d bytes the router reads", MaxPeekBytes)
		}
		return read, isCompressed(w.encoding), ""
	}
	var prefix [envelopePrefix]byte
	got, err := io.ReadFull(r.Body, prefix[:])
	read = prefix[:got]
	if err != nil {
		return nil, false, "the request has no complete first message"
	}
	size := binary.BigEndian.Uint32(prefix[1:])
	if size > MaxPeekBytes {
		return nil, false, fmt.Sprintf("the request's first message has %d bytes, more than the %d the router reads", size, MaxPeekBytes)
	}
	read = append(read, make([]byte, size)...)
	got, err = io.ReadFull(r.Body, read[envelopePrefix:])
	read = read[:envelopePrefix+got]
	if err != nil {
		return nil, false, "the request has no complete first message"
	}
	return read[envelopePrefix:], prefix[0]&flagCompressed != 0, ""
}

func isCompressed(encoding string) bool { return encoding != "" && encoding != "identity" }

// replayBody is a request body that reads the peeked bytes again, then the rest.
type replayBody struct {
	io.Reader
	closer io.Closer
}

func (b *replayBody) Close() error { return b.closer.Close() }

// decode unmarshals msg, as w encodes it, into m; decompressing a gzip message to at most
// MaxPeekBytes. what names the message in the reason it returns ("request", "answer").
func decode(w wire, msg []byte, compressed bool, m proto.Message, what string) string {
	if compressed {
		if !strings.EqualFold(w.encoding, "gzip") {
			return fmt.Sprintf("the %s's message is compressed with %q, which the router does not read", what, w.encoding)
		}
		zr, err := gzip.NewReader(bytes.NewReader(msg))
		if err != nil {
			return "the " + what + "'s gzip message is malformed"
		}
		plain, err := io.ReadAll(io.LimitReader(zr, MaxPeekBytes+1))
		if err != nil {
			return "the " + what + "'s gzip message is malformed"
		}
		if len(plain) > MaxPeekBytes {
			return fmt.Sprintf("the %s's message is larger than the %d bytes the router reads", what, MaxPeekBytes)
		}
		msg = plain
	}
	var err error
	if w.json {
		err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(msg, m)
	} else {
		err = proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(msg, m)
	}
	if err != nil {
		return "the " + what + "'s message is malformed: " + err.Error()
	}
	return ""
}
