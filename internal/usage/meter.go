package usage

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// State is the part of a Sandbox's lifecycle the meter counts.
type State int

const (
	// StatePending is a sandbox that exists but has no Ready Pod and is not suspended (creating,
	// scheduling, between Pods, finished, expired). Not counted.
	StatePending State = iota
	// StateRunning is a sandbox whose Ready condition is True.
	StateRunning
	// StateSuspended is a sandbox whose Suspended condition is True.
	StateSuspended
)

func (s State) String() string {
	switch s {
	case StateRunning:
		return "Running"
	case StateSuspended:
		return "Suspended"
	default:
		return "Pending"
	}
}

// StateOf reads a Sandbox's state from its status conditions. Suspended wins over Ready, so a
// Ready condition not yet updated after a suspension is not billed as running.
func StateOf(sb *sandboxv1beta1.Sandbox) State { return StateOfConditions(sb.Status.Conditions) }

// StateOfConditions is StateOf for a status's conditions (a status about to be written).
func StateOfConditions(conds []metav1.Condition) State {
	if meta.IsStatusConditionTrue(conds, sandboxv1beta1.SandboxConditionSuspended) {
		return StateSuspended
	}
	if meta.IsStatusConditionTrue(conds, sandboxv1beta1.SandboxConditionReady) {
		return StateRunning
	}
	return StatePending
}

// Requests are a Pod's effective resource requests.
type Requests struct {
	CPUMilli    int64
	MemoryBytes int64
}

// RequestsOf computes the effective requests of a Pod spec the way the scheduler does: the
// larger of the sum over containers and the largest init container, plus the Pod overhead.
func RequestsOf(spec *corev1.PodSpec) Requests {
	var sum, initMax Requests
	for i := range spec.Containers {
		r := containerRequests(&spec.Containers[i])
		sum.CPUMilli += r.CPUMilli
		sum.MemoryBytes += r.MemoryBytes
	}
	for i := range spec.InitContainers {
		r := containerRequests(&spec.InitContainers[i])
		initMax.CPUMilli = max(initMax.CPUMilli, r.CPUMilli)
		initMax.MemoryBytes = max(initMax.MemoryBytes, r.MemoryBytes)
	}
	out := Requests{CPUMilli: max(sum.CPUMilli, initMax.CPUMilli), MemoryBytes: max(sum.MemoryBytes, initMax.MemoryBytes)}
	if q, ok := spec.Overhead[corev1.ResourceCPU]; ok {
		out.CPUMilli += q.MilliValue()
	}
	if q, ok := spec.Overhead[corev1.ResourceMemory]; ok {
		out.MemoryBytes += q.Value()
	}
	return out
}

func containerRequests(c *corev1.Container) Requests {
	var r Requests
	if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		r.CPUMilli = q.MilliValue()
	}
	if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
		r.MemoryBytes = q.Value()
	}
	return r
}

// Figures are a sandbox's counted usage.
type Figures struct {
	RunningSeconds            float64 `json:"runningSeconds"`
	SuspendedSeconds          float64 `json:"suspendedSeconds"`
	Wakes                     int64   `json:"wakes"`
	RequestedCPUCoreSeconds   float64 `json:"requestedCpuCoreSeconds"`
	RequestedMemoryGiBSeconds float64 `json:"requestedMemoryGiBSeconds"`
}

// Meter accumulates Figures from observed state transitions. The zero time of an observation
// is the moment the controller saw the state; it is not safe for concurrent use.
type Meter struct {
	req     Requests
	figures Figures
	state   State
	since   time.Time
	started bool
	// asleep is set from a suspension until the sandbox runs again: a resume passes through
	// Pending (the new Pod starting), and the wake is counted when it reaches Running.
	asleep bool
}

// NewMeter returns a meter for a sandbox whose Pod requests req.
func NewMeter(req Requests) *Meter { return &Meter{req: req} }

// Observe records that the sandbox was in state s at time now. Repeated observations of one
// state are idempotent; an observation earlier than the last one counts no time. Running after
// a suspension, directly or through Pending, is a wake.
func (m *Meter) Observe(now time.Time, s State) {
	if !m.started {
		m.state, m.since, m.started = s, now, true
		m.asleep = s == StateSuspended
		return
	}
	m.accrue(now)
	switch s {
	case StateSuspended:
		m.asleep = true
	case StateRunning:
		if m.asleep {
			m.figures.Wakes++
		}
		m.asleep = false
	}
	m.state = s
}

// Figures returns the figures as of now without changing the meter.
func (m *Meter) Figures(now time.Time) Figures {
	c := *m
	if c.started {
		c.accrue(now)
	}
	return c.figures
}

func (m *Meter) accrue(now time.Time) {
	if !now.After(m.since) {
		return
	}
	d := now.Sub(m.since).Seconds()
	m.since = now
	switch m.state {
	case StateRunning:
		m.figures.RunningSeconds += d
		m.figures.RequestedCPUCoreSeconds += d * float64(m.req.CPUMilli) / 1000
		m.figures.RequestedMemoryGiBSeconds += d * float64(m.req.MemoryBytes) / (1 << 30)
	case StateSuspended:
		m.figures.SuspendedSeconds += d
	}
}
