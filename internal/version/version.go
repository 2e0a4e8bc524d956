// Package version reports what build of kubox is running.
//
// Release builds set the values with the linker:
//
//	go build -ldflags "-X github.com/kubox-dev/kubox/internal/version.gitVersion=v0.1.0 \
//	  -X github.com/kubox-dev/kubox/internal/version.gitCommit=$(git rev-parse HEAD) \
//	  -X github.com/kubox-dev/kubox/internal/version.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
//
// A plain `go build` inside the git checkout still reports something useful: the Go toolchain
// stamps the binary with the module version and the VCS revision and commit time, and Get falls
// back to those.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set with -ldflags -X; empty means "take it from the build info".
var (
	gitVersion string
	gitCommit  string
	buildDate  string
)

// Unknown is reported for a value neither the linker flags nor the build info provide.
const Unknown = "unknown"

// Info describes a build.
type Info struct {
	// GitVersion is the release version (v0.1.0) or the Go pseudo-version of the checkout.
	GitVersion string
	// GitCommit is the full commit hash the binary was built from.
	GitCommit string
	// BuildDate is when the binary was built (RFC 3339, UTC). Without -ldflags it is the commit
	// time, the closest reproducible value the toolchain records.
	BuildDate string
	// GoVersion is the Go toolchain version (go1.26.8).
	GoVersion string
	// Compiler is the Go compiler (gc).
	Compiler string
	// Platform is GOOS/GOARCH.
	Platform string
}

// String formats the build for `--version` output and logs.
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, built %s, %s %s %s)",
		i.GitVersion, i.GitCommit, i.BuildDate, i.GoVersion, i.Compiler, i.Platform)
}

// Get returns the running binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo() // nil when the binary was built without module support
	return resolve(gitVersion, gitCommit, buildDate, bi)
}

// resolve prefers the linker-provided values and fills the rest from the build info.
func resolve(version, commit, date string, bi *debug.BuildInfo) Info {
	if bi != nil {
		if version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if commit == "" {
					commit = s.Value
				}
			case "vcs.time":
				if date == "" {
					date = s.Value
				}
			}
		}
	}
	return Info{
		GitVersion: orUnknown(version),
		GitCommit:  orUnknown(commit),
		BuildDate:  orUnknown(date),
		GoVersion:  runtime.Version(),
		Compiler:   runtime.Compiler,
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
}

func orUnknown(s string) string {
	if s == "" {
		return Unknown
	}
	return s
}
