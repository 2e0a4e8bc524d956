package token

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestDerive(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	a := Derive(key, types.UID("uid-a"))
	if len(a) != 43 {
		t.Errorf("token %q has %d characters, want 43 (unpadded base64url of 32 bytes)", a, len(a))
	}
	if a != Derive(key, types.UID("uid-a")) {
		t.Error("Derive is not deterministic")
	}
	if a == Derive(key, types.UID("uid-b")) {
		t.Error("two UIDs got the same token")
	}
	if a == Derive([]byte(strings.Repeat("x", 32)), types.UID("uid-a")) {
		t.Error("two keys gave the same token")
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	long := strings.Repeat("s", 40)
	key, err := LoadKey(write("ok", long+"\n"))
	if err != nil || string(key) != long {
		t.Errorf("LoadKey = %q, %v; want the key without its newline", key, err)
	}
	if _, err := LoadKey(write("short", "tiny\n")); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Errorf("short key: error %v, want one saying it needs at least 32 bytes", err)
	}
	if _, err := LoadKey(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file: no error")
	}
}
