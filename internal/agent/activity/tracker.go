package activity

import (
	"net/http"
	"sync"
	"time"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// IgnoredPaths are the request paths that are not activity: kubelet's probes (the agent's
// health, python-runtime's "/", sandboxd's health, envd's health, which E2B's isRunning calls)
// and the controller's own GetActivity call. The agent wraps a port's handler in the Tracker
// only behind its authentication, so a refused request is never activity either.
var IgnoredPaths = []string{
	"/", contract.AgentHealthPath, contract.SandboxdHealthPath, contract.E2BHealthPath,
	agentv1connect.ActivityServiceGetActivityProcedure,
}

// Tracker records the requests the agent serves: the last time one started or ended, and how
// many are open. It is safe for concurrent use.
type Tracker struct {
	now     func() time.Time
	ignored map[string]bool

	mu   sync.Mutex
	last time.Time
	open int
}

// NewTracker returns a Tracker that ignores IgnoredPaths; now is the clock (nil: time.Now).
func NewTracker(now func() time.Time) *Tracker {
	if now == nil {
		now = time.Now
	}
	t := &Tracker{now: now, ignored: make(map[string]bool, len(IgnoredPaths))}
	for _, p := range IgnoredPaths {
		t.ignored[p] = true
	}
	return t
}

// Wrap returns next, counting each request it serves except those for the ignored paths. A
// request counts as open until its handler returns, so a stream, a terminal or an upload keeps
// the sandbox active for as long as it lasts.
func (t *Tracker) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t.ignored[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		t.begin()
		defer t.end()
		next.ServeHTTP(w, r)
	})
}

func (t *Tracker) begin() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open++
	t.last = t.now()
}

func (t *Tracker) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open--
	t.last = t.now()
}

// Snapshot returns the last time a request started or ended (zero when none was served) and how
// many are open now.
func (t *Tracker) Snapshot() (last time.Time, open int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last, t.open
}
