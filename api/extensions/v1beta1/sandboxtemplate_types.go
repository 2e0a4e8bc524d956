package v1beta1

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// NetworkPolicyManagement says whether the controller manages a template's NetworkPolicy.
// +kubebuilder:validation:Enum=Managed;Unmanaged
type NetworkPolicyManagement string

const (
	// NetworkPolicyManagementManaged makes the controller keep one NetworkPolicy per template.
	NetworkPolicyManagementManaged NetworkPolicyManagement = "Managed"
	// NetworkPolicyManagementUnmanaged makes the controller create no NetworkPolicy and delete
	// the one it owns.
	NetworkPolicyManagementUnmanaged NetworkPolicyManagement = "Unmanaged"
)

// EnvVarsInjectionPolicy says whether claims may set environment variables in sandboxes built
// from a template.
// +kubebuilder:validation:Enum=Allowed;Overrides;Disallowed
type EnvVarsInjectionPolicy string

const (
	// EnvVarsInjectionPolicyAllowed lets a claim add variables the template does not define.
	EnvVarsInjectionPolicyAllowed EnvVarsInjectionPolicy = "Allowed"
	// EnvVarsInjectionPolicyOverrides lets a claim add variables and replace the template's.
	EnvVarsInjectionPolicyOverrides EnvVarsInjectionPolicy = "Overrides"
	// EnvVarsInjectionPolicyDisallowed rejects a claim that sets any variable.
	EnvVarsInjectionPolicyDisallowed EnvVarsInjectionPolicy = "Disallowed"
)

// VolumeClaimTemplatesPolicy says whether claims may add volume claim templates to sandboxes
// built from a template.
// +kubebuilder:validation:Enum=Disallowed;Allowed;Overrides
type VolumeClaimTemplatesPolicy string

const (
	// VolumeClaimTemplatesPolicyDisallowed rejects a claim that sets any volume claim template.
	VolumeClaimTemplatesPolicyDisallowed VolumeClaimTemplatesPolicy = "Disallowed"
	// VolumeClaimTemplatesPolicyAllowed lets a claim add templates whose names the template does
	// not use.
	VolumeClaimTemplatesPolicyAllowed VolumeClaimTemplatesPolicy = "Allowed"
	// VolumeClaimTemplatesPolicyOverrides lets a claim add templates and replace the template's
	// own by name.
	VolumeClaimTemplatesPolicyOverrides VolumeClaimTemplatesPolicy = "Overrides"
)

// SnapshotRefPolicy says whether claims may start the sandboxes of a template from a
// SandboxSnapshot of their choosing. kubox addition.
// +kubebuilder:validation:Enum=Disallowed;Allowed
type SnapshotRefPolicy string

const (
	// SnapshotRefPolicyDisallowed rejects a claim whose snapshotRef names a snapshot other than
	// the template's own spec.snapshotRef.
	SnapshotRefPolicyDisallowed SnapshotRefPolicy = "Disallowed"
	// SnapshotRefPolicyAllowed lets a claim name any SandboxSnapshot of its namespace that its
	// creator may get.
	SnapshotRefPolicyAllowed SnapshotRefPolicy = "Allowed"
)

// NetworkPolicySpec holds the rules of a template's NetworkPolicy. The controller sets the pod
// selector (the template's sandboxes) and the policy types (Ingress and Egress) itself.
type NetworkPolicySpec struct {
	// ingress lists the traffic allowed into the template's sandboxes. An empty or absent list
	// allows no incoming traffic.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Ingress []networkingv1.NetworkPolicyIngressRule `json:"ingress,omitempty"`

	// egress lists the traffic allowed out of the template's sandboxes. An empty or absent list
	// allows no outgoing traffic.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Egress []networkingv1.NetworkPolicyEgressRule `json:"egress,omitempty"`
}

// ClaimPolicy bounds what a claim may add to a template's sandboxes, beyond what
// envVarsInjectionPolicy and volumeClaimTemplatesPolicy allow. kubox addition.
type ClaimPolicy struct {
	// allowedLabelDomains are domains a label in a claim's additionalPodMetadata may have (the
	// key's prefix, or a subdomain of it), besides those the controller allows for every template
	// (controllers.sandboxClaim.allowedLabelDomains, default sandbox.users.io). A claim with any
	// other label gets Ready=False with reason InvalidMetadata.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	AllowedLabelDomains []string `json:"allowedLabelDomains,omitempty"`

	// allowedAnnotationDomains are domains an annotation in a claim's additionalPodMetadata may
	// have (the key's prefix, or a subdomain of it), besides those the controller allows for
	// every template (controllers.sandboxClaim.allowedAnnotationDomains, default
	// sandbox.users.io), the annotation cluster-autoscaler.kubernetes.io/safe-to-evict and keys
	// that are bare names with no domain and no dot (owner, note: the end user's). A claim with
	// any other annotation gets Ready=False with reason InvalidMetadata. Annotations
	// are read by CNI plugins (k8s.v1.cni.cncf.io, cni.projectcalico.org), service meshes
	// (sidecar.istio.io) and container runtimes: allow a domain only if any claimer may choose
	// what it controls.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	AllowedAnnotationDomains []string `json:"allowedAnnotationDomains,omitempty"`

	// allowedStorageClassNames are the StorageClasses a claim's volumeClaimTemplates may name in
	// spec.storageClassName. Unset, they are the classes the template's own volumeClaimTemplates
	// name. A claim's volume claim template that names no class gets the cluster's default
	// StorageClass and is always allowed; one that names a class outside these gets Ready=False
	// with reason VolumeClaimTemplatesError. The empty class "" (which binds a pre-provisioned
	// PersistentVolume) cannot be listed: a claim may use it only when this list is unset and the
	// template's own volumeClaimTemplates do.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	AllowedStorageClassNames []string `json:"allowedStorageClassNames,omitempty"`

	// maxStoragePerVolume is the most storage (resources.requests.storage, and
	// resources.limits.storage) that one of a claim's volumeClaimTemplates may ask for; a claim
	// asking for more gets Ready=False with reason VolumeClaimTemplatesError. Unset, there is no
	// bound besides the namespace's ResourceQuota.
	// +optional
	MaxStoragePerVolume *resource.Quantity `json:"maxStoragePerVolume,omitempty"`

	// allowedSecretFilePaths are the directories (absolute paths) under which a claim's
	// secretFiles may be written. Unset or empty, a claim may not set secretFiles: such a claim
	// gets Ready=False with reason SecretFilesRejected.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.all(p, p.startsWith('/') && p != '/' && !p.contains('/../') && !p.endsWith('/..') && !p.contains('//'))",message="claimPolicy.allowedSecretFilePaths must be absolute, clean paths other than /"
	AllowedSecretFilePaths []string `json:"allowedSecretFilePaths,omitempty"`

	// snapshotRefPolicy says whether a claim's spec.snapshotRef may start its sandbox from a
	// SandboxSnapshot: Disallowed (the default, also when claimPolicy is unset) gives a claim
	// naming any snapshot but the template's own spec.snapshotRef Ready=False with reason
	// SnapshotRefRejected; Allowed lets it name any SandboxSnapshot of the claim's namespace that
	// its creator may get (checked at admission). A snapshot holds the memory, processes and files
	// of the sandbox it was taken of, and must be of a sandbox with the template's Pod.
	// +optional
	SnapshotRefPolicy SnapshotRefPolicy `json:"snapshotRefPolicy,omitempty"`
}

// SandboxTemplateSpec is the blueprint of the sandboxes built from a template, and what claims
// may change in it.
type SandboxTemplateSpec struct {
	sandboxv1beta1.SandboxBlueprint `json:",inline"`

	// networkPolicy holds the ingress and egress rules of the NetworkPolicy the controller keeps
	// for the template's sandboxes when networkPolicyManagement is Managed. Unset, that policy is
	// a secure default: ingress only from the sandbox router; egress to cluster DNS and to the
	// public internet, but not to private, link-local or cloud metadata addresses. Ignored when
	// networkPolicyManagement is Unmanaged.
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// networkPolicyManagement is Managed (the default): the controller keeps one NetworkPolicy,
	// named <template>-network-policy, selecting the template's sandboxes; or Unmanaged: it
	// creates none and deletes the one it owns, leaving network policy to the cluster's
	// administrators.
	// +optional
	// +kubebuilder:default=Managed
	NetworkPolicyManagement NetworkPolicyManagement `json:"networkPolicyManagement,omitempty"`

	// envVarsInjectionPolicy says whether a claim's env may set variables in the sandbox:
	// Disallowed (the default) fails a claim that sets any; Allowed lets it add variables the
	// template does not define; Overrides also lets it replace the template's values.
	// +optional
	// +kubebuilder:default=Disallowed
	EnvVarsInjectionPolicy EnvVarsInjectionPolicy `json:"envVarsInjectionPolicy,omitempty"`

	// volumeClaimTemplatesPolicy says whether a claim's volumeClaimTemplates may change the
	// sandbox's: Disallowed (the default) fails a claim that sets any; Allowed lets it add
	// templates with new names; Overrides also lets it replace the template's own by name.
	// +optional
	// +kubebuilder:default=Disallowed
	VolumeClaimTemplatesPolicy VolumeClaimTemplatesPolicy `json:"volumeClaimTemplatesPolicy,omitempty"`

	// claimPolicy bounds the pod metadata and the volumes a claim may add to the template's
	// sandboxes: the label and annotation domains of its additionalPodMetadata, and the storage
	// classes and sizes of its volumeClaimTemplates. Unset, a claim may use the domains the
	// controller allows for every template (sandbox.users.io by default) and the storage classes
	// of the template's own volumeClaimTemplates. kubox addition.
	// +optional
	ClaimPolicy *ClaimPolicy `json:"claimPolicy,omitempty"`
}

// SandboxTemplate is a reusable sandbox blueprint: the Pod, volumes and Service of every sandbox
// built from it by warm pools and claims, the NetworkPolicy that confines those sandboxes, and
// what a claim may add to them.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Namespaced,shortName=sandboxtemplate,categories=kubox
// +kubebuilder:printcolumn:name="Network Policy",type="string",JSONPath=".spec.networkPolicyManagement",description="Whether the controller manages the template's NetworkPolicy"
// +kubebuilder:printcolumn:name="Env Vars",type="string",JSONPath=".spec.envVarsInjectionPolicy",description="Whether claims may set environment variables",priority=1
// +kubebuilder:printcolumn:name="Volumes",type="string",JSONPath=".spec.volumeClaimTemplatesPolicy",description="Whether claims may add volume claim templates",priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="self.spec.networkPolicyManagement == 'Unmanaged' || size(self.metadata.name) <= 238",message="metadata.name must be at most 238 characters while spec.networkPolicyManagement is Managed: the template's NetworkPolicy is named <name>-network-policy, which must fit in 253"
type SandboxTemplate struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the blueprint of the template's sandboxes and the policies for claims.
	// +required
	Spec SandboxTemplateSpec `json:"spec"`
}

// SandboxTemplateList is a list of SandboxTemplates.
// +kubebuilder:object:root=true
type SandboxTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the templates.
	Items []SandboxTemplate `json:"items"`
}
