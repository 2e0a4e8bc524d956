package pyruntime

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The environment variables python-runtime reads.
const (
	// EnvBaseDir names the base directory.
	EnvBaseDir = "SANDBOX_BASE_DIR"
	// EnvExecTimeout is the command timeout in seconds, a decimal number such as 300 or 2.5.
	EnvExecTimeout = "SANDBOX_EXEC_TIMEOUT_SECONDS"
)

// LoadEnv sets BaseDir and ExecTimeout from python-runtime's environment variables, where
// lookup (os.LookupEnv) finds them set and not empty. A timeout that is not a positive number of
// seconds is an error naming the variable.
func (o *Options) LoadEnv(lookup func(string) (string, bool)) error {
	if v, ok := lookup(EnvBaseDir); ok && v != "" {
		o.BaseDir = v
	}
	v, ok := lookup(EnvExecTimeout)
	if !ok || strings.TrimSpace(v) == "" {
		return nil
	}
	seconds, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(seconds) || seconds <= 0 || seconds > math.MaxInt64/float64(time.Second) {
		return fmt.Errorf("%s=%q is not a positive number of seconds; set it to, for example, 300", EnvExecTimeout, v)
	}
	o.ExecTimeout = time.Duration(seconds * float64(time.Second))
	return nil
}
