package router

// What kubox-router needs of the Kubernetes API: read Sandboxes and SandboxClaims (its informer
// cache), and review tokens and permissions (TokenReview, SubjectAccessReview; the built-in
// ClusterRole system:auth-delegator grants the same two). It reads no Secrets and no Pods: agent
// tokens are derived from the shared key, pod IPs come from the Sandbox's status.
//
// +kubebuilder:rbac:groups=agents.x-k8s.io,resources=sandboxes,verbs=get;list;watch
// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
