package cli

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// flags parses args as kubox-agent's command line and returns the options they set.
func flags(t *testing.T, args ...string) *options {
	t.Helper()
	o := &options{}
	if err := newCommand(o).ParseFlags(args); err != nil {
		t.Fatalf("parsing %v: %v", args, err)
	}
	return o
}

func TestRefusesToStartWithoutAToken(t *testing.T) {
	t.Setenv("KUBOX_AGENT_TOKEN", "")
	o := flags(t, "--compat-port=0")
	err := o.complete(discard())
	if err == nil || !strings.Contains(err.Error(), "--insecure-no-auth") || !strings.Contains(err.Error(), "--token-file") {
		t.Fatalf("complete without a token = %v; want an error naming --token-file and --insecure-no-auth", err)
	}
	if err := flags(t, "--compat-port=0", "--insecure-no-auth").complete(discard()); err != nil {
		t.Errorf("--insecure-no-auth: %v, want it to start", err)
	}
}

func TestLoadsTheTokenAndCreatesTheCompatibilityDirectories(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	tok := strings.Repeat("t", 43)
	if err := os.WriteFile(tokenFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	app, ws := filepath.Join(dir, "app"), filepath.Join(dir, "workspace")
	o := flags(t, "--token-file="+tokenFile, "--compat-base-dir="+app, "--sandboxd-root="+ws, "--compat-auth=disabled")
	if err := o.complete(discard()); err != nil {
		t.Fatalf("complete: %v", err)
	}
	if o.cfg.Token == nil || !o.cfg.Token.Matches([]byte(tok)) || o.cfg.CompatAuth {
		t.Errorf("token matches the file's: %v, compatAuth %v; want the file's token and compatibility auth off",
			o.cfg.Token != nil && o.cfg.Token.Matches([]byte(tok)), o.cfg.CompatAuth)
	}
	for _, d := range []string{app, ws} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("%s not created: %v", d, err)
		}
	}
	if err := flags(t, "--token-file="+tokenFile, "--compat-auth=maybe").complete(discard()); err == nil {
		t.Error("--compat-auth=maybe accepted")
	}
}

func TestTheTokenVariableIsNotInherited(t *testing.T) {
	tok := strings.Repeat("e", 43)
	t.Setenv("KUBOX_AGENT_TOKEN", tok)
	o := flags(t, "--compat-port=0")
	if err := o.complete(discard()); err != nil {
		t.Fatalf("complete: %v", err)
	}
	if o.cfg.Token == nil || !o.cfg.Token.Matches([]byte(tok)) {
		t.Fatal("the token is not the variable's")
	}
	if v, set := os.LookupEnv("KUBOX_AGENT_TOKEN"); set {
		t.Errorf("KUBOX_AGENT_TOKEN=%q is still in the environment the agent's processes inherit", v)
	}
}

// The sandbox's name, which the refusal of writes during a suspend names, is the Pod's host name
// unless --sandbox-name says otherwise.
func TestTheSandboxNameDefaultsToTheHostName(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	if got := flags(t).cfg.SandboxName; got != host {
		t.Errorf("default sandbox name %q, want the host name %q", got, host)
	}
	if got := flags(t, "--sandbox-name=alice").cfg.SandboxName; got != "alice" {
		t.Errorf("--sandbox-name=alice gave %q", got)
	}
}

// --stop-grace takes a positive duration and is left unset (for $KUBOX_STOP_GRACE) when not given.
func TestStopGraceFlag(t *testing.T) {
	if got := flags(t).cfg.StopGrace; got != nil {
		t.Errorf("without --stop-grace the setting is %s, want it unset so the environment can set it", *got)
	}
	if got := flags(t, "--stop-grace=2s").cfg.StopGrace; got == nil || *got != 2*time.Second {
		t.Errorf("--stop-grace=2s gave %v", got)
	}
	for _, bad := range []string{"0", "-1s", "soon"} {
		if err := newCommand(&options{}).ParseFlags([]string{"--stop-grace=" + bad}); err == nil || !strings.Contains(err.Error(), "positive duration") {
			t.Errorf("--stop-grace=%s: %v, want an error asking for a positive duration", bad, err)
		}
	}
}
