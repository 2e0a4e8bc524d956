package e2b

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestRequestToAPausedSandboxIsAnsweredAsE2BDoes: a request to the envd of a sandbox that is
// paused and that no request resumes (onTimeout pause without autoResume) gets E2B's own answer,
// 409 {"sandboxId", "message": "The sandbox is paused", "code": 409, "canAutoResume": false},
// with kubox's error saying how to resume it; the sandbox stays paused. A caller holding another
// sandbox's token learns nothing of it: refused as before, never told it is paused.
func TestRequestToAPausedSandboxIsAnsweredAsE2BDoes(t *testing.T) {
	f := setup(t)
	cl := f.pausingClaim(t, false)
	other := f.pausingClaim(t, false)
	id := cl.Name
	tok, otherTok := f.envdToken(t, id), f.envdToken(t, other.Name)
	suspendSandbox(t, f.ns, cl.Status.Sandbox.Name) // as its idle policy does at the timeout

	res := f.envd(t, http.MethodPost, id, "/process.Process/List", tok, []byte("{}"))
	b, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	var got struct {
		SandboxID     string `json:"sandboxId"`
		Message       string `json:"message"`
		Code          int    `json:"code"`
		CanAutoResume *bool  `json:"canAutoResume"`
		Error         string `json:"error"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("the answer to a request for the paused sandbox is not JSON (%v): %d %s", err, res.StatusCode, b)
	}
	if res.StatusCode != http.StatusConflict || got.Code != http.StatusConflict || got.Message != "The sandbox is paused" ||
		got.SandboxID != id || got.CanAutoResume == nil || *got.CanAutoResume {
		t.Errorf("a request for paused sandbox %s answered %d %s; want E2B's 409 \"The sandbox is paused\", sandboxId %s, canAutoResume false",
			id, res.StatusCode, b, id)
	}
	if !strings.Contains(got.Error, "Sandbox.connect('"+id+"')") {
		t.Errorf("the answer's error %q does not say how to resume the sandbox (Sandbox.connect)", got.Error)
	}
	if sb := framework.Read[sandboxv1beta1.Sandbox](t, env, f.ns, cl.Status.Sandbox.Name); sb.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeSuspended {
		t.Errorf("the refused request resumed Sandbox %s (operatingMode %s)", sb.Name, sb.Spec.OperatingMode)
	}

	// The attacks: no token, and the token of another sandbox.
	for name, tok := range map[string]string{"no token": "", "another sandbox's token": otherTok} {
		res := f.envd(t, http.MethodPost, id, "/process.Process/List", tok, []byte("{}"))
		b, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.StatusCode == http.StatusConflict || res.StatusCode < 400 || strings.Contains(string(b), "is paused") {
			t.Errorf("%s: a request for paused sandbox %s answered %d %s; want it refused without saying the sandbox is paused", name, id, res.StatusCode, b)
		}
	}
}

// envdToken is the envd access token of E2B sandbox id, as getInfo answers it.
func (f *fixture) envdToken(t *testing.T, id string) string {
	t.Helper()
	var d detail
	if code := f.api(t, f.apiKey, http.MethodGet, "/sandboxes/"+id, nil, &d); code != http.StatusOK || d.EnvdAccessToken == "" {
		t.Fatalf("getInfo of %s answered %d, envdAccessToken %q", id, code, d.EnvdAccessToken)
	}
	return d.EnvdAccessToken
}
