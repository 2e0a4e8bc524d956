package framework

import (
	"os"
	"strings"
)

// HostInterpretersFirst is os.Environ() with /usr/bin and /bin first on PATH, for an agent's
// Process.Env: the code interpreter's python3 is then the host's Debian one, with matplotlib
// (`make python-deps`, as test/integration/codeinterp uses), not one a version manager puts
// first on the caller's PATH. The rest of the environment is kept as it is.
func HostInterpretersFirst() []string {
	out := []string{"PATH=/usr/bin:/bin:" + os.Getenv("PATH")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			out = append(out, kv)
		}
	}
	return out
}
