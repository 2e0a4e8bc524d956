package auth

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kubox-dev/kubox/api/contract"
)

func TestTransportAuthenticatesAgainstMiddleware(t *testing.T) {
	tok := []byte("0123456789abcdef0123456789abcdef")
	srv := httptest.NewServer(Middleware(Fixed(tok), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}), Options{}))
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := contract.BearerClient(string(tok)).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Errorf("status %d through Transport, want the handler's 418", resp.StatusCode)
	}
	if req.Header.Get("Authorization") != "" {
		t.Error("Transport changed the caller's request")
	}
	resp, err = contract.BearerClient("wrong-token-wrong-token-wrong-token").Do(req.Clone(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status %d with a wrong token, want 401", resp.StatusCode)
	}
}
