// Package limits bounds what one client can make kubox-agent hold: the size of a request body
// (BodyLimit) and the number of long-lived streams open at once (StreamLimiter).
//
// Both refuse with the code resource_exhausted in the form the request's protocol expects, told
// apart by Content-Type: gRPC and gRPC-Web (application/grpc*) get a trailers-only response with
// grpc-status 8; Connect streaming (application/connect+*) gets an end-of-stream message carrying
// the error; everything else, Connect unary included, gets HTTP 413 or 429 with the JSON body
// {"code":"resource_exhausted","message":"..."}, which is also Connect's unary error format.
//
// Limits are set per route group by wrapping each group's handler with its own BodyLimit, and
// the routes serving streams with one StreamLimiter's Wrap.
package limits

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// BodyLimit returns a handler that lets next read at most maxBytes of a request's body.
//
// A request whose Content-Length exceeds maxBytes is refused before next runs. A body of unknown
// length (chunked) is cut at maxBytes: next's read fails with *http.MaxBytesError, and unless next
// has already started its response, whatever it answers is replaced with the refusal, so the
// client learns the limit rather than a parse error. BodyLimit panics when maxBytes is not
// positive: to leave a route unbounded, do not wrap it.
func BodyLimit(maxBytes int64, next http.Handler) http.Handler {
	if maxBytes <= 0 {
		panic(fmt.Sprintf("limits.BodyLimit: maxBytes %d is not positive", maxBytes))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxBytes {
			bodyTooLarge(w, r, maxBytes)
			return
		}
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		body := &watchedBody{ReadCloser: http.MaxBytesReader(w, r.Body, maxBytes)}
		r.Body = body
		lw := &limitWriter{ResponseWriter: w, r: r, body: body, maxBytes: maxBytes}
		next.ServeHTTP(lw, r)
		if !lw.wrote && body.exceeded.Load() {
			bodyTooLarge(w, r, maxBytes)
		}
	})
}

func bodyTooLarge(w http.ResponseWriter, r *http.Request, maxBytes int64) {
	writeExhausted(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf(
		"the request body exceeds this endpoint's limit of %s; send less, or in several requests",
		formatBytes(maxBytes)))
}

// watchedBody records that a read hit the limit.
type watchedBody struct {
	io.ReadCloser
	exceeded atomic.Bool // Read may run on another goroutine than the writes (full-duplex streams)
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var tooLarge *http.MaxBytesError
	if err != nil && errors.As(err, &tooLarge) {
		b.exceeded.Store(true)
	}
	return n, err
}

// limitWriter replaces the response of a handler whose body read hit the limit, as long as the
// handler had not yet started it.
type limitWriter struct {
	http.ResponseWriter
	r        *http.Request
	body     *watchedBody
	maxBytes int64
	wrote    bool // the response's status is decided
	swallow  bool // the refusal was sent instead; discard the handler's output
}

func (lw *limitWriter) WriteHeader(code int) {
	if lw.wrote {
		if !lw.swallow {
			lw.ResponseWriter.WriteHeader(code)
		}
		return
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		lw.ResponseWriter.WriteHeader(code) // informational: the final status is still to come
		return
	}
	lw.wrote = true
	if lw.body.exceeded.Load() {
		lw.swallow = true
		clear(lw.Header()) // e.g. a Content-Length that no longer holds
		bodyTooLarge(lw.ResponseWriter, lw.r, lw.maxBytes)
		return
	}
	lw.ResponseWriter.WriteHeader(code)
}

func (lw *limitWriter) Write(p []byte) (int, error) {
	if !lw.wrote {
		lw.WriteHeader(http.StatusOK)
	}
	if lw.swallow {
		return len(p), nil
	}
	return lw.ResponseWriter.Write(p)
}

// Flush lets streaming handlers (Connect, gRPC) flush through the wrapper.
func (lw *limitWriter) Flush() {
	if !lw.wrote {
		lw.WriteHeader(http.StatusOK)
	}
	if lw.swallow {
		return
	}
	_ = http.NewResponseController(lw.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the underlying writer (Hijack, deadlines, full duplex).
func (lw *limitWriter) Unwrap() http.ResponseWriter { return lw.ResponseWriter }
