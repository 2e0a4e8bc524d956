package pyruntime

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// closedGate refuses every write, as the agent's gate does once it shuts down.
type closedGate struct{}

func (closedGate) BeginWrite() (func(), error) {
	return nil, errors.New("sandbox sb is suspending; retry after it resumes")
}

func TestUploadIsRefusedWhileTheAgentShutsDown(t *testing.T) {
	fx := newFixture(t)
	h := fx.handler(t, &fakeRunner{}, Options{Writes: closedGate{}})
	ct, body := multipartBody("new.txt", "data")
	checkResponse(t, post(h, "/upload", ct, body), response{http.StatusServiceUnavailable,
		`{"message":"File upload failed: sandbox sb is suspending; retry after it resumes"}`, jsonType})
	if _, err := os.Stat(filepath.Join(fx.base, "new.txt")); err == nil {
		t.Error("the refused upload wrote its file")
	}
}
