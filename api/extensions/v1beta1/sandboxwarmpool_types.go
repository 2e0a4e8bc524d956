package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// SandboxTemplateReference names a SandboxTemplate in the referring object's namespace.
type SandboxTemplateReference struct {
	// name of the SandboxTemplate, in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="sandboxTemplateRef.name must be a SandboxTemplate name: a DNS-1123 subdomain (lowercase letters, digits, '-' and '.')"
	Name string `json:"name"`
}

// WarmPoolUpdateStrategyType says how a warm pool replaces members built from an older version of
// its template.
// +kubebuilder:validation:Enum=Recreate;OnReplenish;RollingUpdate
type WarmPoolUpdateStrategyType string

const (
	// WarmPoolUpdateStrategyRecreate deletes stale unclaimed members at once and refills the pool;
	// claims are never given a stale member.
	WarmPoolUpdateStrategyRecreate WarmPoolUpdateStrategyType = "Recreate"
	// WarmPoolUpdateStrategyOnReplenish keeps stale members until they are claimed or deleted;
	// only their replacements are built from the new template.
	WarmPoolUpdateStrategyOnReplenish WarmPoolUpdateStrategyType = "OnReplenish"
	// WarmPoolUpdateStrategyRollingUpdate replaces stale unclaimed members gradually, within
	// maxSurge and maxUnavailable. kubox addition.
	WarmPoolUpdateStrategyRollingUpdate WarmPoolUpdateStrategyType = "RollingUpdate"
)

// RollingUpdateWarmPool bounds a rolling replacement of a warm pool's stale members. kubox
// addition.
// +kubebuilder:validation:XValidation:rule="!has(self.maxSurge) || !has(self.maxUnavailable) || !string(self.maxSurge).matches('^0+%?$') || !string(self.maxUnavailable).matches('^0+%?$')",message="updateStrategy.rollingUpdate.maxSurge and maxUnavailable must not both be zero: the rollout could never replace a member"
type RollingUpdateWarmPool struct {
	// maxSurge is how many members the pool may have above replicas while it replaces stale
	// ones: a number, or a percentage of replicas rounded up. Defaults to 25%.
	// +optional
	// +kubebuilder:default="25%"
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^[0-9]{1,9}%$')",message="updateStrategy.rollingUpdate.maxSurge must be a non-negative number or a percentage such as 25%"
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// maxUnavailable is by how many members the number of ready, unclaimed members may fall below
	// replicas while the pool replaces stale ones: a number, or a percentage of replicas rounded
	// down. Defaults to 25%.
	// +optional
	// +kubebuilder:default="25%"
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="updateStrategy.rollingUpdate.maxUnavailable must be a non-negative number or a percentage from 0% to 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// WarmPoolUpdateStrategy says how a warm pool treats members made stale by a change of its
// template.
// +kubebuilder:validation:XValidation:rule="(has(self.type) && self.type == 'RollingUpdate') || !has(self.rollingUpdate)",message="updateStrategy.rollingUpdate may be set only when updateStrategy.type is RollingUpdate"
type WarmPoolUpdateStrategy struct {
	// type is OnReplenish (the default): stale unclaimed members stay until claimed or deleted;
	// Recreate: they are deleted at once and claims never get one; or RollingUpdate (kubox
	// addition): they are replaced gradually, within rollingUpdate's bounds. A member is stale
	// when the template's pod spec, volume claim templates or service setting changed, or the
	// pool names another template; label and annotation changes alone never make it stale.
	// Claimed sandboxes are never touched.
	// +optional
	// +kubebuilder:default=OnReplenish
	Type WarmPoolUpdateStrategyType `json:"type,omitempty"`

	// rollingUpdate bounds a RollingUpdate; unset, maxSurge and maxUnavailable are 25%. kubox
	// addition.
	// +optional
	RollingUpdate *RollingUpdateWarmPool `json:"rollingUpdate,omitempty"`
}

// SandboxWarmPoolSpec is the desired state of a SandboxWarmPool.
type SandboxWarmPoolSpec struct {
	// replicas is how many ready, unclaimed sandboxes the pool keeps. Defaults to 1; 0 keeps
	// none, and claims of the pool then start their sandboxes cold.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// sandboxTemplateRef names the SandboxTemplate the pool's members are built from; claims of
	// the pool start cold from it too.
	// +required
	SandboxTemplateRef SandboxTemplateReference `json:"sandboxTemplateRef"`

	// updateStrategy says what happens to unclaimed members when the template changes.
	// +optional
	// +kubebuilder:default={}
	UpdateStrategy WarmPoolUpdateStrategy `json:"updateStrategy,omitempty"`

	// progressDeadlineSeconds is how long the pool may go without progress towards replicas
	// ready members built from the current template before its Progressing condition turns
	// False with reason ProgressDeadlineExceeded. Defaults to 600. kubox addition.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// readinessGracePeriodSeconds is how long a member may stay not Ready before the pool
	// replaces it; a member held only by scheduling (unschedulable, or gated) is kept and
	// reported instead. Unset: the controller's setting
	// controllers.sandboxWarmPool.readinessGracePeriod (default 5 minutes). Minimum 30.
	// agent-sandbox v1 field.
	// +optional
	// +kubebuilder:validation:Minimum=30
	ReadinessGracePeriodSeconds *int32 `json:"readinessGracePeriodSeconds,omitempty"`
}

// SandboxWarmPoolStatus is the observed state of a SandboxWarmPool.
type SandboxWarmPoolStatus struct {
	// replicas is the number of the pool's members, ready or not: unclaimed sandboxes it owns
	// that are not being deleted.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas,omitempty"`

	// readyReplicas is the number of members whose Ready condition is True.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// updatedReplicas is the number of members built from the current template. kubox addition.
	// +optional
	// +kubebuilder:validation:Minimum=0
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// selector is the label selector, as a string, that matches the pool's members; the scale
	// subresource reports it to autoscalers.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Selector string `json:"selector,omitempty"`

	// observedGeneration is the metadata.generation of the pool this status was computed from.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions describe the pool: Ready and Progressing. kubox addition.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SandboxWarmPool keeps a number of ready, unclaimed sandboxes built from a template, so that a
// claim gets one in milliseconds. Its scale subresource lets a HorizontalPodAutoscaler or KEDA
// drive replicas.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Namespaced,shortName=swp,categories=kubox
// +kubebuilder:printcolumn:name="Ready",type="integer",JSONPath=".status.readyReplicas",description="Number of ready, unclaimed members"
// +kubebuilder:printcolumn:name="Desired",type="integer",JSONPath=".spec.replicas",description="Number of ready, unclaimed members the pool keeps"
// +kubebuilder:printcolumn:name="Up-to-date",type="integer",JSONPath=".status.updatedReplicas",description="Number of members built from the current template"
// +kubebuilder:printcolumn:name="Reason",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].reason",description="Why the pool is or is not ready"
// +kubebuilder:printcolumn:name="Template",type="string",JSONPath=".spec.sandboxTemplateRef.name",description="SandboxTemplate the members are built from",priority=1
// +kubebuilder:printcolumn:name="Strategy",type="string",JSONPath=".spec.updateStrategy.type",description="How stale members are replaced",priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 63 characters (lowercase letters, digits and '-', starting with a letter): the pool's members are Sandboxes named <name>-xxxxx"
type SandboxWarmPool struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the pool.
	// +required
	Spec SandboxWarmPoolSpec `json:"spec"`

	// status is the observed state of the pool.
	// +optional
	Status SandboxWarmPoolStatus `json:"status,omitempty"`
}

// SandboxWarmPoolList is a list of SandboxWarmPools.
// +kubebuilder:object:root=true
type SandboxWarmPoolList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the warm pools.
	Items []SandboxWarmPool `json:"items"`
}
