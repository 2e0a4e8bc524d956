package version

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/kubox-dev/kubox", Version: "v0.0.0-20261202170000-868df99abcde+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "-trimpath", Value: "true"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "868df99abcdef0123456789abcdef0123456789a"},
			{Key: "vcs.time", Value: "2026-12-02T16:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	goFields := func(i Info) Info {
		i.GoVersion, i.Compiler, i.Platform = runtime.Version(), runtime.Compiler, runtime.GOOS+"/"+runtime.GOARCH
		return i
	}
	cases := map[string]struct {
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		"linker flags win over build info": {
			version: "v0.1.0", commit: "abc", date: "2026-12-24T00:00:00Z", bi: vcs,
			want: goFields(Info{GitVersion: "v0.1.0", GitCommit: "abc", BuildDate: "2026-12-24T00:00:00Z"}),
		},
		"build info fills what the linker left empty": {
			version: "v0.1.0", bi: vcs,
			want: goFields(Info{
				GitVersion: "v0.1.0",
				GitCommit:  "868df99abcdef0123456789abcdef0123456789a",
				BuildDate:  "2026-12-02T16:00:00Z",
			}),
		},
		"module pseudo-version when no linker version": {
			bi: vcs,
			want: goFields(Info{
				GitVersion: "v0.0.0-20261202170000-868df99abcde+dirty",
				GitCommit:  "868df99abcdef0123456789abcdef0123456789a",
				BuildDate:  "2026-12-02T16:00:00Z",
			}),
		},
		"devel build without vcs stamping": {
			bi:   &debug.BuildInfo{Main: debug.Module{Path: "github.com/kubox-dev/kubox", Version: "(devel)"}},
			want: goFields(Info{GitVersion: Unknown, GitCommit: Unknown, BuildDate: Unknown}),
		},
		"no build info": {
			want: goFields(Info{GitVersion: Unknown, GitCommit: Unknown, BuildDate: Unknown}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := resolve(tc.version, tc.commit, tc.date, tc.bi)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("resolve() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGetHasNoEmptyField(t *testing.T) {
	got := Get()
	for name, v := range map[string]string{
		"GitVersion": got.GitVersion, "GitCommit": got.GitCommit, "BuildDate": got.BuildDate,
		"GoVersion": got.GoVersion, "Compiler": got.Compiler, "Platform": got.Platform,
	} {
		if v == "" {
			t.Errorf("Get().%s is empty; want a value or %q", name, Unknown)
		}
	}
}
