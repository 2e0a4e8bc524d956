package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// IdlePolicy suspends a sandbox nobody is using and wakes it on the next request. kubox
// addition.
//
// Activity is a request through kubox-router to any of the sandbox's ports (an open stream,
// WebSocket or terminal counts for as long as it is open) and, unless runningProcesses is
// Ignore, a process running in the sandbox other than its main command and the agent. The
// controller looks at the sandbox when suspendAfter has passed since the activity it last
// saw, not on every request, so a sandbox suspends between suspendAfter and about twice
// suspendAfter after its last activity. A sandbox waiting unclaimed in a warm pool never
// suspends.
// +kubebuilder:validation:XValidation:rule="duration(self.suspendAfter) >= duration('30s') && duration(self.suspendAfter) <= duration('8760h')",message="idlePolicy.suspendAfter must be between 30s and 8760h (one year)",fieldPath=".suspendAfter"
type IdlePolicy struct {
	// suspendAfter is how long the sandbox may go without activity before the controller
	// suspends it (as operatingMode Suspended does: the Pod is deleted, volumes and Service
	// stay). A Go duration such as "10m" or "1h30m", from 30s to 8760h.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	SuspendAfter metav1.Duration `json:"suspendAfter"`

	// runningProcesses is KeepAwake (the default): a process running in the sandbox, other than
	// its main command and the agent (a build, a background server), is activity; or Ignore:
	// only requests are.
	// +optional
	// +kubebuilder:default=KeepAwake
	RunningProcesses IdleProcessPolicy `json:"runningProcesses,omitempty"`

	// wake is OnRequest (the default): a request through kubox-router to the suspended sandbox,
	// from a caller who may resume it, resumes it and is answered once it is Ready; or Manual:
	// such a request is answered 503 until someone sets operatingMode to Running.
	// +optional
	// +kubebuilder:default=OnRequest
	Wake WakePolicy `json:"wake,omitempty"`
}

// IdleProcessPolicy says whether running processes keep a sandbox awake.
// +kubebuilder:validation:Enum=KeepAwake;Ignore
type IdleProcessPolicy string

const (
	// IdleProcessPolicyKeepAwake counts running processes as activity.
	IdleProcessPolicyKeepAwake IdleProcessPolicy = "KeepAwake"
	// IdleProcessPolicyIgnore counts only requests as activity.
	IdleProcessPolicyIgnore IdleProcessPolicy = "Ignore"
)

// WakePolicy says whether a request wakes a suspended sandbox.
// +kubebuilder:validation:Enum=OnRequest;Manual
type WakePolicy string

const (
	// WakePolicyOnRequest resumes a suspended sandbox when a request for it reaches the router.
	WakePolicyOnRequest WakePolicy = "OnRequest"
	// WakePolicyManual leaves a suspended sandbox suspended until operatingMode is Running.
	WakePolicyManual WakePolicy = "Manual"
)

// IdleStatus is what the controller last saw of a sandbox's activity. kubox addition.
type IdleStatus struct {
	// lastActiveTime is when the sandbox was last seen active, as precise as the controller's
	// checks (it is not written on every request).
	// +optional
	LastActiveTime *metav1.Time `json:"lastActiveTime,omitempty"`

	// reason says, in one CamelCase word, why the sandbox is or is not idle: Requests,
	// RunningProcesses, OpenConnections, AgentUnreachable, WaitingInPool, Idle or Suspended.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason,omitempty"`

	// message says the same for people: which processes run, when the sandbox suspends.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// Reasons of IdleStatus.
const (
	IdleReasonRequests         = "Requests"
	IdleReasonRunningProcesses = "RunningProcesses"
	IdleReasonOpenConnections  = "OpenConnections"
	IdleReasonAgentUnreachable = "AgentUnreachable"
	IdleReasonWaitingInPool    = "WaitingInPool"
	IdleReasonIdle             = "Idle"
	IdleReasonSuspended        = "Suspended"
)

// Annotations of the idle policy. The router writes LastActivityAnnotation on a Sandbox (an
// RFC 3339 time, written at most once per half of its suspendAfter while requests come), and
// the controller writes SuspendedByAnnotation with the operatingMode it sets.
const (
	// LastActivityAnnotation is the last time kubox-router saw a request, or an open
	// connection, for the sandbox.
	LastActivityAnnotation = "kubox.dev/last-activity"
	// SuspendedByAnnotation says who suspended the sandbox: SuspendedByIdle when the controller
	// did it for the idle policy. Removed when the sandbox is resumed.
	SuspendedByAnnotation = "kubox.dev/suspended-by"
	// SuspendedByIdle is SuspendedByAnnotation's value for an idle suspend.
	SuspendedByIdle = "idle-policy"
)
