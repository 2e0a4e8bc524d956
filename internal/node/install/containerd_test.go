package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const cfgPath = "etc/containerd/config.toml"

func hostWith(t *testing.T, config string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, cfgPath), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func read(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInstallUninstallRestoresBytes(t *testing.T) {
	cases := map[string]struct {
		config      string
		wantImports string
	}{
		"no imports": {
			config:      "version = 3\n\n[plugins.'io.containerd.cri.v1.runtime']\n  enable_selinux = false\n",
			wantImports: `imports = ["/opt/kubox/etc/containerd-kubox-runsc.toml"]`,
		},
		"existing imports": {
			config:      "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n\n[plugins]\n",
			wantImports: `imports = ["/etc/containerd/conf.d/*.toml", "/opt/kubox/etc/containerd-kubox-runsc.toml"]`,
		},
		"empty imports": {
			config:      "version = 3\nimports = []\n",
			wantImports: `imports = ["/opt/kubox/etc/containerd-kubox-runsc.toml"]`,
		},
		"no trailing newline": {
			config:      "version = 3",
			wantImports: `imports = ["/opt/kubox/etc/containerd-kubox-runsc.toml"]`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := hostWith(t, tc.config)
			c := Containerd{HostRoot: root}
			for i := 0; i < 2; i++ { // the second install changes nothing
				changed, err := c.Install()
				if err != nil {
					t.Fatalf("install %d: %v", i, err)
				}
				if want := i == 0; changed != want {
					t.Errorf("install %d: changed = %v, want %v", i, changed, want)
				}
			}
			got := read(t, root, cfgPath)
			if n := strings.Count(got, "containerd-kubox-runsc.toml"); n != 1 {
				t.Errorf("config names the drop-in %d times, want 1:\n%s", n, got)
			}
			if !strings.Contains(got, tc.wantImports+"\n") {
				t.Errorf("config lacks %q:\n%s", tc.wantImports, got)
			}
			if strings.Index(got, "imports") > strings.Index(got+"[", "[plugins") && strings.Contains(got, "[plugins") {
				t.Errorf("imports is not a top-level key:\n%s", got)
			}
			drop := read(t, root, "opt/kubox/etc/containerd-kubox-runsc.toml")
			for _, want := range []string{
				"[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kubox-runsc]",
				`runtime_type = "io.containerd.runsc.v1"`,
				`runtime_path = "/opt/kubox/bin/containerd-shim-runsc-v1"`,
				`ConfigPath = "/opt/kubox/etc/runsc.toml"`,
			} {
				if !strings.Contains(drop, want) {
					t.Errorf("drop-in lacks %q:\n%s", want, drop)
				}
			}
			if err := c.Uninstall(); err != nil {
				t.Fatalf("uninstall: %v", err)
			}
			if diff := cmp.Diff(tc.config, read(t, root, cfgPath)); diff != "" {
				t.Errorf("config after uninstall (-want +got):\n%s", diff)
			}
			if _, err := os.Stat(filepath.Join(root, "opt/kubox/etc/containerd-kubox-runsc.toml")); !os.IsNotExist(err) {
				t.Errorf("drop-in still present after uninstall: %v", err)
			}
			if err := c.Uninstall(); err != nil { // nothing left to undo
				t.Errorf("second uninstall: %v", err)
			}
		})
	}
}

// TestInstallRefusesSymlinks: a link planted where the installer writes (the
// containerd config, its folder, kubox's own folder) is refused, never followed.
func TestInstallRefusesSymlinks(t *testing.T) {
	cases := map[string]struct {
		plant func(t *testing.T, root, victim string)
	}{
		"config is a link": {plant: func(t *testing.T, root, victim string) {
			must(t, os.Remove(filepath.Join(root, cfgPath)))
			must(t, os.Symlink(victim, filepath.Join(root, cfgPath)))
		}},
		"kubox dir is a link": {plant: func(t *testing.T, root, victim string) {
			must(t, os.Symlink(filepath.Dir(victim), filepath.Join(root, "opt/kubox")))
		}},
		"drop-in is a link": {plant: func(t *testing.T, root, victim string) {
			must(t, os.MkdirAll(filepath.Join(root, "opt/kubox/etc"), 0o755))
			must(t, os.Symlink(victim, filepath.Join(root, "opt/kubox/etc/containerd-kubox-runsc.toml")))
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			const original = "version = 3\n"
			root := hostWith(t, original)
			must(t, os.MkdirAll(filepath.Join(root, "opt"), 0o755))
			outside := t.TempDir()
			victim := filepath.Join(outside, "victim")
			must(t, os.WriteFile(victim, []byte("secret"), 0o600))
			tc.plant(t, root, victim)
			if _, err := (Containerd{HostRoot: root}).Install(); err == nil {
				t.Fatal("install followed a planted link, want an error")
			}
			if got := read(t, outside, "victim"); got != "secret" {
				t.Errorf("victim = %q, want untouched", got)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
