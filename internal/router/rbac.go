package router

// What kubox-router needs of the Kubernetes API: read Sandboxes and SandboxClaims (its informer
// cache), patch Sandboxes (the kubox.dev/last-activity annotation of those with an idle policy,
// and resuming a suspended one it wakes for a caller allowed to patch it), and review tokens and
// permissions (TokenReview, SubjectAccessReview; the built-in ClusterRole
// system:auth-delegator grants the same two). It reads no Secrets: agent tokens are
// derived from the shared key. It watches the Pods of sandboxes (label-scoped) to dial a pod IP
// only while the sandbox's own Pod holds it.
//
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=agents.x-k8s.io,resources=sandboxes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
