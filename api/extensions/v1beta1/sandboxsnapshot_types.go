package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// SandboxSnapshotSpec says which sandbox to snapshot. It cannot change: a snapshot is taken once.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a snapshot is taken once; create another SandboxSnapshot to take a new one"
type SandboxSnapshotSpec struct {
	// sandboxRef names the running Sandbox, in the same namespace, to snapshot. Its Pod must run
	// under gVisor on a node with kubox-node; it keeps running. Whoever creates the snapshot must
	// be allowed to connect to that Sandbox (create on sandboxes/connect, group agents.x-k8s.io;
	// checked at admission): the snapshot holds its memory and files.
	// +required
	SandboxRef SnapshotSourceReference `json:"sandboxRef"`

	// type is what the snapshot holds. Full (the default): the sandbox's processes, their memory,
	// open files and sockets, and the writes to its root filesystem; a Sandbox started from it
	// continues where the snapshot was taken, with the same containers. Filesystem: the writes to
	// the containers' root filesystems and their emptyDir volumes only; a Sandbox started from it
	// starts its processes afresh (init containers too) on those files: packages installed, files
	// written. A Filesystem snapshot is smaller and quicker to take, and survives a change of
	// runsc version that a Full one does not.
	// +optional
	// +kubebuilder:default=Full
	Type SnapshotType `json:"type,omitempty"`
}

// SnapshotType says what a SandboxSnapshot holds.
// +kubebuilder:validation:Enum=Full;Filesystem
type SnapshotType string

const (
	// SnapshotTypeFull holds the processes, their memory and the filesystems.
	SnapshotTypeFull SnapshotType = "Full"
	// SnapshotTypeFilesystem holds the writes to the root filesystems and emptyDirs only.
	SnapshotTypeFilesystem SnapshotType = "Filesystem"
)

// FilesystemOnly reports whether the snapshot holds files only (spec.type Filesystem).
func (s *SandboxSnapshot) FilesystemOnly() bool {
	return s.Spec.Type == SnapshotTypeFilesystem
}

// SnapshotSourceReference names the Sandbox a snapshot is taken of.
type SnapshotSourceReference struct {
	// name of the Sandbox.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="sandboxRef.name must be a Sandbox name: a DNS-1035 label (lowercase letters, digits and '-', starting with a letter)"
	Name string `json:"name"`
}

// SandboxSnapshotStatus is the observed state of a SandboxSnapshot.
type SandboxSnapshotStatus struct {
	// conditions: Ready is True once the snapshot is taken and verified, False with a reason
	// while it cannot be (SandboxNotRunning) or when it failed for good (CheckpointFailed).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// snapshot is the snapshot on its node: size, checksum, how long the sandbox was stopped for
	// it, when it was taken. Sandboxes with spec.snapshotRef start from it, on that node.
	// +optional
	Snapshot *sandboxv1beta1.MemoryStatus `json:"snapshot,omitempty"`

	// sourcePodUID is the UID of the Pod the snapshot was taken of.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	SourcePodUID string `json:"sourcePodUID,omitempty"`

	// sourceClaim is the SandboxClaim whose own settings (spec.env, spec.secretFiles) the
	// snapshotted sandbox held when the snapshot was taken, directly or through the snapshot it
	// started from; absent when it held none. Sandboxes serving another claim, and warm pool
	// members, do not start from a snapshot that holds a claim's settings: they stay Ready=False
	// (SnapshotNotReady) saying so. kubox addition.
	// +optional
	SourceClaim *SnapshotSourceClaim `json:"sourceClaim,omitempty"`
}

// Condition type and reasons of a SandboxSnapshot.
const (
	// SnapshotConditionReady: the snapshot is taken and verified; sandboxes can start from it.
	SnapshotConditionReady = "Ready"
	// SnapshotReasonTaken: the checkpoint completed and its files were verified.
	SnapshotReasonTaken = "Taken"
	// SnapshotReasonSandboxNotRunning: the Sandbox does not exist or its Pod is not Running yet;
	// the controller tries again.
	SnapshotReasonSandboxNotRunning = "SandboxNotRunning"
	// SnapshotReasonCheckpointFailed: kubox-node could not take the snapshot (not gVisor, not
	// configured, refused); the controller does not try again.
	SnapshotReasonCheckpointFailed = "CheckpointFailed"
)

// SandboxSnapshot is a checkpoint of a running sandbox — its processes, their memory, open
// files and the writes to its root filesystem, or with spec.type Filesystem those writes only,
// and in both cases a copy of its emptyDirs and of its own volumes (volumeClaimTemplates), which
// fill the new, empty volumes of the sandboxes started from it — taken by kubox-node under gVisor
// while the sandbox keeps running. Sandboxes whose spec.snapshotRef names it start from it: forks of the sandbox,
// or the members of a warm pool whose template names it. Deleting it deletes the snapshot's
// files. kubox addition.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Namespaced,shortName=sbsnap,categories=kubox
// +kubebuilder:printcolumn:name="Sandbox",type="string",JSONPath=".spec.sandboxRef.name",description="Sandbox the snapshot was taken of"
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".spec.type",description="What the snapshot holds: Full (processes and memory too) or Filesystem"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status",description="Whether sandboxes can start from the snapshot"
// +kubebuilder:printcolumn:name="Reason",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].reason",description="Why the snapshot is or is not ready"
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=".status.snapshot.nodeName",description="Node holding the snapshot"
// +kubebuilder:printcolumn:name="Size",type="integer",JSONPath=".status.snapshot.sizeBytes",description="Size of the snapshot in bytes"
// +kubebuilder:printcolumn:name="Stored",type="boolean",JSONPath=".status.snapshot.stored",description="Whether kubox-node's snapshot store holds a copy any node can restore"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type SandboxSnapshot struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which sandbox to snapshot.
	// +required
	Spec SandboxSnapshotSpec `json:"spec"`

	// status is the snapshot as taken.
	// +optional
	Status SandboxSnapshotStatus `json:"status,omitempty"`
}

// SandboxSnapshotList is a list of SandboxSnapshots.
// +kubebuilder:object:root=true
type SandboxSnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the snapshots.
	Items []SandboxSnapshot `json:"items"`
}

// SnapshotReady returns the snapshot a Sandbox can start from, or nil and why it cannot.
func SnapshotReady(s *SandboxSnapshot) (*sandboxv1beta1.MemoryStatus, string) {
	for _, c := range s.Status.Conditions {
		if c.Type != SnapshotConditionReady {
			continue
		}
		if c.Status == metav1.ConditionTrue && s.Status.Snapshot != nil {
			return s.Status.Snapshot, ""
		}
		return nil, c.Message
	}
	return nil, "it is not taken yet"
}
