package v1beta1

// Condition types of a Sandbox.
const (
	// SandboxConditionReady is True when the sandbox's Pod is Running and Ready with an IP, and its
	// Service exists when one is required.
	SandboxConditionReady = "Ready"
	// SandboxConditionSuspended reports the state of a suspension.
	SandboxConditionSuspended = "Suspended"
	// SandboxConditionPodScheduled mirrors the Pod's PodScheduled condition while the sandbox has
	// one Pod; it is always present: False/PodAbsent while the sandbox has no Pod (before its Pod
	// is created, suspended, waiting for a snapshot, between Pods) and False/SandboxExpired once
	// it has expired (agent-sandbox v1.0.13). Read its status, not its presence.
	SandboxConditionPodScheduled = "PodScheduled"
	// SandboxConditionFinished is absent until a Pod of the sandbox first terminates on its own
	// (Succeeded or Failed, not ended by a deletion), then never removed (agent-sandbox v1.0.13):
	// True/PodSucceeded or True/PodFailed with the last terminated Pod's outcome, kept while the
	// sandbox has no Pod (suspended, expired); False/NotFinished while a later Pod (after a resume
	// or a restart) has not terminated. Read its status, not its presence.
	SandboxConditionFinished = "Finished"
)

// Reasons of the Ready condition.
const (
	// SandboxReasonDependenciesReady: the Pod is Running, Ready, has an IP, and the Service exists
	// when required.
	SandboxReasonDependenciesReady = "DependenciesReady"
	// SandboxReasonDependenciesNotReady: the Pod or the Service is not there or not ready yet.
	SandboxReasonDependenciesNotReady = "DependenciesNotReady"
	// SandboxReasonSuspended: the sandbox is suspending or suspended.
	SandboxReasonSuspended = "SandboxSuspended"
	// SandboxReasonPodSucceeded: the Pod exited successfully (also a Finished reason).
	SandboxReasonPodSucceeded = "PodSucceeded"
	// SandboxReasonPodFailed: the Pod failed (also a Finished reason).
	SandboxReasonPodFailed = "PodFailed"
	// SandboxReasonExpired: shutdownTime has passed (also a PodScheduled reason).
	SandboxReasonExpired = "SandboxExpired"
	// SandboxReasonMultiplePods: more than one Pod is controlled by the sandbox.
	SandboxReasonMultiplePods = "MultiplePods"
	// SandboxReasonReconcilerError: the controller met an error; the message says which.
	SandboxReasonReconcilerError = "ReconcilerError"
	// SandboxReasonInvalidConfiguration: the API server refused one of the sandbox's children as
	// invalid, a permanent error until the spec changes; the message names the field.
	SandboxReasonInvalidConfiguration = "InvalidConfiguration"
	// SandboxReasonSnapshotNotReady: the SandboxSnapshot spec.snapshotRef names does not exist or
	// is not Ready, so the Pod that starts from it is not created yet. kubox addition.
	SandboxReasonSnapshotNotReady = "SnapshotNotReady"
)

// Reasons of the Suspended condition.
const (
	// SandboxReasonNotSuspended: the sandbox is Running.
	SandboxReasonNotSuspended = "NotSuspended"
	// SandboxReasonPodTerminated: suspended and the Pod is gone.
	SandboxReasonPodTerminated = "PodTerminated"
	// SandboxReasonPodTerminating: suspending; the Pod is being deleted.
	SandboxReasonPodTerminating = "PodTerminating"
	// SandboxReasonPodNotOwned: suspending, but a Pod the sandbox does not own holds its name.
	SandboxReasonPodNotOwned = "PodNotOwned"
	// SandboxReasonPodStateUnknown: the Pod's state could not be read.
	SandboxReasonPodStateUnknown = "PodStateUnknown"
)

// Reasons of the PodScheduled condition besides the Pod's own and SandboxReasonExpired; the
// fallbacks are used when the Pod's own condition has none.
const (
	// SandboxReasonPodAbsent: the sandbox has no Pod (before its Pod is created, suspended,
	// waiting for a snapshot, between Pods).
	SandboxReasonPodAbsent = "PodAbsent"
	// SandboxReasonPodScheduled: the Pod is scheduled.
	SandboxReasonPodScheduled = "PodScheduled"
	// SandboxReasonPodSchedulingUnknown: the Pod has no PodScheduled condition yet.
	SandboxReasonPodSchedulingUnknown = "PodSchedulingUnknown"
)

// Reasons of the Finished condition besides SandboxReasonPodSucceeded and SandboxReasonPodFailed.
const (
	// SandboxReasonNotFinished: an earlier Pod of the sandbox terminated; the current one has not.
	SandboxReasonNotFinished = "NotFinished"
)
