package v1beta1

// Condition types of a SandboxClaim.
const (
	// ClaimConditionReady is the claim's sandbox's Ready condition, with the claim's generation,
	// while the claim has a sandbox; otherwise False with one of the claim reasons below.
	ClaimConditionReady = "Ready"
	// ClaimConditionFinished mirrors the Finished condition of the claim's sandbox, status, reason
	// and lastTransitionTime: absent until a Pod of the sandbox terminated, then kept (agent-sandbox
	// v1.0.13), True across a suspend, False/NotFinished while a later Pod runs; it outlives the
	// sandbox. lifecycle.ttlSecondsAfterFinished counts from it while it is True.
	ClaimConditionFinished = "Finished"
)

// Reasons of a SandboxClaim's Ready condition, besides those of the Sandbox's Ready condition,
// which are mirrored as they are.
const (
	// ClaimReasonTemplateNotFound: the SandboxTemplate the claim or its pool names does not exist.
	ClaimReasonTemplateNotFound = "TemplateNotFound"
	// ClaimReasonWarmPoolNotFound: the SandboxWarmPool the claim names does not exist.
	ClaimReasonWarmPoolNotFound = "WarmPoolNotFound"
	// ClaimReasonAdoptionConflict: the sandbox the claim was binding is owned by someone else.
	ClaimReasonAdoptionConflict = "AdoptionConflict"
	// ClaimReasonSandboxCreatePending: a Sandbox named like the claim is being created; the
	// controller has not seen it yet.
	ClaimReasonSandboxCreatePending = "SandboxCreatePending"
	// ClaimReasonInvalidMetadata: additionalPodMetadata breaks a rule that needs the template or
	// the controller's configuration (a label domain not allowed, a key the template sets to
	// another value).
	ClaimReasonInvalidMetadata = "InvalidMetadata"
	// ClaimReasonEnvVarsInjectionRejected: the claim sets env that the template's
	// envVarsInjectionPolicy does not allow, or names a container the template does not have.
	ClaimReasonEnvVarsInjectionRejected = "EnvVarsInjectionRejected"
	// ClaimReasonVolumeClaimTemplatesError: the claim's volumeClaimTemplates are not allowed by
	// the template's volumeClaimTemplatesPolicy, or clash with the template's.
	ClaimReasonVolumeClaimTemplatesError = "VolumeClaimTemplatesError"
	// ClaimReasonSecretFilesRejected: the claim's secretFiles are not allowed by the template's
	// claimPolicy, or a Secret it names cannot be read. kubox addition.
	ClaimReasonSecretFilesRejected = "SecretFilesRejected"
	// ClaimReasonSnapshotRefRejected: the claim's snapshotRef names a snapshot other than its
	// template's own, and the template's claimPolicy.snapshotRefPolicy is not Allowed. kubox
	// addition.
	ClaimReasonSnapshotRefRejected = "SnapshotRefRejected"
	// ClaimReasonEgressRejected: the claim's egress widens its template's (a domain the template
	// does not allow), or the template has no egress to narrow. kubox addition.
	ClaimReasonEgressRejected = "EgressRejected"
	// ClaimReasonSettingsPending: the claim's env and secretFiles are being delivered into its
	// warm sandbox through the sandbox's agent. kubox addition.
	ClaimReasonSettingsPending = "SettingsPending"
	// ClaimReasonClaimExpired: the claim reached its shutdownTime or its TTL after finishing.
	ClaimReasonClaimExpired = "ClaimExpired"
	// ClaimReasonSandboxExpired: the claim's sandbox reached its own shutdownTime.
	ClaimReasonSandboxExpired = "SandboxExpired"
	// ClaimReasonSandboxMissing: the sandbox bound to the claim no longer exists.
	ClaimReasonSandboxMissing = "SandboxMissing"
	// ClaimReasonSandboxNotReady: the claim's sandbox has no Ready condition yet.
	ClaimReasonSandboxNotReady = "SandboxNotReady"
	// ClaimReasonReconcilerError: the controller met an error; the message says which.
	ClaimReasonReconcilerError = "ReconcilerError"
)

// Condition types of a SandboxWarmPool. kubox addition.
const (
	// WarmPoolConditionReady is True when the pool has as many ready, unclaimed members as
	// spec.replicas.
	WarmPoolConditionReady = "Ready"
	// WarmPoolConditionProgressing is True while the pool is making or has made its members match
	// spec.replicas and the current template, and False once it has made no progress for
	// spec.progressDeadlineSeconds.
	WarmPoolConditionProgressing = "Progressing"
)

// Reasons of a SandboxWarmPool's Ready condition.
const (
	// WarmPoolReasonReplicasReady: as many members are ready as spec.replicas asks for.
	WarmPoolReasonReplicasReady = "ReplicasReady"
	// WarmPoolReasonReplicasNotReady: fewer members are ready than spec.replicas; they are being
	// created or are starting.
	WarmPoolReasonReplicasNotReady = "ReplicasNotReady"
	// WarmPoolReasonMembersUnschedulable: some members cannot be scheduled; the pool keeps them,
	// rather than replacing them over and over, until the cluster can place them.
	WarmPoolReasonMembersUnschedulable = "MembersUnschedulable"
	// WarmPoolReasonTemplateNotFound: the SandboxTemplate the pool names does not exist (also a
	// Progressing reason).
	WarmPoolReasonTemplateNotFound = "TemplateNotFound"
	// WarmPoolReasonReconcilerError: the controller met an error; the message says which (also a
	// Progressing reason).
	WarmPoolReasonReconcilerError = "ReconcilerError"
)

// Reasons of a SandboxWarmPool's Progressing condition.
const (
	// WarmPoolReasonReplicasUpdating: the pool is creating, replacing or deleting members.
	WarmPoolReasonReplicasUpdating = "ReplicasUpdating"
	// WarmPoolReasonReplicasUpToDate: every member is built from the current template and the pool
	// has spec.replicas of them; Progressing stays True.
	WarmPoolReasonReplicasUpToDate = "ReplicasUpToDate"
	// WarmPoolReasonProgressDeadlineExceeded: the pool made no progress for
	// spec.progressDeadlineSeconds; Progressing is False.
	WarmPoolReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
)
