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
		// unchanged: containerd's config already names the drop-in; install leaves it as it is
		unchanged bool
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
		"one-line imports with a comment": {
			config:      "version = 3\nimports = []   # never pick up the host's conf.d\n[plugins]\n",
			wantImports: `imports = ["/opt/kubox/etc/containerd-kubox-runsc.toml"]   # never pick up the host's conf.d`,
		},
		"multi-line imports": {
			config:      "version = 3\nimports = [\n  \"/etc/containerd/conf.d/*.toml\",\n  '/etc/x.toml' # x, ]\n]\n[plugins]\n",
			wantImports: `  '/etc/x.toml', "/opt/kubox/etc/containerd-kubox-runsc.toml" # x, ]`,
		},
		"multi-line imports with a trailing comma": {
			config:      "version = 3\nimports = [\n  \"/a.toml\",\n]\n",
			wantImports: `  "/a.toml", "/opt/kubox/etc/containerd-kubox-runsc.toml",`,
		},
		"multi-line imports already naming the drop-in": {
			config:      "version = 3\nimports = [\n  \"/opt/kubox/etc/containerd-kubox-runsc.toml\",\n]\n",
			wantImports: `  "/opt/kubox/etc/containerd-kubox-runsc.toml",`,
			unchanged:   true,
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
			if tc.unchanged {
				if diff := cmp.Diff(tc.config, got); diff != "" {
					t.Errorf("install edited a config that already names the drop-in (-want +got):\n%s", diff)
				}
			}
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
		"containerd's folder is a link": {plant: func(t *testing.T, root, victim string) {
			must(t, os.Rename(filepath.Join(root, "etc/containerd"), filepath.Join(filepath.Dir(victim), "containerd")))
			must(t, os.Symlink(filepath.Join(filepath.Dir(victim), "containerd"), filepath.Join(root, "etc/containerd")))
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
			before := tree(t, outside)
			if _, err := (Containerd{HostRoot: root}).Install(); err == nil {
				t.Fatal("install followed a planted link, want an error")
			}
			if diff := cmp.Diff(before, tree(t, outside)); diff != "" {
				t.Errorf("files outside the host root changed (-before +after):\n%s", diff)
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

// tree maps every file below dir to its contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		files[p] = string(b)
		return err
	})
	must(t, err)
	return files
}

// TestInstallRefusesUnreadableImports: an imports kubox-node cannot read exactly is refused,
// naming the file, and left as it was; the installer never guesses.
func TestInstallRefusesUnreadableImports(t *testing.T) {
	cases := map[string]string{
		"not an array":      "version = 3\nimports = \"/etc/x.toml\"\n",
		"not closed":        "version = 3\nimports = [\"/etc/x.toml\"\n",
		"not a string":      "version = 3\nimports = [1]\n",
		"multi-line string": "version = 3\nimports = [\"\"\"/etc/x.toml\"\"\"]\n",
		"unterminated":      "version = 3\nimports = [\"/etc/x.toml]\n",
	}
	for name, config := range cases {
		t.Run(name, func(t *testing.T) {
			root := hostWith(t, config)
			_, err := (Containerd{HostRoot: root}).Install()
			if err == nil || !strings.Contains(err.Error(), "/etc/containerd/config.toml") {
				t.Fatalf("install: %v, want an error naming /etc/containerd/config.toml", err)
			}
			if diff := cmp.Diff(config, read(t, root, cfgPath)); diff != "" {
				t.Errorf("config changed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunscConfig: the shim's options name kubox's runsc, the snapshot folder and key, and
// runsc's root only when kubox-node uses another than the shim's default.
func TestRunscConfig(t *testing.T) {
	cases := map[string]struct {
		c        Containerd
		want     []string
		wantNone string
	}{
		"default root": {
			c:        Containerd{SnapshotRoot: "/var/lib/kubox/snapshots", ManifestKey: "/k"},
			want:     []string{`binary_name = "/opt/kubox/bin/runsc"`, `kubox_snapshot_root = "/var/lib/kubox/snapshots"`, `kubox_manifest_key = "/k"`},
			wantNone: "root =",
		},
		"another root": {
			c:    Containerd{SnapshotRoot: "/s", ManifestKey: "/k", RunscRoot: "/var/lib/kubox-dev/containerd/runsc"},
			want: []string{`root = "/var/lib/kubox-dev/containerd/runsc"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.c.RunscConfig()
			for _, w := range tc.want {
				if !strings.Contains(got, w+"\n") {
					t.Errorf("runsc.toml lacks %q:\n%s", w, got)
				}
			}
			if tc.wantNone != "" && strings.Contains(got, "\n"+tc.wantNone) {
				t.Errorf("runsc.toml has %q:\n%s", tc.wantNone, got)
			}
		})
	}
}
