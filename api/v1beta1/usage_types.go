package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// UsageStatus is a sandbox's usage as kubox-controller counted it from the states it observed:
// time while no controller ran is not counted. Every figure is rounded down to a whole number.
// Requested figures are what the sandbox's Pod reserved, not what it used. kubox addition.
type UsageStatus struct {
	// lastUpdateTime is when these figures were counted.
	// +required
	LastUpdateTime metav1.Time `json:"lastUpdateTime"`

	// runningSeconds is how long the sandbox was Ready.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RunningSeconds int64 `json:"runningSeconds,omitempty"`

	// suspendedSeconds is how long the sandbox was Suspended.
	// +optional
	// +kubebuilder:validation:Minimum=0
	SuspendedSeconds int64 `json:"suspendedSeconds,omitempty"`

	// wakes is how many times the sandbox ran again after a suspension.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Wakes int64 `json:"wakes,omitempty"`

	// requestedCPUCoreSeconds is the CPU cores its Pod requested times runningSeconds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RequestedCPUCoreSeconds int64 `json:"requestedCPUCoreSeconds,omitempty"`

	// requestedMemoryGiBSeconds is the memory (GiB) its Pod requested times runningSeconds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RequestedMemoryGiBSeconds int64 `json:"requestedMemoryGiBSeconds,omitempty"`
}
