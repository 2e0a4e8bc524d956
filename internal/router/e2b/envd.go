package e2b

import (
	"net/http"
	"strings"
	"time"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/claimtoken"
	"github.com/kubox-dev/kubox/internal/router/httperr"
)

// SandboxNamespace readies a request for "{port}-{id}.{Domain}", which the router forwards to
// port of the sandbox of claim id the way its /claims/ route does: authorized by the claim token
// E2B's SDKs send as envd's access token (X-Access-Token) or, where that is absent, as the
// traffic access token (E2B-Traffic-Access-Token, all @e2b/code-interpreter's context calls
// carry), made the request's bearer token here, or by any credential the router accepts in
// Authorization. It returns the claim's namespace: the claim token's, else def (the router's E2B
// namespace).
func SandboxNamespace(r *http.Request, def string, now time.Time) (string, *httperr.Error) {
	credentials(r)
	ns := def
	if c, err := claimtoken.Peek(strings.TrimPrefix(r.Header.Get(contract.AuthorizationHeader), contract.BearerScheme+" "), now); err == nil {
		ns = c.Namespace
	}
	if ns == "" {
		return "", httperr.Errorf(http.StatusUnauthorized,
			"send the sandbox's envd access token (the envdAccessToken E2B's API answered) in %s, or its trafficAccessToken in %s",
			contract.E2BAccessTokenHeader, contract.E2BTrafficAccessTokenHeader)
	}
	return ns, nil
}

// credentials makes the access token E2B's SDKs send the request's bearer token: envd's
// (X-Access-Token), else the traffic access token (E2B-Traffic-Access-Token), the same claim
// token, which @e2b/code-interpreter sends alone on its context calls. Neither is forwarded to
// the sandbox. The SDKs also send `Authorization: Basic <user>:` to name a user, which no sandbox
// of kubox reads.
func credentials(r *http.Request) {
	h := r.Header
	tok := h.Get(contract.E2BAccessTokenHeader)
	if tok == "" {
		tok = h.Get(contract.E2BTrafficAccessTokenHeader)
	}
	h.Del(contract.E2BTrafficAccessTokenHeader)
	if tok != "" {
		h.Set(contract.AuthorizationHeader, contract.BearerScheme+" "+tok)
		h.Del(contract.E2BAccessTokenHeader)
		return
	}
	if scheme, _, _ := strings.Cut(h.Get(contract.AuthorizationHeader), " "); strings.EqualFold(scheme, "Basic") {
		h.Del(contract.AuthorizationHeader)
	}
}

// EnvdToken gives a request for envd's port or the code interpreter's of sb, which kubox-agent
// serves, the sandbox's agent token as envd's access token (X-Access-Token), and returns it for
// the proxy to put in Authorization too; "" (and r unchanged) for any other port. The caller
// never holds it.
func EnvdToken(r *http.Request, port int, sb *sandboxv1beta1.Sandbox, key []byte) string {
	if (port != contract.E2BEnvdPort && port != contract.E2BCodeInterpreterPort) || sb.Spec.Agent == nil {
		return ""
	}
	tok := contract.DeriveAgentToken(key, sb.UID)
	r.Header.Set(contract.E2BAccessTokenHeader, tok)
	return tok
}

// e2bPausedMessage is the message of E2B's answer to a request for a paused sandbox that no
// request resumes.
const e2bPausedMessage = "The sandbox is paused"

// e2bPausedBody is the body of that answer, in E2B's shape (its proxy's sandbox-paused error), with
// kubox's error beside it saying how to resume.
type e2bPausedBody struct {
	SandboxID     string `json:"sandboxId"`
	Message       string `json:"message"`
	Code          int    `json:"code"`
	CanAutoResume bool   `json:"canAutoResume"`
	Error         string `json:"error"`
}

// PausedError is the answer to a request for "{port}-{id}.{Domain}" whose sandbox sb is paused
// (suspended) and is not resumed by requests: E2B's 409 "The sandbox is paused", which E2B's
// SDKs raise as a SandboxError, not kubox's 503 of the /claims/ route, which they would take for
// a passing outage. Only a caller the router admitted to the sandbox gets it.
func PausedError(id string, sb *sandboxv1beta1.Sandbox) *httperr.Error {
	why := "it pauses at its timeout without lifecycle.autoResume"
	if sb.Spec.IdlePolicy == nil {
		why = "pause() paused it"
	}
	herr := httperr.Errorf(http.StatusConflict, "sandbox %s is paused (%s), so a request does not resume it: resume it with "+
		"Sandbox.connect('%s') (E2B's SDK; POST /sandboxes/%s/connect), then retry", id, why, id, id)
	herr.Body = e2bPausedBody{SandboxID: id, Message: e2bPausedMessage, Code: http.StatusConflict, Error: herr.Msg}
	return herr
}
