package auth

import "net/http"

// Transport is the client side of Middleware: an http.RoundTripper that adds
// "Authorization: Bearer <Token>" to every request, unary and streaming calls alike, and sends it
// through Base (http.DefaultTransport when nil). Use it as the Transport of the http.Client given
// to the agent's Connect clients, or for plain /files/ requests.
type Transport struct {
	Token string
	Base  http.RoundTripper
}

// RoundTrip implements http.RoundTripper. It does not change the caller's request.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.Token)
	return base.RoundTrip(r)
}

// Client returns an http.Client whose requests carry token.
func Client(token string) *http.Client { return &http.Client{Transport: &Transport{Token: token}} }
