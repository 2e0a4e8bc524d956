package agent

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubox-dev/kubox/internal/agent/compat/pyruntime"
)

// The environment variables that set the compatibility port's limits when their flags are not
// given: a sandbox's pod template can set them on the agent's container, whose command the
// controller writes.
const (
	EnvCompatMaxOutputBytes = "KUBOX_COMPAT_MAX_OUTPUT_BYTES"
	EnvCompatMaxUploadBytes = "KUBOX_COMPAT_MAX_UPLOAD_BYTES"
)

// The flags of the compatibility port's limits, named in the errors the limits cause.
const (
	FlagCompatMaxOutputBytes = "compat-max-output-bytes"
	FlagCompatMaxUploadBytes = "compat-max-upload-bytes"
)

// The flag and environment variable of the grace period a command the agent ends itself gets
// between SIGTERM and SIGKILL to its process group (Config.StopGrace), on every process API.
const (
	FlagStopGrace = "stop-grace"
	EnvStopGrace  = "KUBOX_STOP_GRACE"
)

// DefaultCompatMaxOutputBytes bounds each output stream of python-runtime's /execute unless
// configured: 64 MiB, far beyond what a person reads, while an answer stays well within a
// sandbox's memory (the output is held, twice for a moment at the end, and streamed out).
const DefaultCompatMaxOutputBytes = pyruntime.DefaultMaxOutputBytes

// SizeFlag returns a flag value that sets *p to a size in bytes written as a Kubernetes
// quantity ("64Mi", "1G", "1048576"; "0" is no limit). *p stays nil while the flag is not given.
func SizeFlag(p **int64) pflag.Value { return sizeFlag{p} }

type sizeFlag struct{ p **int64 }

func (f sizeFlag) String() string {
	if f.p == nil || *f.p == nil {
		return ""
	}
	return strconv.FormatInt(**f.p, 10)
}

func (f sizeFlag) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*f.p = &n
	return nil
}

func (sizeFlag) Type() string { return "bytes" }

func parseSize(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size; write bytes or a quantity such as 64Mi or 1Gi (0: no limit)", s)
	}
	n, ok := q.AsInt64()
	if !ok || n < 0 {
		return 0, fmt.Errorf("%q is not a whole, non-negative number of bytes; write one such as 64Mi or 1Gi (0: no limit)", s)
	}
	return n, nil
}

// compatLimit is the limit set by flag (when given), else by the environment variable env, else
// def; 0 is no limit. An unreadable variable is an error naming it.
func compatLimit(flag *int64, env string, def int64, lookup func(string) (string, bool)) (int64, error) {
	if flag != nil {
		return *flag, nil
	}
	v, ok := lookup(env)
	if !ok || v == "" {
		return def, nil
	}
	n, err := parseSize(v)
	if err != nil {
		return 0, fmt.Errorf("$%s: %w", env, err)
	}
	return n, nil
}

// limitSetting names where a compatibility limit is set, for the errors it causes.
func limitSetting(flag, env string) string {
	return fmt.Sprintf("kubox-agent's --%s, or %s in the sandbox container's environment (0: no limit)", flag, env)
}

// pyruntimeLimit converts a limit of the agent's configuration (0: none) to pyruntime's
// (negative: none).
func pyruntimeLimit(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}

// DurationFlag returns a flag value that sets *p to a duration ("5s", "1m30s"). *p stays nil while
// the flag is not given, so an environment variable can set it instead.
func DurationFlag(p **time.Duration) pflag.Value { return durationFlag{p} }

type durationFlag struct{ p **time.Duration }

func (f durationFlag) String() string {
	if f.p == nil || *f.p == nil {
		return ""
	}
	return (**f.p).String()
}

func (f durationFlag) Set(s string) error {
	d, err := parseGrace(s)
	if err != nil {
		return err
	}
	*f.p = &d
	return nil
}

func (durationFlag) Type() string { return "duration" }

func parseGrace(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration; write one such as 5s, 500ms or 1m", s)
	}
	return d, nil
}

// durationSetting is the grace period set by flag (when given), else by the environment variable
// env, else def. An unreadable or non-positive value is an error naming where it was set.
func durationSetting(flag *time.Duration, flagName, env string, def time.Duration, lookup func(string) (string, bool)) (time.Duration, error) {
	if flag != nil {
		if *flag <= 0 {
			return 0, fmt.Errorf("--%s=%s: give a positive duration, such as 5s", flagName, *flag)
		}
		return *flag, nil
	}
	v, ok := lookup(env)
	if !ok || v == "" {
		return def, nil
	}
	d, err := parseGrace(v)
	if err != nil {
		return 0, fmt.Errorf("$%s in the sandbox container's environment: %w (or set --%s)", env, err, flagName)
	}
	return d, nil
}
