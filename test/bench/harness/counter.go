package harness

import (
	"net/http"
	"sort"
	"strings"
	"sync"
)

// WriteCounter counts the write requests (POST, PUT, PATCH, DELETE) a client sends, by verb and
// resource ("PATCH sandboxes", "PUT sandboxclaims/status"). Wrap a rest.Config's transport with
// Wrap to count one component's writes.
type WriteCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

// NewWriteCounter returns an empty counter.
func NewWriteCounter() *WriteCounter { return &WriteCounter{counts: map[string]int{}} }

// Wrap is a rest.Config WrapTransport function.
func (w *WriteCounter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		switch req.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			w.mu.Lock()
			w.counts[req.Method+" "+resourceOf(req.URL.Path)]++
			w.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// resourceOf turns an API path into "resource" or "resource/subresource":
// /apis/g/v/namespaces/ns/sandboxes/name/status → sandboxes/status; /api/v1/namespaces/ns/pods → pods.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return path
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			return "namespaces"
		}
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return path
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}

// Snapshot returns a copy of the counts and resets them.
func (w *WriteCounter) Snapshot() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.counts
	w.counts = map[string]int{}
	return out
}

// Keys returns m's keys, sorted.
func Keys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
