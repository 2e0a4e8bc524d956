package limits

import (
	"encoding/binary"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// codeResourceExhausted is the Connect code (and, lowercase, the JSON code) of both refusals;
// grpcResourceExhausted is the same code in gRPC's numbering.
const (
	codeResourceExhausted = "resource_exhausted"
	grpcResourceExhausted = 8
)

// protocol is how a request expects its errors.
type protocol int

const (
	// protocolHTTP: plain HTTP and Connect unary, whose error is the JSON body
	// {"code":...,"message":...} with a non-200 status, exactly what plain clients get.
	protocolHTTP protocol = iota
	// protocolGRPC: gRPC and gRPC-Web (Content-Type application/grpc*): HTTP 200 with the status
	// in grpc-status and grpc-message (a trailers-only response).
	protocolGRPC
	// protocolConnectStream: Connect streaming (Content-Type application/connect+*): HTTP 200
	// and a body holding only the end-of-stream message that carries the error.
	protocolConnectStream
)

func protocolOf(r *http.Request) (protocol, string) {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return protocolHTTP, ""
	}
	switch {
	case strings.HasPrefix(mt, "application/grpc"):
		return protocolGRPC, ct
	case strings.HasPrefix(mt, "application/connect+"):
		return protocolConnectStream, ct
	}
	return protocolHTTP, ""
}

// writeExhausted answers r with the resource_exhausted error in the form its protocol expects:
// httpStatus (413 or 429) and a JSON body for plain HTTP and Connect unary requests.
func writeExhausted(w http.ResponseWriter, r *http.Request, httpStatus int, message string) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	proto, ct := protocolOf(r)
	switch proto {
	case protocolGRPC:
		h.Set("Content-Type", ct)
		h.Set("Grpc-Status", strconv.Itoa(grpcResourceExhausted))
		h.Set("Grpc-Message", grpcPercentEncode(message))
		w.WriteHeader(http.StatusOK)
	case protocolConnectStream:
		h.Set("Content-Type", ct)
		w.WriteHeader(http.StatusOK)
		payload, _ := json.Marshal(map[string]any{ // a map of strings always marshals
			"error": map[string]string{"code": codeResourceExhausted, "message": message},
		})
		// An envelope: flags (0x02: end of stream), big-endian length, then the JSON message.
		envelope := make([]byte, 5, 5+len(payload))
		envelope[0] = 0x02
		binary.BigEndian.PutUint32(envelope[1:], uint32(len(payload)))
		_, _ = w.Write(append(envelope, payload...))
	default:
		h.Set("Content-Type", "application/json")
		w.WriteHeader(httpStatus)
		_ = json.NewEncoder(w).Encode(struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}{codeResourceExhausted, message})
	}
}

// grpcPercentEncode encodes a grpc-message value: bytes outside printable ASCII, and '%', become
// %XX, as the gRPC HTTP/2 protocol requires.
func grpcPercentEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c > '~' || c == '%' {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// formatBytes writes n in bytes, adding the binary unit it is a whole multiple of.
func formatBytes(n int64) string {
	s := strconv.FormatInt(n, 10) + " bytes"
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return s + " (" + strconv.FormatInt(n/u.size, 10) + " " + u.name + ")"
		}
	}
	return s
}
