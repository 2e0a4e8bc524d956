package settings

import (
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"

	"github.com/kubox-dev/kubox/internal/agent/files"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
)

// newStore returns a Store over a confined root in a temporary directory, and that directory.
func newStore(t *testing.T, base ...string) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	root, err := files.NewRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = root.Close() })
	return NewStore(base, root, slog.New(slog.NewTextHandler(io.Discard, nil))), dir
}

func request(uid string, env map[string]string, fs ...*agentv1.SettingsFile) *agentv1.ApplySettingsRequest {
	req := &agentv1.ApplySettingsRequest{ClaimUid: uid, Files: fs}
	for _, k := range sortedKeys(env) {
		req.Env = append(req.Env, &agentv1.EnvVar{Name: k, Value: env[k]})
	}
	return req
}

func sortedKeys(m map[string]string) []string {
	ks := slices.Collect(maps.Keys(m))
	slices.Sort(ks)
	return ks
}

func TestApplySetsEnvironAndWritesFiles(t *testing.T) {
	s, dir := newStore(t, "PATH=/bin", "A=image", "B=image")
	err := s.Apply(request("uid-1", map[string]string{"B": "claim", "C": "claim"},
		&agentv1.SettingsFile{Path: "/etc/claim/token", Content: []byte("secret")},
		&agentv1.SettingsFile{Path: "/etc/claim/config", Content: []byte("x"), Mode: 0o640}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"PATH=/bin", "A=image", "B=claim", "C=claim"}, s.Environ()); diff != "" {
		t.Errorf("Environ (-want +got):\n%s", diff)
	}
	for name, want := range map[string]os.FileMode{"token": DefaultFileMode, "config": 0o640} {
		p := filepath.Join(dir, "etc", "claim", name)
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %v", p, fi, err, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "etc", "claim", "token")); string(b) != "secret" {
		t.Errorf("token holds %q, want %q", b, "secret")
	}
}

func TestApplyServesOneClaim(t *testing.T) {
	s, _ := newStore(t, "PATH=/bin")
	first := request("uid-1", map[string]string{"A": "1"}, &agentv1.SettingsFile{Path: "/f", Content: []byte("1")})
	if err := s.Apply(first); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(request("uid-1", map[string]string{"A": "1"}, &agentv1.SettingsFile{Path: "/f", Content: []byte("1")})); err != nil {
		t.Errorf("the same request again (a retry): %v, want it accepted", err)
	}
	err := s.Apply(request("uid-2", map[string]string{"A": "2"}))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "uid-1") {
		t.Errorf("another claim's settings: %v, want FailedPrecondition naming uid-1", err)
	}
	if diff := cmp.Diff([]string{"PATH=/bin", "A=1"}, s.Environ()); diff != "" {
		t.Errorf("Environ after the refused request (-want +got):\n%s", diff)
	}
	if err := s.Apply(request("uid-1", map[string]string{"A": "changed"})); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"PATH=/bin", "A=changed"}, s.Environ()); diff != "" {
		t.Errorf("Environ after the claim's changed settings (-want +got):\n%s", diff)
	}
}

func TestApplyRejectsBadRequests(t *testing.T) {
	file := func(p string, mode uint32) *agentv1.SettingsFile {
		return &agentv1.SettingsFile{Path: p, Mode: mode}
	}
	cases := map[string]struct {
		req  *agentv1.ApplySettingsRequest
		want string
	}{
		"no claim uid":     {req: request("", nil), want: "claim_uid"},
		"name with =":      {req: request("u", map[string]string{"A=B": "x"}), want: `env[0].name "A=B"`},
		"empty name":       {req: request("u", map[string]string{"": "x"}), want: "env[0].name"},
		"unprintable name": {req: request("u", map[string]string{"A\tB": "x"}), want: "printable"},
		"NUL in value":     {req: request("u", map[string]string{"A": "x\x00"}), want: "NUL"},
		"relative path":    {req: request("u", nil, file("etc/x", 0)), want: "files[0].path"},
		"unclean path":     {req: request("u", nil, file("/etc/../x", 0)), want: "files[0].path"},
		"trailing slash":   {req: request("u", nil, file("/etc/x/", 0)), want: "files[0].path"},
		"root":             {req: request("u", nil, file("/", 0)), want: "files[0].path"},
		"setuid mode":      {req: request("u", nil, file("/x", 0o4755)), want: "files[0].mode"},
		"same path twice":  {req: request("u", nil, file("/x", 0), file("/x", 0)), want: "files[1]"},
		"same name twice":  {req: &agentv1.ApplySettingsRequest{ClaimUid: "u", Env: []*agentv1.EnvVar{{Name: "A"}, {Name: "A"}}}, want: "env[1]"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, dir := newStore(t)
			err := s.Apply(tc.req)
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Apply: %v, want InvalidArgument naming %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("a refused request wrote %v", entries)
			}
			if err := s.Apply(request("other", nil)); err != nil {
				t.Errorf("after a refused request, another claim's settings: %v, want them accepted", err)
			}
		})
	}
}

func TestApplyReportsAFileItCannotWrite(t *testing.T) {
	s, dir := newStore(t, "PATH=/bin")
	if err := os.WriteFile(filepath.Join(dir, "taken"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := s.Apply(request("u", map[string]string{"A": "1"}, &agentv1.SettingsFile{Path: "/taken/key", Content: []byte("x")}))
	if connect.CodeOf(err) != connect.CodeInternal || !strings.Contains(err.Error(), "/taken/key") {
		t.Errorf("Apply: %v, want Internal naming /taken/key", err)
	}
	if diff := cmp.Diff([]string{"PATH=/bin"}, s.Environ()); diff != "" {
		t.Errorf("Environ after the failed request (-want +got):\n%s", diff)
	}
}
