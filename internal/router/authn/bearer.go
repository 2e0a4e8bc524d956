package authn

import (
	"errors"
	"net/http"
	"strings"

	"github.com/kubox-dev/kubox/api/contract"
)

// BearerHeader returns the bearer token of h's Authorization header; "" when there is none. A
// request with two Authorization headers, or one of another scheme, is refused rather than
// guessed at.
func BearerHeader(h http.Header) (string, error) {
	values := h.Values(contract.AuthorizationHeader)
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", errors.New("the request has more than one Authorization header; send one: Authorization: Bearer <token>")
	}
	scheme, tok, _ := strings.Cut(strings.TrimSpace(values[0]), " ")
	tok = strings.TrimSpace(tok)
	if !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", errors.New("the Authorization header is not 'Bearer <token>'; the router accepts only bearer tokens")
	}
	return tok, nil
}
