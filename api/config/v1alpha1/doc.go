// Package v1alpha1 holds ControllerConfiguration (config.kubox.dev/v1alpha1), the file
// kubox-controller reads at start-up: worker counts, cluster domain, API client limits, and the
// manager's endpoints. Later components add their settings here rather than as flags.
//
// +kubebuilder:object:generate=true
// +kubebuilder:skip
// +groupName=config.kubox.dev
package v1alpha1
