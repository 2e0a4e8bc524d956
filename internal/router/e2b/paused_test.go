package e2b

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/httperr"
)

// TestPausedErrorIsE2BsAnswer: a request for a paused sandbox that no request resumes is answered
// with E2B's 409 body, whatever paused it, and kubox's error names connect.
func TestPausedErrorIsE2BsAnswer(t *testing.T) {
	for name, sb := range map[string]*sandboxv1beta1.Sandbox{
		"pause()":                        {},
		"onTimeout pause, no autoResume": {Spec: sandboxv1beta1.SandboxSpec{SandboxBlueprint: sandboxv1beta1.SandboxBlueprint{IdlePolicy: &sandboxv1beta1.IdlePolicy{Wake: sandboxv1beta1.WakePolicyManual}}}},
	} {
		rec := httptest.NewRecorder()
		httperr.Write(rec, PausedError("e2b-abc", sb))
		var got map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("%s: %v: %s", name, err, rec.Body)
		}
		errMsg, _ := got["error"].(string)
		delete(got, "error")
		want := map[string]any{"sandboxId": "e2b-abc", "message": "The sandbox is paused", "code": float64(http.StatusConflict), "canAutoResume": false}
		if rec.Code != http.StatusConflict {
			t.Errorf("%s: status %d, want 409", name, rec.Code)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: body (-want +got):\n%s", name, diff)
		}
		if !strings.Contains(errMsg, "Sandbox.connect('e2b-abc')") {
			t.Errorf("%s: error %q does not name connect", name, errMsg)
		}
	}
}
