package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ControllerConfiguration configures kubox-controller.
// +kubebuilder:object:root=true
type ControllerConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// clusterDomain is the DNS domain of the cluster, used in a sandbox's status.serviceFQDN.
	// Default: cluster.local.
	// +optional
	ClusterDomain string `json:"clusterDomain,omitempty"`

	// clientConnection limits the controller's requests to the Kubernetes API.
	// +optional
	ClientConnection ClientConnection `json:"clientConnection,omitempty"`

	// controllers holds per-controller settings.
	// +optional
	Controllers Controllers `json:"controllers,omitempty"`

	// metrics configures the Prometheus metrics endpoint.
	// +optional
	Metrics Metrics `json:"metrics,omitempty"`

	// health configures the /healthz and /readyz endpoints.
	// +optional
	Health Health `json:"health,omitempty"`

	// leaderElection configures leader election between controller replicas.
	// +optional
	LeaderElection LeaderElection `json:"leaderElection,omitempty"`
}

// ClientConnection limits requests to the Kubernetes API.
type ClientConnection struct {
	// qps is the sustained rate of requests per second to the API server; a negative value turns
	// client-side rate limiting off (the API server's priority and fairness still applies).
	// Default: -1.
	// +optional
	QPS *float32 `json:"qps,omitempty"`

	// burst is the number of requests allowed above qps for a short time. Default: 100.
	// +optional
	Burst *int32 `json:"burst,omitempty"`
}

// Controllers holds per-controller settings.
type Controllers struct {
	// sandbox configures the Sandbox controller.
	// +optional
	Sandbox ControllerSettings `json:"sandbox,omitempty"`
}

// ControllerSettings holds the settings every controller has.
type ControllerSettings struct {
	// workers is the number of Sandboxes reconciled at once. Default: 100.
	// +optional
	Workers *int32 `json:"workers,omitempty"`
}

// Metrics configures the metrics endpoint.
type Metrics struct {
	// bindAddress is the address the metrics endpoint listens on; "0" turns it off.
	// Default: ":8080".
	// +optional
	BindAddress string `json:"bindAddress,omitempty"`
}

// Health configures the health probe endpoint.
type Health struct {
	// bindAddress is the address /healthz and /readyz listen on; "0" turns them off.
	// Default: ":8081".
	// +optional
	BindAddress string `json:"bindAddress,omitempty"`
}

// LeaderElection configures leader election.
type LeaderElection struct {
	// enabled turns leader election on, so only one replica reconciles at a time. Default: true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// namespace holds the election's Lease; empty means the namespace the controller runs in.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// id is the name of the Lease. Default: kubox-controller.kubox.dev.
	// +optional
	ID string `json:"id,omitempty"`
}
