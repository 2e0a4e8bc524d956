package e2b

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubox-dev/kubox/internal/router/httperr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// E2B's list pages: 100 sandboxes unless limit says otherwise, at most e2bMaxListLimit.
const (
	e2bDefaultListLimit = 100
	e2bMaxListLimit     = 1000
)

// e2bListFilter is what E2B's list takes in its query: metadata pairs, URL-encoded as one
// parameter (metadata=k%3Dv%26k2%3Dv2), states (state=running&state=paused or
// state=running,paused; none: every state), template, startedAfter (RFC 3339, inclusive), and
// the page: order of start time (desc, the newest first, unless asc), limit and nextToken.
type e2bListFilter struct {
	metadata     map[string]string
	states       []string
	template     string
	startedAfter time.Time
	asc          bool
	limit        int
	after        *e2bCursor
}

// e2bCursor is where a page ends: the start time and ID of its last sandbox, in the order of
// the list, so the next page starts after it however sandboxes come and go in between.
type e2bCursor struct {
	startedAt time.Time
	id        string
}

func (c e2bCursor) token() string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d/%s", c.startedAt.UnixNano(), c.id))
}

func parseE2BCursor(tok string) (*e2bCursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return nil, err
	}
	ns, id, ok := strings.Cut(string(b), "/")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return nil, fmt.Errorf("not a token this router made")
	}
	return &e2bCursor{startedAt: time.Unix(0, n), id: id}, nil
}

func parseE2BListFilter(r *http.Request) (e2bListFilter, *httperr.Error) {
	q := r.URL.Query()
	f := e2bListFilter{template: q.Get("template"), limit: e2bDefaultListLimit}
	if herr := f.parsePage(q); herr != nil {
		return f, herr
	}
	if m := q.Get("metadata"); m != "" {
		vals, err := url.ParseQuery(m)
		if err != nil {
			return f, httperr.Errorf(http.StatusBadRequest, "metadata %q is not key=value pairs joined by &, URL-encoded: %v", httperr.Clip(m), err)
		}
		f.metadata = map[string]string{}
		for k, v := range vals {
			f.metadata[k] = v[0]
		}
	}
	for _, s := range q["state"] {
		for st := range strings.SplitSeq(s, ",") {
			if st != e2bRunning && st != e2bPaused {
				return f, httperr.Errorf(http.StatusBadRequest, "state %q is neither %s nor %s", httperr.Clip(st), e2bRunning, e2bPaused)
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

// parsePage reads startedAfter, order, limit and nextToken.
func (f *e2bListFilter) parsePage(q url.Values) *httperr.Error {
	if v := q.Get("startedAfter"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return httperr.Errorf(http.StatusBadRequest, "startedAfter %q is not an RFC 3339 time: %v", httperr.Clip(v), err)
		}
		f.startedAfter = t
	}
	switch o := q.Get("order"); o {
	case "", "desc":
	case "asc":
		f.asc = true
	default:
		return httperr.Errorf(http.StatusBadRequest, "order %q is neither asc nor desc", httperr.Clip(o))
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > e2bMaxListLimit {
			return httperr.Errorf(http.StatusBadRequest, "limit %q is not a number from 1 to %d", httperr.Clip(v), e2bMaxListLimit)
		}
		f.limit = n
	}
	if v := q.Get("nextToken"); v != "" {
		c, err := parseE2BCursor(v)
		if err != nil {
			return httperr.Errorf(http.StatusBadRequest, "nextToken %q is not one this API answered: %v", httperr.Clip(v), err)
		}
		f.after = c
	}
	return nil
}

// page sorts the matching sandboxes by start time (then ID) in the filter's order and returns
// the page after its cursor, with the token of the next page ("" on the last).
func (f e2bListFilter) page(all []e2bDetail) ([]e2bDetail, string) {
	compare := func(a, b e2bCursor) int {
		c := cmp.Or(a.startedAt.Compare(b.startedAt), strings.Compare(a.id, b.id))
		if f.asc {
			return c
		}
		return -c
	}
	key := func(d e2bDetail) e2bCursor { return e2bCursor{startedAt: d.StartedAt, id: d.SandboxID} }
	slices.SortFunc(all, func(a, b e2bDetail) int { return compare(key(a), key(b)) })
	if f.after != nil {
		at, _ := slices.BinarySearchFunc(all, *f.after, func(d e2bDetail, c e2bCursor) int { return compare(key(d), c) })
		for at < len(all) && compare(key(all[at]), *f.after) <= 0 {
			at++
		}
		all = all[at:]
	}
	if len(all) <= f.limit {
		return all, ""
	}
	return all[:f.limit], key(all[f.limit-1]).token()
}

func (f e2bListFilter) match(d e2bDetail) bool {
	if len(f.states) > 0 && !slices.Contains(f.states, d.State) {
		return false
	}
	if (f.template != "" && d.TemplateID != f.template) || d.StartedAt.Before(f.startedAfter) {
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
