package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SuspendPolicy says what a suspend keeps besides the sandbox's volumes. kubox addition.
type SuspendPolicy struct {
	// keepMemory, when true, keeps the sandbox's memory across a suspend (operatingMode Suspended,
	// or the idle policy): its processes, their memory, open files and sockets, and the writes to
	// its root filesystem are checkpointed by kubox-node on the Pod's node before the Pod is
	// deleted, and the Pod of the resume continues from that snapshot, on the same node: a Python
	// variable set before the pause is there after it, a loop counting goes on. It needs gVisor
	// (a runtimeClassName whose handler is runsc) and kubox-node; when the memory cannot be kept,
	// the suspend goes on without it and the condition MemoryKept says why.
	// +optional
	KeepMemory bool `json:"keepMemory,omitempty"`
}

// SnapshotReference names a SandboxSnapshot (extensions.agents.x-k8s.io) in the same namespace.
// kubox addition.
type SnapshotReference struct {
	// name of the SandboxSnapshot.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// MemoryStatus is a snapshot of a sandbox's memory on its node: the one a suspended sandbox's
// next Pod resumes from, or a SandboxSnapshot's. kubox addition.
type MemoryStatus struct {
	// snapshot is the snapshot's name on its node (the UID of the Pod it was taken of).
	// +required
	// +kubebuilder:validation:MaxLength=63
	Snapshot string `json:"snapshot"`
	// nodeName is the node that took the snapshot; the resumed Pod runs there while it exists.
	// +required
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName"`
	// image is the snapshot's runsc image folder on that node.
	// +required
	// +kubebuilder:validation:MaxLength=4096
	Image string `json:"image"`
	// sizeBytes is the snapshot's size.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// sha256 is the checksum over the snapshot's files, verified when it was taken.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SHA256 string `json:"sha256,omitempty"`
	// duration is how long the checkpoint took: the sandbox's processes were stopped for it.
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
	// takenAt is when the checkpoint was taken.
	// +optional
	TakenAt *metav1.Time `json:"takenAt,omitempty"`
	// stored says that kubox-node's snapshot store holds a copy too, verified, from which any
	// node with the store can restore it (when nodeName is gone, another labelled node does).
	// +optional
	Stored bool `json:"stored,omitempty"`
}

// SuspendedByRestoreFailure is SuspendedByAnnotation's value when the controller suspended a
// sandbox again because its Pod could not be restored from status.memory. kubox addition.
const SuspendedByRestoreFailure = "restore-failure"

// The MemoryKept condition of a Sandbox with spec.suspendPolicy.keepMemory: whether its last
// suspend kept its memory, and whether its last resume restored it. kubox addition.
const (
	SandboxConditionMemoryKept = "MemoryKept"
	// SandboxReasonCheckpointed: the suspend checkpointed the sandbox (status.memory).
	SandboxReasonCheckpointed = "Checkpointed"
	// SandboxReasonCheckpointFailed: the memory could not be kept (not gVisor, kubox-node
	// unreachable or refusing); the sandbox was suspended without it.
	SandboxReasonCheckpointFailed = "CheckpointFailed"
	// SandboxReasonRestored: the sandbox's Pod resumed from status.memory.
	SandboxReasonRestored = "Restored"
	// SandboxReasonRestoreFailed: the Pod could not be restored from the snapshot; the controller
	// suspended the sandbox again, with its snapshot and volumes.
	SandboxReasonRestoreFailed = "RestoreFailed"
)

// MemoryNotKept returns why a Sandbox suspended with spec.suspendPolicy.keepMemory holds no
// snapshot of its memory, or "" when its MemoryKept condition is True and status.memory is set.
func MemoryNotKept(sb *Sandbox) string {
	for _, c := range sb.Status.Conditions {
		if c.Type != SandboxConditionMemoryKept {
			continue
		}
		if c.Status == metav1.ConditionTrue && sb.Status.Memory != nil {
			return ""
		}
		return c.Message
	}
	return "the controller did not say why (is it older than spec.suspendPolicy?)"
}

// GeneratedNamePrefix is name cut so that name + suffix, with the five random characters the API
// server adds to a generateName, fits in 63 characters (a Sandbox's or a SandboxSnapshot's).
func GeneratedNamePrefix(name, suffix string) string {
	return name[:min(len(name), 63-5-len(suffix))] + suffix
}

// ForkOf returns a new Sandbox that starts from the SandboxSnapshot snapshot, taken of src: src's
// spec, running, with spec.snapshotRef; a name the API server generates from src's; the label
// ForkOfLabel. Its agent token, Service and Pod IP are its own. kubox addition.
func ForkOf(src *Sandbox, snapshot string) *Sandbox {
	prefix := GeneratedNamePrefix(src.Name, "-fork-")
	spec := *src.Spec.DeepCopy()
	spec.OperatingMode = SandboxOperatingModeRunning
	spec.SnapshotRef = &SnapshotReference{Name: snapshot}
	return &Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: src.Namespace, GenerateName: prefix, Labels: map[string]string{ForkOfLabel: src.Name}},
		Spec:       spec,
	}
}
