package kubox

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestMintClaimToken(t *testing.T) {
	expires := time.Date(2026, 5, 1, 13, 0, 0, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			TTLSeconds int64 `json:"ttlSeconds"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("Authorization") != "Bearer kube-token":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"no valid credentials","code":401}`))
		case r.Method != http.MethodPost || r.URL.Path != "/v1/claims/team/c1/token" || body.TTLSeconds != 600:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"unexpected request ` + r.Method + " " + r.URL.Path + `","code":400}`))
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"token": "kbx1.abc", "expiresAt": expires, "claim": "c1", "namespace": "team"})
		}
	}))
	defer srv.Close()

	for name, tc := range map[string]struct {
		bearer    string
		wantToken string
		wantErr   error
	}{
		"minted":       {bearer: "kube-token", wantToken: "kbx1.abc"},
		"unauthorized": {bearer: "other", wantErr: ErrUnauthorized},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := New(&rest.Config{Host: "http://127.0.0.1:1", BearerToken: tc.bearer}, Options{Connection: ConnectRouter, RouterURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			tok, exp, err := c.MintClaimToken(t.Context(), "team", "c1", 10*time.Minute)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), "claim team/c1") {
					t.Errorf("MintClaimToken = %v; want %v naming the claim", err, tc.wantErr)
				}
				return
			}
			if err != nil || tok != tc.wantToken || !exp.Equal(expires) {
				t.Errorf("MintClaimToken = %q, %v, %v; want %q, %v", tok, exp, err, tc.wantToken, expires)
			}
		})
	}
}
