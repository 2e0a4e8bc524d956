package v1beta1

// Condition types of a Sandbox.
const (
	// SandboxConditionReady is True when the sandbox's Pod is Running and Ready with an IP, and its
	// Service exists when one is required.
	SandboxConditionReady = "Ready"
	// SandboxConditionSuspended reports the state of a suspension.
	SandboxConditionSuspended = "Suspended"
	// SandboxConditionPodScheduled mirrors the Pod's PodScheduled condition; absent without a Pod.
	SandboxConditionPodScheduled = "PodScheduled"
	// SandboxConditionFinished is True when the Pod has terminated; absent otherwise.
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
	// SandboxReasonExpired: shutdownTime has passed.
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

// Fallback reasons of the PodScheduled condition, used when the Pod's own condition has none.
const (
	// SandboxReasonPodScheduled: the Pod is scheduled.
	SandboxReasonPodScheduled = "PodScheduled"
	// SandboxReasonPodSchedulingUnknown: the Pod has no PodScheduled condition yet.
	SandboxReasonPodSchedulingUnknown = "PodSchedulingUnknown"
)
