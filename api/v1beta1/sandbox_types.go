package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodMetadata is the part of a Pod's metadata a sandbox's pod template may set.
type PodMetadata struct {
	// labels are added to the sandbox's Pod. Keys under agents.x-k8s.io/ and
	// extensions.agents.x-k8s.io/ are reserved for the controller and ignored.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// annotations are added to the sandbox's Pod. Keys under agents.x-k8s.io/ and
	// extensions.agents.x-k8s.io/ are reserved for the controller and ignored. Keys starting
	// kubox.dev/restore- are refused at admission and never copied to the Pod: they tell the
	// node's runtime what to restore the Pod from, and kubox-controller alone sets them, on the
	// Pods it restores (use snapshotRef).
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PodTemplate describes the Pod that backs a sandbox.
type PodTemplate struct {
	// metadata holds the labels and annotations of the Pod; only labels and annotations are used.
	// +optional
	Metadata PodMetadata `json:"metadata,omitempty"`

	// spec is the Pod's spec. It is used when the Pod is created; changing it later does not
	// restart a running Pod.
	// +required
	Spec corev1.PodSpec `json:"spec"`
}

// EmbeddedObjectMetadata is the metadata a volume claim template may set on its claim.
type EmbeddedObjectMetadata struct {
	// name of the volume claim template. The PersistentVolumeClaim is named
	// <name>-<sandbox name>, and the Pod gets a volume called <name> that mounts it.
	// Required by kubox: it must be a DNS-1123 label (lowercase letters, digits and '-').
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name,omitempty"`

	// labels are added to the PersistentVolumeClaim.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// annotations are added to the PersistentVolumeClaim.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PersistentVolumeClaimTemplate describes a PersistentVolumeClaim the controller creates for a
// sandbox and mounts into its Pod.
// +kubebuilder:validation:XValidation:rule="has(self.metadata) && has(self.metadata.name) && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="volumeClaimTemplates[].metadata.name is required and must be a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit)"
type PersistentVolumeClaimTemplate struct {
	// metadata names the template and sets the claim's labels and annotations.
	// +optional
	Metadata EmbeddedObjectMetadata `json:"metadata,omitempty"`

	// spec is the spec of the PersistentVolumeClaim.
	// +required
	Spec corev1.PersistentVolumeClaimSpec `json:"spec"`
}

// SandboxBlueprint is what a sandbox is made of; SandboxTemplate embeds it too.
// +kubebuilder:validation:XValidation:rule="!has(self.agent) || !has(self.agent.containerName) || self.podTemplate.spec.containers.exists(c, c.name == self.agent.containerName)",message="agent.containerName must name a container of podTemplate.spec.containers"
type SandboxBlueprint struct {
	// podTemplate describes the Pod that backs the sandbox.
	// +required
	PodTemplate PodTemplate `json:"podTemplate"`

	// volumeClaimTemplates lists PersistentVolumeClaims created for the sandbox and mounted into
	// its Pod as volumes of the same name (replacing a same-named volume of the pod spec). The
	// claims outlive a suspended Pod. Names must be unique. On a Sandbox, the list cannot change
	// after the Sandbox is created.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(x, self.exists_one(y, has(y.metadata.name) && has(x.metadata.name) && y.metadata.name == x.metadata.name))",message="volumeClaimTemplates[].metadata.name must be unique"
	VolumeClaimTemplates []PersistentVolumeClaimTemplate `json:"volumeClaimTemplates,omitempty"`

	// service, when true, makes the controller create a headless Service named like the sandbox
	// that selects its Pod; when false, the controller deletes a Service it owns; when unset, it
	// creates none but keeps requiring a pre-existing one to be present for readiness.
	// +optional
	// +nolint:kubeapilinter
	Service *bool `json:"service,omitempty"`

	// agent, when set, runs kubox-agent in the sandbox: exec, terminals and files through the
	// router, with any image. kubox addition.
	// +optional
	Agent *AgentSpec `json:"agent,omitempty"`

	// idlePolicy, when set, suspends the sandbox after a time without activity and wakes it on
	// the next request through kubox-router. A claim's idlePolicy replaces its template's.
	// kubox addition.
	// +optional
	IdlePolicy *IdlePolicy `json:"idlePolicy,omitempty"`

	// egress, when set, states by domain what the sandbox may reach: its traffic leaves only
	// through kubox-egress, which refuses what the policy does not allow and adds the policy's
	// credentials to requests. On a Sandbox it is the effective policy (the template's, narrowed
	// by the claim's egress). kubox addition.
	// +optional
	Egress *EgressPolicy `json:"egress,omitempty"`

	// suspendPolicy says what a suspend keeps besides the volumes: with keepMemory, the
	// sandbox's memory (gVisor only). kubox addition.
	// +optional
	SuspendPolicy *SuspendPolicy `json:"suspendPolicy,omitempty"`

	// snapshotRef names a Ready SandboxSnapshot in the same namespace that the sandbox's Pods
	// start from instead of from their images: its processes continue from the snapshot's memory,
	// on the snapshot's node (gVisor only). The Pod template must have the containers of the
	// Sandbox the snapshot was taken of: a fork copies it. Set in a SandboxTemplate, it makes a
	// warm pool of restores. A Pod resuming from status.memory (suspendPolicy.keepMemory) takes
	// that instead. Whoever sets snapshotRef, or changes it, must be allowed to get the snapshot
	// (checked at admission). kubox addition.
	// +optional
	SnapshotRef *SnapshotReference `json:"snapshotRef,omitempty"`
}

// ShutdownPolicy says what happens to a sandbox when its shutdownTime passes.
// +kubebuilder:validation:Enum=Delete;Retain
type ShutdownPolicy string

const (
	// ShutdownPolicyDelete deletes the Sandbox object on expiry.
	ShutdownPolicyDelete ShutdownPolicy = "Delete"
	// ShutdownPolicyRetain keeps the Sandbox object, with Ready=False/SandboxExpired, on expiry.
	ShutdownPolicyRetain ShutdownPolicy = "Retain"
)

// Lifecycle holds the expiry settings of a sandbox.
type Lifecycle struct {
	// shutdownTime is the time at which the sandbox expires: its Pod and Service are deleted, then
	// shutdownPolicy decides what becomes of the Sandbox. Unset means it never expires.
	// +optional
	// +kubebuilder:validation:Format="date-time"
	ShutdownTime *metav1.Time `json:"shutdownTime,omitempty"`

	// shutdownPolicy is what happens to the Sandbox object at shutdownTime: Retain (the default)
	// keeps it with Ready=False and reason SandboxExpired; Delete deletes it.
	// +optional
	// +kubebuilder:default=Retain
	ShutdownPolicy *ShutdownPolicy `json:"shutdownPolicy,omitempty"`
}

// SandboxOperatingMode says whether a sandbox's Pod should run.
// +kubebuilder:validation:Enum=Running;Suspended
type SandboxOperatingMode string

const (
	// SandboxOperatingModeRunning keeps the sandbox's Pod running.
	SandboxOperatingModeRunning SandboxOperatingMode = "Running"
	// SandboxOperatingModeSuspended deletes the Pod and keeps the Sandbox, its claims and Service.
	SandboxOperatingModeSuspended SandboxOperatingMode = "Suspended"
)

// PersistentVolumeClaimRetentionPolicyType says whether a sandbox's PVCs are kept or deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type PersistentVolumeClaimRetentionPolicyType string

const (
	// RetainPersistentVolumeClaimRetentionPolicyType keeps the PVCs.
	RetainPersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Retain"
	// DeletePersistentVolumeClaimRetentionPolicyType deletes the PVCs.
	DeletePersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Delete"
)

// PersistentVolumeClaimRetentionPolicy says what becomes of a sandbox's PVCs, like a
// StatefulSet's policy of the same name. kubox addition.
type PersistentVolumeClaimRetentionPolicy struct {
	// whenDeleted applies when the Sandbox is deleted: Delete (the default) lets the PVCs go with
	// it through their owner reference; Retain releases them first, so they stay.
	// +optional
	// +kubebuilder:default=Delete
	WhenDeleted PersistentVolumeClaimRetentionPolicyType `json:"whenDeleted,omitempty"`

	// whenExpired applies when the sandbox reaches its shutdownTime: Retain (the default) keeps the
	// PVCs; Delete deletes them with the Pod.
	// +optional
	// +kubebuilder:default=Retain
	WhenExpired PersistentVolumeClaimRetentionPolicyType `json:"whenExpired,omitempty"`
}

// SandboxSpec is the desired state of a Sandbox.
// +kubebuilder:validation:XValidation:rule="has(self.volumeClaimTemplates) == has(oldSelf.volumeClaimTemplates) && (!has(self.volumeClaimTemplates) || self.volumeClaimTemplates == oldSelf.volumeClaimTemplates)",message="volumeClaimTemplates is immutable"
type SandboxSpec struct {
	SandboxBlueprint `json:",inline"`
	Lifecycle        `json:",inline"`

	// operatingMode is Running (the default) or Suspended. Suspended deletes the Pod and keeps the
	// Sandbox, its PersistentVolumeClaims and its Service; Running again recreates the Pod with
	// the same name and volumes.
	// +optional
	// +kubebuilder:default=Running
	OperatingMode SandboxOperatingMode `json:"operatingMode,omitempty"`

	// persistentVolumeClaimRetentionPolicy says whether the PVCs made from volumeClaimTemplates
	// are kept when the Sandbox is deleted or expires. kubox addition.
	// +optional
	PersistentVolumeClaimRetentionPolicy *PersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
}

// SandboxStatus is the observed state of a Sandbox.
type SandboxStatus struct {
	// serviceFQDN is the fully qualified DNS name of the sandbox's Service,
	// <service>.<namespace>.svc.<cluster domain>; empty when there is no Service.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ServiceFQDN string `json:"serviceFQDN,omitempty"`

	// service is the name of the sandbox's headless Service.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Service string `json:"service,omitempty"`

	// conditions describe the sandbox: Ready, Suspended, PodScheduled and Finished.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// selector is the label selector, as a string, that matches the sandbox's Pod. Once set it stays
	// while no Pod exists (suspended, expired).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	LabelSelector string `json:"selector,omitempty"`

	// podIPs are the IP addresses of the sandbox's Pod, while it has one.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=2
	PodIPs []string `json:"podIPs,omitempty"`

	// nodeName is the node the sandbox's Pod runs on, while it has one.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName,omitempty"`

	// observedGeneration is the metadata.generation this status was computed from. kubox addition.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// previewID is kubox's short, DNS-safe identifier of this sandbox, derived from its UID:
	// kubox-router serves port P of the sandbox to browsers at host "P-<previewID>.<preview
	// domain>". A sandbox recreated under the same name gets a new one. kubox addition.
	// +optional
	// +kubebuilder:validation:MaxLength=12
	PreviewID string `json:"previewID,omitempty"`

	// agent records the ports kubox-agent listens on in the sandbox's current Pod, as the
	// controller wrote them into that Pod: kubox-router, the SDKs and the CLI read them here and
	// send the sandbox's agent token to no other port. Absent while the sandbox has no Pod, and
	// for a sandbox that does not run the agent. kubox addition.
	// +optional
	Agent *AgentStatus `json:"agent,omitempty"`

	// idle is what the controller last saw of the sandbox's activity, for a sandbox with an
	// idlePolicy. kubox addition.
	// +optional
	Idle *IdleStatus `json:"idle,omitempty"`

	// memory is the snapshot of the sandbox's memory its next Pod resumes from, for a sandbox
	// with spec.suspendPolicy.keepMemory whose suspend kept it. kubox addition.
	// +optional
	Memory *MemoryStatus `json:"memory,omitempty"`

	// usage summarises what the sandbox used as kubox-controller's usage metering counted it
	// (docs/usage.md). Absent unless the controller's usage.enabled is set. Written when the
	// sandbox is suspended and at most once every usage.summaryInterval (default 5m) while it
	// runs, and never when nothing changed: between writes the metrics are current, this is not.
	// kubox addition.
	// +optional
	Usage *UsageStatus `json:"usage,omitempty"`
}

// Sandbox is one Pod with a stable name and hostname, optional persistent volumes, and a
// lifecycle: it can be suspended and resumed (volumes kept), expire at a time, and be deleted.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Namespaced,shortName=sandbox,categories=kubox
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status",description="Whether the sandbox's Pod is running, ready and reachable"
// +kubebuilder:printcolumn:name="Reason",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].reason",description="Why the sandbox is or is not ready"
// +kubebuilder:printcolumn:name="Mode",type="string",JSONPath=".spec.operatingMode",description="Running or Suspended",priority=1
// +kubebuilder:printcolumn:name="Pod IP",type="string",JSONPath=".status.podIPs[0]",description="IP address of the sandbox's Pod",priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 63 characters (lowercase letters, digits and '-', starting with a letter): it names the sandbox's Pod and Service"
type Sandbox struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the sandbox.
	// +required
	Spec SandboxSpec `json:"spec"`

	// status is the observed state of the sandbox.
	// +optional
	Status SandboxStatus `json:"status,omitempty"`
}

// SandboxList is a list of Sandboxes.
// +kubebuilder:object:root=true
type SandboxList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the sandboxes.
	Items []Sandbox `json:"items"`
}
