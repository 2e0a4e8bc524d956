package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Suspend metrics, kubox additions: why sandboxes stop running, and how much the idle policy
// saves. A suspend is counted once, by the status write that shows the Sandbox suspending or
// expired.

// Values of kubox_sandbox_suspends_total's reason label.
const (
	// SuspendReasonIdle: the controller suspended the sandbox for its idle policy.
	SuspendReasonIdle = "idle"
	// SuspendReasonUser: someone set operatingMode to Suspended.
	SuspendReasonUser = "user"
	// SuspendReasonExpiry: shutdownTime passed; the Pod was deleted, or the Sandbox.
	SuspendReasonExpiry = "expiry"
)

var (
	// sandboxSuspends is kubox_sandbox_suspends_total.
	sandboxSuspends = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubox_sandbox_suspends_total",
		Help: "Number of times a Sandbox stopped running: reason idle (the idle policy suspended it), " +
			"user (operatingMode was set to Suspended by someone else) or expiry (shutdownTime passed).",
	}, []string{"reason"})

	// idleSuspendedSeconds is kubox_sandbox_idle_suspended_seconds_total.
	idleSuspendedSeconds = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubox_sandbox_idle_suspended_seconds_total",
		Help: "Sandbox-seconds spent suspended by the idle policy, from the Suspended condition turning True " +
			"to the resume; added when the sandbox resumes. The Pod-seconds the idle policy saved.",
	})
)

// CountSandboxSuspend adds one to kubox_sandbox_suspends_total for reason, one of the
// SuspendReason constants.
func CountSandboxSuspend(reason string) {
	sandboxSuspends.WithLabelValues(reason).Inc()
}

// AddIdleSuspended adds d, the time a sandbox spent suspended by its idle policy, to
// kubox_sandbox_idle_suspended_seconds_total. A negative d (clock skew) is dropped.
func AddIdleSuspended(d time.Duration) {
	if d < 0 {
		return
	}
	idleSuspendedSeconds.Add(d.Seconds())
}

var suspendRegistration registration

// RegisterSuspendMetrics registers the suspend metrics on controller-runtime's registry. Only the
// first call registers; later calls return its result.
func RegisterSuspendMetrics() error { return suspendRegistration.do(registerSuspend) }

func registerSuspend(reg prometheus.Registerer) error {
	return registerAll(reg, sandboxSuspends, idleSuspendedSeconds)
}
