package router

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// e2bListFilter is what E2B's list takes in its query: metadata pairs, URL-encoded as one
// parameter (metadata=k%3Dv%26k2%3Dv2), and states (state=running&state=paused or
// state=running,paused; none: every state).
type e2bListFilter struct {
	metadata map[string]string
	states   []string
}

func parseE2BListFilter(r *http.Request) (e2bListFilter, *httpError) {
	q := r.URL.Query()
	f := e2bListFilter{}
	if m := q.Get("metadata"); m != "" {
		vals, err := url.ParseQuery(m)
		if err != nil {
			return f, errorf(http.StatusBadRequest, "metadata %q is not key=value pairs joined by &, URL-encoded: %v", clip(m), err)
		}
		f.metadata = map[string]string{}
		for k, v := range vals {
			f.metadata[k] = v[0]
		}
	}
	for _, s := range q["state"] {
		for st := range strings.SplitSeq(s, ",") {
			if st != e2bRunning && st != e2bPaused {
				return f, errorf(http.StatusBadRequest, "state %q is neither %s nor %s", clip(st), e2bRunning, e2bPaused)
			}
			f.states = append(f.states, st)
		}
	}
	if len(f.states) == 0 && r.URL.Path == "/sandboxes" {
		// E2B's first list answers running sandboxes only.
		f.states = []string{e2bRunning}
	}
	return f, nil
}

func (f e2bListFilter) match(d e2bDetail) bool {
	if len(f.states) > 0 && !slices.Contains(f.states, d.State) {
		return false
	}
	for k, v := range f.metadata {
		if got, ok := d.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func objectKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

func inNamespace(ns string) client.InNamespace { return client.InNamespace(ns) }

// preconditionUID deletes obj only while it is the object read (not one recreated by name).
func preconditionUID(obj client.Object) client.DeleteOption {
	uid := obj.GetUID()
	return client.Preconditions{UID: &uid}
}

// rawMergePatch is a JSON merge patch; one that sets metadata.uid fails on another object of the
// name (the API server refuses to change a UID).
func rawMergePatch(b []byte) client.Patch { return client.RawPatch(types.MergePatchType, b) }
