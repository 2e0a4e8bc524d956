package limits

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type jsonError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func decodeJSONError(t *testing.T, body io.Reader) jsonError {
	t.Helper()
	var e jsonError
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("body is not {code, message}: %v", err)
	}
	return e
}

// echo answers 200 with the body it read, or 400 when reading failed (as a handler that does
// not know about the limit would).
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		w.Header().Set("Content-Length", "17")
		http.Error(w, "cannot read body", http.StatusBadRequest)
		return
	}
	_, _ = w.Write(b)
})

// chunked is a body of unknown length (no Content-Length).
func chunked(s string) io.Reader { return io.MultiReader(strings.NewReader(s)) }

func TestBodyLimit(t *testing.T) {
	cases := map[string]struct {
		body          io.Reader
		contentLength int64
		wantCode      int
		wantBody      string // exact body on success
	}{
		"under the limit":              {body: strings.NewReader("0123456789"), contentLength: 10, wantCode: 200, wantBody: "0123456789"},
		"at the limit":                 {body: strings.NewReader(strings.Repeat("x", 16)), contentLength: 16, wantCode: 200, wantBody: strings.Repeat("x", 16)},
		"content-length over":          {body: strings.NewReader(strings.Repeat("x", 17)), contentLength: 17, wantCode: 413},
		"chunked under":                {body: chunked("short"), contentLength: -1, wantCode: 200, wantBody: "short"},
		"chunked over, handler errors": {body: chunked(strings.Repeat("x", 100)), contentLength: -1, wantCode: 413},
		"no body":                      {body: nil, contentLength: 0, wantCode: 200, wantBody: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/upload", tc.body)
			r.ContentLength = tc.contentLength
			w := httptest.NewRecorder()
			BodyLimit(16, echo).ServeHTTP(w, r)
			if w.Code != tc.wantCode {
				t.Fatalf("status %d, want %d (body %q)", w.Code, tc.wantCode, w.Body)
			}
			if tc.wantCode == 200 {
				if got := w.Body.String(); got != tc.wantBody {
					t.Errorf("body %q, want %q", got, tc.wantBody)
				}
				return
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if cl := w.Header().Get("Content-Length"); cl != "" {
				t.Errorf("the handler's Content-Length %q survived the replacement", cl)
			}
			got := decodeJSONError(t, w.Body)
			want := jsonError{Code: "resource_exhausted",
				Message: "the request body exceeds this endpoint's limit of 16 bytes; send less, or in several requests"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBodyLimitDoesNotCallNextWhenContentLengthIsOver(t *testing.T) {
	called := false
	h := BodyLimit(1<<20, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(""))
	r.ContentLength = 1<<20 + 1
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if called {
		t.Error("next ran for a body announced over the limit")
	}
	if e := decodeJSONError(t, w.Body); !strings.Contains(e.Message, "1048576 bytes (1 MiB)") {
		t.Errorf("message %q does not name the limit", e.Message)
	}
}

func TestBodyLimitKeepsAResponseAlreadyStarted(t *testing.T) {
	// A streaming handler that answered before reading past the limit keeps its status; it sees
	// the read error and ends its stream its own way.
	var readErr error
	h := BodyLimit(4, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		_, readErr = io.ReadAll(r.Body)
		_, _ = w.Write([]byte("partial"))
	}))
	r := httptest.NewRequest(http.MethodPost, "/", chunked("0123456789"))
	r.ContentLength = -1
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusAccepted || w.Body.String() != "partial" {
		t.Errorf("response %d %q, want the handler's 202 \"partial\"", w.Code, w.Body)
	}
	var mbe *http.MaxBytesError
	if !errors.As(readErr, &mbe) || mbe.Limit != 4 {
		t.Errorf("handler's read error %v, want *http.MaxBytesError with limit 4", readErr)
	}
}

func TestBodyLimitFlushes(t *testing.T) {
	h := BodyLimit(1024, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("event"))
		http.NewResponseController(w).Flush()
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("x")))
	if !w.Flushed {
		t.Error("Flush did not reach the underlying writer")
	}
}

func TestBodyLimitPanicsOnNonPositiveLimit(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("BodyLimit accepted a limit of 0")
		}
	}()
	BodyLimit(0, echo)
}

func TestBodyLimitOverRealConnection(t *testing.T) {
	// A chunked body through a real server: the client learns the limit, not a parse error.
	srv := httptest.NewServer(BodyLimit(1024, echo))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodPost, srv.URL, chunked(strings.Repeat("x", 4096)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
	if e := decodeJSONError(t, resp.Body); e.Code != "resource_exhausted" || !strings.Contains(e.Message, "1 KiB") {
		t.Errorf("error %+v, want resource_exhausted naming 1 KiB", e)
	}
	srv.CloseClientConnections()
}

// blocker is a stream handler that holds its slot until released.
type blocker struct {
	entered chan struct{}
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *blocker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.entered <- struct{}{}
	<-b.release
	w.WriteHeader(http.StatusOK)
}

func TestStreamLimiter(t *testing.T) {
	l := NewStreamLimiter(2, 1500*time.Millisecond)
	b := newBlocker()
	h := l.Wrap(b)
	done := make(chan int, 2)
	for range 2 {
		go func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/exec", nil))
			done <- w.Code
		}()
	}
	<-b.entered
	<-b.entered
	if got := l.InUse(); got != 2 {
		t.Errorf("InUse = %d with two streams open, want 2", got)
	}

	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/exec", nil))
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("third stream: status %d, want 429", w.Code)
	}
	if ra := w.Header().Get("Retry-After"); ra != "2" {
		t.Errorf("Retry-After %q, want 2 (1.5s rounded up)", ra)
	}
	got := decodeJSONError(t, w.Body)
	want := jsonError{Code: "resource_exhausted",
		Message: "the agent already serves 2 long-lived streams, its limit; close one, or retry after 2s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}

	// Closing one stream frees its slot for the next.
	b.release <- struct{}{}
	if code := <-done; code != http.StatusOK {
		t.Errorf("first stream ended with %d, want 200", code)
	}
	go func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/exec", nil))
		done <- w.Code
	}()
	<-b.entered
	close(b.release)
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Errorf("stream ended with %d, want 200", code)
		}
	}
	if got := l.InUse(); got != 0 {
		t.Errorf("InUse = %d after every stream ended, want 0", got)
	}
}

func TestStreamLimiterSharedAcrossHandlers(t *testing.T) {
	l := NewStreamLimiter(1, 0)
	b := newBlocker()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		l.Wrap(b).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/exec", nil))
	}()
	<-b.entered
	w := httptest.NewRecorder()
	l.Wrap(http.NotFoundHandler()).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/watch", nil))
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Errorf("second handler: status %d, Retry-After %q; want 429 and the default 1", w.Code, w.Header().Get("Retry-After"))
	}
	close(b.release)
	<-finished
	if got := l.InUse(); got != 0 {
		t.Errorf("InUse = %d after the stream ended, want 0", got)
	}
}

func TestStreamLimiterPanicsOnZero(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewStreamLimiter accepted 0 streams")
		}
	}()
	NewStreamLimiter(0, time.Second)
}

func TestRefusalByProtocol(t *testing.T) {
	cases := map[string]struct {
		contentType   string
		wantStatus    int
		wantType      string
		wantGRPC      string // grpc-status header
		wantEndStream bool
	}{
		"plain":              {contentType: "", wantStatus: 429, wantType: "application/json"},
		"connect unary json": {contentType: "application/json", wantStatus: 429, wantType: "application/json"},
		"connect unary pb":   {contentType: "application/proto", wantStatus: 429, wantType: "application/json"},
		"grpc":               {contentType: "application/grpc", wantStatus: 200, wantType: "application/grpc", wantGRPC: "8"},
		"grpc+proto":         {contentType: "application/grpc+proto", wantStatus: 200, wantType: "application/grpc+proto", wantGRPC: "8"},
		"grpc-web":           {contentType: "application/grpc-web+proto", wantStatus: 200, wantType: "application/grpc-web+proto", wantGRPC: "8"},
		"connect stream":     {contentType: "application/connect+json", wantStatus: 200, wantType: "application/connect+json", wantEndStream: true},
		"connect stream pb":  {contentType: "application/connect+proto; charset=utf-8", wantStatus: 200, wantType: "application/connect+proto; charset=utf-8", wantEndStream: true},
	}
	const msg = "the agent already serves 1 long-lived streams, its limit; close one, or retry after 1s"
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := NewStreamLimiter(1, time.Second)
			l.slots <- struct{}{} // every slot taken
			r := httptest.NewRequest(http.MethodPost, "/kubox.agent.v1.Process/Start", nil)
			if tc.contentType != "" {
				r.Header.Set("Content-Type", tc.contentType)
			}
			w := httptest.NewRecorder()
			l.Wrap(http.NotFoundHandler()).ServeHTTP(w, r)
			if w.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d", w.Code, tc.wantStatus)
			}
			if got := w.Header().Get("Content-Type"); got != tc.wantType {
				t.Errorf("Content-Type %q, want %q", got, tc.wantType)
			}
			if got := w.Header().Get("Grpc-Status"); got != tc.wantGRPC {
				t.Errorf("grpc-status %q, want %q", got, tc.wantGRPC)
			}
			switch {
			case tc.wantGRPC != "":
				if got := w.Header().Get("Grpc-Message"); got != msg {
					t.Errorf("grpc-message %q, want %q", got, msg)
				}
			case tc.wantEndStream:
				body := w.Body.Bytes()
				if len(body) < 5 || body[0] != 0x02 || int(binary.BigEndian.Uint32(body[1:5])) != len(body)-5 {
					t.Fatalf("body %q is not one end-of-stream envelope", body)
				}
				var end struct {
					Error jsonError `json:"error"`
				}
				if err := json.Unmarshal(body[5:], &end); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(jsonError{"resource_exhausted", msg}, end.Error); diff != "" {
					t.Errorf("end-of-stream error (-want +got):\n%s", diff)
				}
			default:
				if diff := cmp.Diff(jsonError{"resource_exhausted", msg}, decodeJSONError(t, w.Body)); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestBodyLimitGRPC(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/svc/M", bytes.NewReader(make([]byte, 64)))
	r.Header.Set("Content-Type", "application/grpc")
	w := httptest.NewRecorder()
	BodyLimit(8, echo).ServeHTTP(w, r)
	if w.Code != 200 || w.Header().Get("Grpc-Status") != "8" {
		t.Errorf("status %d, grpc-status %q; want 200 and 8", w.Code, w.Header().Get("Grpc-Status"))
	}
}

func TestGRPCPercentEncode(t *testing.T) {
	got := grpcPercentEncode("50% done\nnaïve")
	if want := "50%25 done%0Ana%C3%AFve"; got != want {
		t.Errorf("grpcPercentEncode = %q, want %q", got, want)
	}
}

func TestFormatBytes(t *testing.T) {
	got := []string{formatBytes(16), formatBytes(1024), formatBytes(1 << 20), formatBytes(3 << 30), formatBytes(1500)}
	want := []string{"16 bytes", "1024 bytes (1 KiB)", "1048576 bytes (1 MiB)", "3221225472 bytes (3 GiB)", "1500 bytes"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("formatBytes (-want +got):\n%s", diff)
	}
}
