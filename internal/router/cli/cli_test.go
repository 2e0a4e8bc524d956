package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRefusesToStartWithoutAKey(t *testing.T) {
	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte("too short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args []string
		want []string
	}{
		"no flag":   {args: nil, want: []string{"--agent-token-key-file is required", "head -c 48 /dev/urandom"}},
		"short key": {args: []string{"--agent-token-key-file", short}, want: []string{"--agent-token-key-file", "at least 32"}},
		"missing":   {args: []string{"--agent-token-key-file", filepath.Join(t.TempDir(), "nope")}, want: []string{"--agent-token-key-file", "no such file"}},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := NewCommand()
			cmd.SetArgs(tc.args)
			err := cmd.Execute()
			if err == nil {
				t.Fatal("the router started without a usable key")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestSharedTokenFromFileOrEnvironment(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(file, []byte(strings.Repeat("f", 40)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envSharedToken, strings.Repeat("e", 40))
	if tok, err := sharedToken(file); err != nil || string(tok) != strings.Repeat("f", 40) {
		t.Errorf("from the file: %q, %v", tok, err)
	}
	if tok, err := sharedToken(""); err != nil || string(tok) != strings.Repeat("e", 40) {
		t.Errorf("from $%s: %q, %v", envSharedToken, tok, err)
	}
	t.Setenv(envSharedToken, "short")
	if _, err := sharedToken(""); err == nil {
		t.Error("a 5-byte shared token was accepted")
	}
}

func TestHelpNamesPathRoutingFlags(t *testing.T) {
	cmd := NewCommand()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"--path-routing-prefix", "--path-routing-rewrite-responses", "kubox-session"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("--help does not mention %s", f)
		}
	}
}
