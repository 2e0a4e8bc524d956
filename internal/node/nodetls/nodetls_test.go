package nodetls

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestRotationServesTheNewKey: once the token changes, kubox-node serves the key of the new one
// (a client with the new token connects, one with the old is refused), and while the token cannot
// be read, the last good key is served.
func TestRotationServesTheNewKey(t *testing.T) {
	var tok atomic.Value
	tok.Store("old-token-0123456789abcdef0123456789")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	srv.TLS = ServerConfig(func() ([]byte, error) {
		s := tok.Load().(string)
		if s == "" {
			return nil, errors.New("the token file is being replaced")
		}
		return []byte(s), nil
	})
	srv.StartTLS()
	defer srv.Close()
	get := func(token string) error {
		cfg, err := ClientConfig([]byte(token))
		if err != nil {
			return err
		}
		resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}).Get(srv.URL)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	// steps, in order: each depends on the key served before it
	for _, tc := range []struct {
		name, serving, client string
		ok                    bool
	}{
		{"the token", "old-token-0123456789abcdef0123456789", "old-token-0123456789abcdef0123456789", true},
		{"a rotated token, the old client", "new-token-0123456789abcdef0123456789", "old-token-0123456789abcdef0123456789", false},
		{"a rotated token, the new client", "new-token-0123456789abcdef0123456789", "new-token-0123456789abcdef0123456789", true},
		{"an unreadable token: the last key", "", "new-token-0123456789abcdef0123456789", true},
	} {
		name := tc.name
		tok.Store(tc.serving)
		err := get(tc.client)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v; want success %t", name, err, tc.ok)
		}
		if err != nil && !tc.ok && !errors.Is(err, ErrNotKuboxNode) {
			t.Errorf("%s: %v; want ErrNotKuboxNode", name, err)
		}
	}
}
