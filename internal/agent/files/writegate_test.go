package files

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// gate is a WriteGate that refuses when closed and counts the writes it admitted and finished.
type gate struct {
	closed         atomic.Bool
	admitted, done atomic.Int32
}

func (g *gate) BeginWrite() (func(), error) {
	if g.closed.Load() {
		return nil, errors.New("sandbox sb is suspending; retry after it resumes")
	}
	g.admitted.Add(1)
	return func() { g.done.Add(1) }, nil
}

func TestContentWritesPassTheGate(t *testing.T) {
	tr := newTree(t).file("keep.txt", "kept")
	g := &gate{}
	srv := serve(t, NewContentHandler(tr.root(), g))
	if resp, body := do(t, http.MethodPut, srv.URL+"/files/new.txt", strings.NewReader("x")); resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT with the gate open: %d %s", resp.StatusCode, body)
	}
	if g.admitted.Load() != 1 || g.done.Load() != 1 {
		t.Errorf("gate admitted %d, finished %d writes; want 1 and 1", g.admitted.Load(), g.done.Load())
	}
	g.closed.Store(true)
	for _, method := range []string{http.MethodPut, http.MethodDelete} {
		resp, body := do(t, method, srv.URL+"/files/keep.txt", strings.NewReader("y"))
		e := errorBody(t, resp, body)
		if resp.StatusCode != http.StatusServiceUnavailable || e.Code != "unavailable" || !strings.Contains(e.Message, "is suspending") {
			t.Errorf("%s with the gate closed: %d %+v; want 503 unavailable naming the suspend", method, resp.StatusCode, e)
		}
	}
	if b, err := os.ReadFile(filepath.Join(tr.dir, "keep.txt")); err != nil || string(b) != "kept" {
		t.Errorf("keep.txt holds %q, %v after refused writes", b, err)
	}
	if resp, body := do(t, http.MethodGet, srv.URL+"/files/keep.txt", nil); resp.StatusCode != http.StatusOK || body != "kept" {
		t.Errorf("GET with the gate closed: %d %q; reads must still work", resp.StatusCode, body)
	}
}

func TestSandboxdWritesPassTheGate(t *testing.T) {
	closed := &gate{}
	closed.closed.Store(true)
	srv := serve(t, NewSandboxdHandler(newTree(t).root(), SandboxdOptions{Writes: closed,
		Environ: func() []string { return nil }}))
	resp, body := do(t, http.MethodPut, srv.URL+"/v1/files/a.txt", strings.NewReader("x"))
	if e := errorBody(t, resp, body); resp.StatusCode != http.StatusServiceUnavailable || e.Code != "UNAVAILABLE" {
		t.Errorf("sandboxd PUT with the gate closed: %d %+v; want 503 UNAVAILABLE", resp.StatusCode, e)
	}
}
