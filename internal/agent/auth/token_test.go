package auth

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// secretVolume writes tok as the kubelet writes a Secret volume's key: token -> ..data/token,
// ..data -> a timestamped folder, swapped atomically on every update. It returns the token's path.
func secretVolume(t *testing.T, dir, version, tok string) string {
	t.Helper()
	folder := filepath.Join(dir, "..2026_"+version)
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "token"), []byte(tok), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(folder), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "token")
	if _, err := os.Lstat(path); os.IsNotExist(err) {
		if err := os.Symlink(filepath.Join("..data", "token"), path); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestWatchFileTakesTheNewTokenAndRefusesTheOld(t *testing.T) {
	dir := t.TempDir()
	source := strings.Repeat("s", MinTokenBytes)
	fork := strings.Repeat("f", MinTokenBytes)
	path := secretVolume(t, dir, "a", source)
	tok, err := WatchFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := Middleware(tok, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }), Options{})
	status := func(presented string) int {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer "+presented)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if got := status(source); got != http.StatusNoContent {
		t.Fatalf("the file's token: %d, want 204", got)
	}

	// A Pod restored from the checkpoint of another Sandbox mounts its own token at the path.
	secretVolume(t, dir, "b", fork)
	if got := status(fork); got != http.StatusNoContent {
		t.Errorf("the new token in the file: %d, want 204", got)
	}
	if got := status(source); got != http.StatusUnauthorized {
		t.Errorf("the token the file held before: %d, want 401", got)
	}

	// An update that is not a valid token leaves the last good one in force.
	secretVolume(t, dir, "c", "short")
	if !tok.Matches([]byte(fork)) || tok.Matches([]byte("short")) {
		t.Errorf("after an invalid update: matches the last good token %v, the invalid one %v; want true, false",
			tok.Matches([]byte(fork)), tok.Matches([]byte("short")))
	}
}

func TestWatchFileRefusesAnInvalidFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	if _, err := WatchFile(path); err == nil || !strings.Contains(err.Error(), "mount the sandbox's agent token Secret") {
		t.Errorf("a missing file: %v, want an error naming the fix", err)
	}
	if err := os.WriteFile(path, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := WatchFile(path); err == nil || !strings.Contains(err.Error(), "at least") {
		t.Errorf("a short token: %v, want an error saying how long it must be", err)
	}
}

func TestFixedToken(t *testing.T) {
	tok := Fixed([]byte(strings.Repeat("x", MinTokenBytes)))
	if !tok.Matches([]byte(strings.Repeat("x", MinTokenBytes))) || tok.Matches([]byte(strings.Repeat("x", MinTokenBytes+1))) || tok.Matches(nil) {
		t.Error("a fixed token matches only itself")
	}
}
