package contract

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestBearerTransportAddsTheTokenAndLeavesTheRequest(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got = r.Header.Values(AuthorizationHeader)
	}))
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(AuthorizationHeader, "Basic old")
	resp, err := BearerClient("tok-1").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if len(got) != 1 || got[0] != "Bearer tok-1" {
		t.Errorf("the server got Authorization %q; want exactly [\"Bearer tok-1\"]", got)
	}
	if v := req.Header.Get(AuthorizationHeader); v != "Basic old" {
		t.Errorf("the caller's request now has Authorization %q; want it unchanged", v)
	}
}
