package contract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestDeriveAgentToken(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	a := DeriveAgentToken(key, types.UID("uid-a"))
	if len(a) != 43 {
		t.Errorf("token %q has %d characters, want 43 (unpadded base64url of 32 bytes)", a, len(a))
	}
	if a != DeriveAgentToken(key, types.UID("uid-a")) {
		t.Error("DeriveAgentToken is not deterministic")
	}
	if a == DeriveAgentToken(key, types.UID("uid-b")) {
		t.Error("two UIDs got the same token")
	}
	if a == DeriveAgentToken([]byte(strings.Repeat("x", 32)), types.UID("uid-a")) {
		t.Error("two keys gave the same token")
	}
	// The derivation is a wire contract between releases of the controller and the router: a
	// fixed input keeps its token.
	if got, want := DeriveAgentToken(key, types.UID("uid-a")), derivedForUIDA; got != want {
		t.Errorf("DeriveAgentToken(k*32, uid-a) = %q; want %q (did the derivation change?)", got, want)
	}
}

func TestLoadAgentTokenKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	long := strings.Repeat("s", 40)
	key, err := LoadAgentTokenKey(write("ok", long+"\n"))
	if err != nil || string(key) != long {
		t.Errorf("LoadAgentTokenKey = %q, %v; want the key without its newline", key, err)
	}
	if _, err := LoadAgentTokenKey(write("short", "tiny\n")); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Errorf("short key: error %v, want one saying it needs at least 32 bytes", err)
	}
	if _, err := LoadAgentTokenKey(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file: no error")
	}
}

// derivedForUIDA is DeriveAgentToken(32 × "k", "uid-a"), as released.
const derivedForUIDA = "XvvCEkeBx_BqJkSY2T8YfeTz34kHay3oTfWrDl9HE98"
