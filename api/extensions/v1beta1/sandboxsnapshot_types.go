package v1beta1

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// SandboxSnapshotSpec says which sandbox to snapshot, and for how long to keep it. Its sandboxRef
// and type cannot change: a snapshot is taken once. Its retention can.
// +kubebuilder:validation:XValidation:rule="self.sandboxRef == oldSelf.sandboxRef && (has(self.type) ? self.type : 'Full') == (has(oldSelf.type) ? oldSelf.type : 'Full')",message="spec is immutable except spec.retention: a snapshot of spec.sandboxRef, of spec.type, is taken once; create another SandboxSnapshot to take a new one"
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

	// retention says when kubox-controller deletes this SandboxSnapshot (and so its files, from
	// its node, every node's cache and the snapshot store): once it is older than maxAge, or once
	// it is not among the maxCount newest Ready snapshots of its Sandbox. It governs this
	// snapshot only: no snapshot's retention deletes another. Absent: kept until deleted. kubox
	// addition.
	// +optional
	Retention *SnapshotRetention `json:"retention,omitempty"`
}

// SnapshotRetention bounds how long a SandboxSnapshot is kept. kubox addition.
// +kubebuilder:validation:XValidation:rule="has(self.maxAge) || has(self.maxCount)",message="spec.retention needs maxAge, maxCount or both; remove spec.retention to keep the snapshot until it is deleted"
type SnapshotRetention struct {
	// maxAge: the snapshot is deleted once this long has passed since it was created
	// (metadata.creationTimestamp), Ready or not. A duration such as "24h" or "168h", from 1m
	// to 87600h (ten years).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('87600h')",message="spec.retention.maxAge must be a duration from 1m to 87600h, such as 24h"
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`

	// maxCount: the snapshot is deleted once it is not among the maxCount newest Ready snapshots
	// of its Sandbox (spec.sandboxRef.name, in this namespace): with maxCount 3 set on every
	// snapshot of a sandbox, the newest three are kept. Only Ready snapshots count, so a failed
	// one never pushes out a good one. From 1 to 1000.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxCount *int32 `json:"maxCount,omitempty"`
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

	// store is where kubox-node's snapshot store keeps the snapshot's copy, as the kubox-node that
	// took it reported (status.snapshot.stored says the copy is there): the store's kind and its
	// location, never its credentials. Absent when the snapshot is only on its node. kubox
	// addition.
	// +optional
	Store *SnapshotStore `json:"store,omitempty"`

	// nodes are the nodes that hold a copy of the snapshot: the node that took it, as its
	// kubox-node answered the checkpoint, and each node that fetched a copy from the snapshot
	// store for a restore (the node the Pod of a Sandbox starting from this snapshot was bound
	// to, which the controller requires there only after that node's kubox-node answered the
	// fetch). A node is dropped once it is gone; the copies fetched are removed once the snapshot
	// is deleted (kubox-node's sweep). kubox addition.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	Nodes []string `json:"nodes,omitempty"`
}

// SnapshotStoreKind is the kind of kubox-node's snapshot store (docs/snapshot-store.md).
// +kubebuilder:validation:Enum=S3;Filesystem
type SnapshotStoreKind string

const (
	// SnapshotStoreS3 is a bucket of an S3-compatible object store (--snapshot-store=s3).
	SnapshotStoreS3 SnapshotStoreKind = "S3"
	// SnapshotStoreFilesystem is a folder every node mounts (--snapshot-store=<folder>).
	SnapshotStoreFilesystem SnapshotStoreKind = "Filesystem"
)

// SnapshotStore says where the snapshot store keeps a snapshot. kubox addition.
type SnapshotStore struct {
	// kind of the store: S3 or Filesystem.
	// +required
	Kind SnapshotStoreKind `json:"kind"`
	// location of the snapshot in the store, without credentials: s3://<endpoint>/<bucket>/<prefix>
	// for S3, the folder for Filesystem, followed by /<namespace>/<snapshot> (the layout of
	// docs/snapshot-store.md).
	// +required
	// +kubebuilder:validation:MaxLength=2048
	Location string `json:"location"`
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

	// SnapshotConditionFilesDeleted, on a SandboxSnapshot being deleted: False while its files
	// cannot be deleted, the message saying which copy is left, where, and why. The finalizer
	// goes once they are deleted (or after the controller gives up, with a FilesNotDeleted
	// Warning event).
	SnapshotConditionFilesDeleted = "FilesDeleted"
	// SnapshotReasonNoSnapshotNode: the node that took the snapshot is gone and no other
	// kubox-node that reaches the snapshot store could delete the store's copy.
	SnapshotReasonNoSnapshotNode = "NoSnapshotNode"
	// SnapshotReasonDeleteFailed: kubox-node on the snapshot's node failed to delete it.
	SnapshotReasonDeleteFailed = "DeleteFailed"
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
// +kubebuilder:printcolumn:name="Store",type="string",JSONPath=".status.store.kind",description="Kind of the snapshot store holding the copy: S3 or Filesystem",priority=1
// +kubebuilder:printcolumn:name="Location",type="string",JSONPath=".status.store.location",description="Where the snapshot store keeps the copy (no credentials)",priority=1
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

// RetentionCheck says whether a SandboxSnapshot falls outside its spec.retention, and if not,
// when it may next: expired is true with why once it does; otherwise next is how long until its
// maxAge passes (zero with no maxAge). now is the controller's clock; newerReady is how many
// Ready snapshots of the same Sandbox in its namespace were created after it. One rule, used by
// the controller and shown by the CLI.
func RetentionCheck(s *SandboxSnapshot, now time.Time, newerReady int) (expired bool, why string, next time.Duration) {
	r := s.Spec.Retention
	if r == nil {
		return false, "", 0
	}
	if r.MaxCount != nil && newerReady >= int(*r.MaxCount) {
		return true, fmt.Sprintf("%d Ready snapshots of Sandbox %s were taken after it, and spec.retention.maxCount is %d",
			newerReady, s.Spec.SandboxRef.Name, *r.MaxCount), 0
	}
	if r.MaxAge != nil {
		age := now.Sub(s.CreationTimestamp.Time)
		if age >= r.MaxAge.Duration {
			return true, fmt.Sprintf("it is %s old, and spec.retention.maxAge is %s", age.Round(time.Second), r.MaxAge.Duration), 0
		}
		next = r.MaxAge.Duration - age
	}
	return false, "", next
}

// TakenBefore reports whether a was created before b (by creation time, then name): the order
// in which spec.retention.maxCount counts the snapshots of a Sandbox.
func TakenBefore(a, b *SandboxSnapshot) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}
