package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// SandboxWarmPoolReference names a SandboxWarmPool in the claim's namespace.
type SandboxWarmPoolReference struct {
	// name of the SandboxWarmPool, in the claim's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="warmPoolRef.name must be a SandboxWarmPool name: a DNS-1035 label (lowercase letters, digits and '-', starting with a letter)"
	Name string `json:"name"`
}

// ClaimShutdownPolicy says what happens to a claim and its sandbox when the claim expires.
// +kubebuilder:validation:Enum=Delete;DeleteForeground;Retain
type ClaimShutdownPolicy string

const (
	// ClaimShutdownPolicyDelete deletes the claim; its sandbox is garbage-collected after it.
	ClaimShutdownPolicyDelete ClaimShutdownPolicy = "Delete"
	// ClaimShutdownPolicyDeleteForeground deletes the claim with foreground propagation: the
	// claim stays, being deleted, until its Sandbox and Pod are gone.
	ClaimShutdownPolicyDeleteForeground ClaimShutdownPolicy = "DeleteForeground"
	// ClaimShutdownPolicyRetain deletes the sandbox and keeps the claim, with Ready=False and
	// reason ClaimExpired.
	ClaimShutdownPolicyRetain ClaimShutdownPolicy = "Retain"
)

// ClaimLifecycle holds the expiry settings of a claim. The claim expires at the earliest of
// shutdownTime and ttlSecondsAfterFinished after its sandbox finished.
type ClaimLifecycle struct {
	// shutdownTime is the time at which the claim expires. It is enforced on the claim; the
	// Sandbox itself is given no shutdown time. Unset means no fixed expiry.
	// +optional
	// +kubebuilder:validation:Format="date-time"
	ShutdownTime *metav1.Time `json:"shutdownTime,omitempty"`

	// ttlSecondsAfterFinished, when set, makes the claim expire this many seconds after its
	// sandbox finished (its Pod succeeded or failed), counted from the last transition of the
	// claim's Finished condition to True. It keeps counting while the sandbox is suspended
	// (Finished stays True); while a later Pod, after a resume or a restart, has not finished
	// (Finished=False) it waits, and counts from that Pod's finish. 0 expires it as soon as it
	// finishes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// shutdownPolicy is what happens when the claim expires: Retain (the default) deletes the
	// sandbox and keeps the claim with Ready=False and reason ClaimExpired; Delete deletes the
	// claim, and its sandbox with it; DeleteForeground deletes the claim with foreground
	// propagation, so the claim is gone only once its Sandbox and Pod are.
	// +optional
	// +kubebuilder:default=Retain
	ShutdownPolicy ClaimShutdownPolicy `json:"shutdownPolicy,omitempty"`
}

// AdditionalPodMetadata is the metadata a claim adds to its sandbox's Pod.
type AdditionalPodMetadata struct {
	// labels are added to the sandbox's Pod, also when the sandbox comes from a warm pool. Keys
	// must be qualified names; keys under agents.x-k8s.io/, extensions.agents.x-k8s.io/,
	// kubernetes.io/ and k8s.io/ (or subdomains of those) are rejected. The controller may
	// further restrict label domains by configuration, and rejects a key the template already
	// sets to another value; such claims get Ready=False with reason InvalidMetadata.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.matches('^[^/]{254}'))",message="additionalPodMetadata.labels keys must be qualified names: an optional prefix (a DNS subdomain of at most 253 characters) and a slash, then a name of at most 63 letters, digits, dashes, underscores or dots that starts and ends with a letter or digit",messageExpression="'additionalPodMetadata.labels key ' + self.filter(k, !(k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.matches('^[^/]{254}')))[0] + ' is not a qualified name: an optional prefix (a DNS subdomain of at most 253 characters) and a slash, then a name of at most 63 letters, digits, dashes, underscores or dots that starts and ends with a letter or digit'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.matches('^([^/]*[.])?(agents[.]x-k8s[.]io|kubernetes[.]io|k8s[.]io)/'))",message="additionalPodMetadata.labels must not use reserved keys: keys under agents.x-k8s.io/, extensions.agents.x-k8s.io/, kubernetes.io/ and k8s.io/ (or their subdomains) are reserved",messageExpression="'additionalPodMetadata.labels key ' + self.filter(k, k.matches('^([^/]*[.])?(agents[.]x-k8s[.]io|kubernetes[.]io|k8s[.]io)/'))[0] + ' is reserved: keys under agents.x-k8s.io/, extensions.agents.x-k8s.io/, kubernetes.io/ and k8s.io/ (or their subdomains) are reserved'"
	Labels map[string]string `json:"labels,omitempty"`

	// annotations are added to the sandbox's Pod, also when the sandbox comes from a warm pool.
	// Keys must be qualified names; keys under agents.x-k8s.io/, extensions.agents.x-k8s.io/,
	// kubernetes.io/ and k8s.io/ (or subdomains of those) are rejected, except
	// cluster-autoscaler.kubernetes.io/safe-to-evict. A key the template already sets to another
	// value gives the claim Ready=False with reason InvalidMetadata.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.matches('^[^/]{254}'))",message="additionalPodMetadata.annotations keys must be qualified names: an optional prefix (a DNS subdomain of at most 253 characters) and a slash, then a name of at most 63 letters, digits, dashes, underscores or dots that starts and ends with a letter or digit",messageExpression="'additionalPodMetadata.annotations key ' + self.filter(k, !(k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.matches('^[^/]{254}')))[0] + ' is not a qualified name: an optional prefix (a DNS subdomain of at most 253 characters) and a slash, then a name of at most 63 letters, digits, dashes, underscores or dots that starts and ends with a letter or digit'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k == 'cluster-autoscaler.kubernetes.io/safe-to-evict' || !k.matches('^([^/]*[.])?(agents[.]x-k8s[.]io|kubernetes[.]io|k8s[.]io)/'))",message="additionalPodMetadata.annotations must not use reserved keys: keys under agents.x-k8s.io/, extensions.agents.x-k8s.io/, kubernetes.io/ and k8s.io/ (or their subdomains) are reserved, except cluster-autoscaler.kubernetes.io/safe-to-evict",messageExpression="'additionalPodMetadata.annotations key ' + self.filter(k, k != 'cluster-autoscaler.kubernetes.io/safe-to-evict' && k.matches('^([^/]*[.])?(agents[.]x-k8s[.]io|kubernetes[.]io|k8s[.]io)/'))[0] + ' is reserved: keys under agents.x-k8s.io/, extensions.agents.x-k8s.io/, kubernetes.io/ and k8s.io/ (or their subdomains) are reserved, except cluster-autoscaler.kubernetes.io/safe-to-evict'"
	Annotations map[string]string `json:"annotations,omitempty"`
}

// EnvVar is an environment variable a claim sets in its sandbox's Pod.
type EnvVar struct {
	// name of the variable: printable ASCII characters other than '='.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^[ -<>-~]+$')",message="env[].name must consist of printable ASCII characters other than '='"
	Name string `json:"name"`

	// value of the variable.
	// +required
	// +kubebuilder:validation:MaxLength=65536
	Value string `json:"value"`

	// containerName is the container, or init container, that gets the variable. Unset, it is
	// the pod's first container.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="env[].containerName must be a container name: a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit)"
	ContainerName string `json:"containerName,omitempty"`
}

// SandboxClaimSpec is the desired state of a SandboxClaim.
// +kubebuilder:validation:XValidation:rule="has(self.warmPoolRef) != has(self.sandboxTemplateRef)",message="exactly one of spec.warmPoolRef and spec.sandboxTemplateRef must be set"
type SandboxClaimSpec struct {
	// warmPoolRef names the SandboxWarmPool to take a ready sandbox from. When the pool has
	// none, or the claim sets volumeClaimTemplates, or env that the sandbox's agent cannot take
	// (see env), a sandbox named like the claim is started cold from the pool's template. Exactly one of warmPoolRef and sandboxTemplateRef
	// must be set.
	// +optional
	WarmPoolRef *SandboxWarmPoolReference `json:"warmPoolRef,omitempty"`

	// sandboxTemplateRef names the SandboxTemplate to start a sandbox from, cold, without a warm
	// pool; the sandbox is named like the claim. Exactly one of warmPoolRef and
	// sandboxTemplateRef must be set. kubox addition.
	// +optional
	SandboxTemplateRef *SandboxTemplateReference `json:"sandboxTemplateRef,omitempty"`

	// lifecycle says when the claim expires and what happens then. Unset, it never expires.
	// +optional
	Lifecycle *ClaimLifecycle `json:"lifecycle,omitempty"`

	// additionalPodMetadata holds labels and annotations added to the sandbox's Pod.
	// +optional
	AdditionalPodMetadata AdditionalPodMetadata `json:"additionalPodMetadata,omitempty"`

	// env lists environment variables to set in the sandbox's Pod, if the template's
	// envVarsInjectionPolicy allows it. A variable may appear once per container. When the
	// template runs kubox-agent and every variable is for the agent's container, a warm
	// sandbox takes them through its agent, for the processes started through it once the claim
	// is Ready (kubox); other env starts the sandbox cold, with the variables in its Pod.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:XValidation:rule="self.all(x, self.exists_one(y, y.name == x.name && (has(y.containerName) ? y.containerName : '') == (has(x.containerName) ? x.containerName : '')))",message="env[].name must be unique per containerName"
	Env []EnvVar `json:"env,omitempty"`

	// volumeClaimTemplates lists PersistentVolumeClaims to add to the sandbox, or to replace the
	// template's by name, if the template's volumeClaimTemplatesPolicy allows it. Setting any
	// starts the sandbox cold. Names must be unique. A claim's volume starts empty on a new
	// volume: spec.dataSource, spec.dataSourceRef, spec.volumeName, spec.selector and
	// spec.volumeAttributesClassName are rejected (kubox: stricter than agent-sandbox), and
	// spec.storageClassName and the size are bounded by the template's claimPolicy.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(x, self.exists_one(y, has(y.metadata.name) && has(x.metadata.name) && y.metadata.name == x.metadata.name))",message="volumeClaimTemplates[].metadata.name must be unique"
	// +kubebuilder:validation:XValidation:rule="self.all(x, !has(x.spec.dataSource))",message="volumeClaimTemplates[].spec.dataSource must not be set in a claim: it would fill the volume from a PersistentVolumeClaim or VolumeSnapshot, which may hold the data of another user; set it in the SandboxTemplate instead"
	// +kubebuilder:validation:XValidation:rule="self.all(x, !has(x.spec.dataSourceRef))",message="volumeClaimTemplates[].spec.dataSourceRef must not be set in a claim: it would fill the volume from a PersistentVolumeClaim, VolumeSnapshot or populator object, which may hold the data of another user; set it in the SandboxTemplate instead"
	// +kubebuilder:validation:XValidation:rule="self.all(x, !has(x.spec.volumeName))",message="volumeClaimTemplates[].spec.volumeName must not be set in a claim: it would bind a chosen PersistentVolume, which may hold the data of another user; set it in the SandboxTemplate instead"
	// +kubebuilder:validation:XValidation:rule="self.all(x, !has(x.spec.selector))",message="volumeClaimTemplates[].spec.selector must not be set in a claim: it would bind a pre-provisioned PersistentVolume chosen by its labels, which may hold the data of another user; set it in the SandboxTemplate instead"
	// +kubebuilder:validation:XValidation:rule="self.all(x, !has(x.spec.volumeAttributesClassName))",message="volumeClaimTemplates[].spec.volumeAttributesClassName must not be set in a claim: it would choose the VolumeAttributesClass of the volume (its performance and cost), which only the template may choose; set it in the SandboxTemplate instead"
	VolumeClaimTemplates []sandboxv1beta1.PersistentVolumeClaimTemplate `json:"volumeClaimTemplates,omitempty"`

	// secretFiles lists Secrets whose keys are written as files (mode 0400) into the sandbox,
	// at paths the template's claimPolicy.allowedSecretFilePaths allows; the template must run
	// kubox-agent. Whoever creates the claim must be allowed to get each Secret (checked at
	// admission). The sandbox, warm or cold, receives them through its agent before the claim is
	// Ready (Ready=False/SettingsPending until then), without a restart; nothing of them stays
	// for another claim. kubox addition.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(x, self.exists_one(y, y.mountPath == x.mountPath))",message="secretFiles[].mountPath must be unique"
	SecretFiles []SecretFile `json:"secretFiles,omitempty"`

	// idlePolicy suspends the claim's sandbox after a time without activity and wakes it on the
	// next request; it replaces the template's idlePolicy. kubox addition.
	// +optional
	IdlePolicy *sandboxv1beta1.IdlePolicy `json:"idlePolicy,omitempty"`

	// egress narrows the template's egress for this claim's sandbox: allowDomains replace the
	// template's and must each be covered by one of them; denyDomains and denyCIDRs are added.
	// A claim setting egress on a template without egress, or allowing a domain the template
	// does not, gets Ready=False with reason EgressRejected. kubox addition.
	// +optional
	Egress *sandboxv1beta1.EgressRestriction `json:"egress,omitempty"`

	// snapshotRef starts the claim's sandbox from a SandboxSnapshot in the claim's namespace:
	// its processes, memory and files as they were when the snapshot was taken, in a Pod built
	// from the template. The snapshot must be of a sandbox with the template's Pod (the runtime
	// refuses other mounts or containers). A warm pool member serves the claim only when the
	// pool's template starts from the same snapshot; otherwise the sandbox starts cold, once the
	// snapshot is Ready. Whoever creates the claim, or changes snapshotRef, must be allowed to get
	// the snapshot (checked at admission), and a snapshot other than the template's own
	// snapshotRef needs the template's claimPolicy.snapshotRefPolicy Allowed (else Ready=False
	// with reason SnapshotRefRejected). kubox addition.
	// +optional
	SnapshotRef *sandboxv1beta1.SnapshotReference `json:"snapshotRef,omitempty"`
}

// SecretFile writes the keys of a Secret as files into a claim's sandbox. kubox addition.
type SecretFile struct {
	// secretName is a Secret in the claim's namespace; each of its keys becomes a file named like
	// the key, readable only by the sandbox's user.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SecretName string `json:"secretName"`

	// mountPath is the absolute directory the files are written to; it must be one of the
	// template's claimPolicy.allowedSecretFilePaths or under one.
	// +required
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/') && !self.contains('/../') && !self.endsWith('/..') && !self.contains('//')",message="secretFiles[].mountPath must be an absolute, clean path (no '..' element, no '//')"
	MountPath string `json:"mountPath"`
}

// ClaimSandboxStatus identifies the sandbox bound to a claim.
type ClaimSandboxStatus struct {
	// name of the Sandbox bound to the claim: the claim's own name when the sandbox was started
	// cold, <pool>-xxxxx when it came from a warm pool.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// podIPs are the IP addresses of the sandbox's Pod, as the Sandbox reports them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=2
	PodIPs []string `json:"podIPs,omitempty"`

	// serviceFQDN is the fully qualified DNS name of the sandbox's Service, as the Sandbox
	// reports it; empty when it has none.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ServiceFQDN string `json:"serviceFQDN,omitempty"`
}

// SandboxClaimStatus is the observed state of a SandboxClaim.
type SandboxClaimStatus struct {
	// conditions describe the claim: Ready, mirrored from its sandbox or saying why there is no
	// ready sandbox, and Finished, mirrored from its sandbox.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// sandbox identifies the sandbox bound to the claim, once there is one.
	// +optional
	Sandbox ClaimSandboxStatus `json:"sandbox,omitempty"`

	// observedGeneration is the metadata.generation this status was computed from. kubox addition.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// SandboxClaim asks for a sandbox: one taken ready from a warm pool when possible, otherwise one
// started cold from a template. The claim owns its sandbox, mirrors its readiness, and expires it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Namespaced,shortName=sandboxclaim,categories=kubox
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status",description="Whether the claim's sandbox is ready"
// +kubebuilder:printcolumn:name="Sandbox",type="string",JSONPath=".status.sandbox.name",description="Sandbox bound to the claim"
// +kubebuilder:printcolumn:name="Reason",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].reason",description="Why the claim is or is not ready"
// +kubebuilder:printcolumn:name="Warm Pool",type="string",JSONPath=".spec.warmPoolRef.name",description="SandboxWarmPool the claim takes its sandbox from",priority=1
// +kubebuilder:printcolumn:name="Template",type="string",JSONPath=".spec.sandboxTemplateRef.name",description="SandboxTemplate the claim starts its sandbox from, without a pool",priority=1
// +kubebuilder:printcolumn:name="Pod IP",type="string",JSONPath=".status.sandbox.podIPs[0]",description="IP address of the sandbox's Pod",priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 63 characters (lowercase letters, digits and '-', starting with a letter): a sandbox started cold for the claim is named like it"
type SandboxClaim struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the claim.
	// +required
	Spec SandboxClaimSpec `json:"spec"`

	// status is the observed state of the claim.
	// +optional
	Status SandboxClaimStatus `json:"status,omitempty"`
}

// SandboxClaimList is a list of SandboxClaims.
// +kubebuilder:object:root=true
type SandboxClaimList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the claims.
	Items []SandboxClaim `json:"items"`
}
