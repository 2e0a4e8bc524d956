package v1beta1

import (
	"math"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Defaults the CRD applies, for code that handles objects the API server has not defaulted (built
// in Go, or stored before a field existed). The CRD's default markers hold the same values; the
// integration tests check that they agree.
const (
	// DefaultWarmPoolReplicas is spec.replicas of a SandboxWarmPool that does not set it.
	DefaultWarmPoolReplicas int32 = 1
	// DefaultProgressDeadlineSeconds is spec.progressDeadlineSeconds of a SandboxWarmPool that
	// does not set it.
	DefaultProgressDeadlineSeconds int32 = 600
	// DefaultMaxSurge is updateStrategy.rollingUpdate.maxSurge when unset.
	DefaultMaxSurge = "25%"
	// DefaultMaxUnavailable is updateStrategy.rollingUpdate.maxUnavailable when unset.
	DefaultMaxUnavailable = "25%"
)

// DesiredReplicas is spec.replicas, or DefaultWarmPoolReplicas when it is unset.
func (s *SandboxWarmPoolSpec) DesiredReplicas() int32 {
	if s.Replicas == nil {
		return DefaultWarmPoolReplicas
	}
	return *s.Replicas
}

// ProgressDeadline is spec.progressDeadlineSeconds as a duration, or the default when it is unset.
func (s *SandboxWarmPoolSpec) ProgressDeadline() time.Duration {
	seconds := DefaultProgressDeadlineSeconds
	if s.ProgressDeadlineSeconds != nil {
		seconds = *s.ProgressDeadlineSeconds
	}
	return time.Duration(seconds) * time.Second
}

// StrategyType is updateStrategy.type, or OnReplenish when it is unset.
func (s *WarmPoolUpdateStrategy) StrategyType() WarmPoolUpdateStrategyType {
	if s.Type == "" {
		return WarmPoolUpdateStrategyOnReplenish
	}
	return s.Type
}

// RollingUpdateBounds returns maxSurge and maxUnavailable resolved against replicas, as for a
// Deployment: surge percentages round up, unavailability percentages round down, and when both
// come to 0 maxUnavailable is 1, so that the rollout can progress. Unset values take their
// defaults. An invalid value, which the CRD rejects, resolves to 0.
func (s *WarmPoolUpdateStrategy) RollingUpdateBounds(replicas int32) (maxSurge, maxUnavailable int32) {
	surge, unavailable := intstr.FromString(DefaultMaxSurge), intstr.FromString(DefaultMaxUnavailable)
	if ru := s.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			surge = *ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			unavailable = *ru.MaxUnavailable
		}
	}
	maxSurge, maxUnavailable = scaled(surge, replicas, true), scaled(unavailable, replicas, false)
	if maxSurge == 0 && maxUnavailable == 0 {
		maxUnavailable = 1
	}
	return maxSurge, maxUnavailable
}

func scaled(v intstr.IntOrString, replicas int32, roundUp bool) int32 {
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, int(replicas), roundUp)
	if err != nil || n < 0 {
		return 0
	}
	return int32(min(n, math.MaxInt32))
}

// ReadinessGracePeriod returns spec.readinessGracePeriodSeconds as a duration, or def when unset.
func (s *SandboxWarmPoolSpec) ReadinessGracePeriod(def time.Duration) time.Duration {
	if s.ReadinessGracePeriodSeconds == nil {
		return def
	}
	return time.Duration(*s.ReadinessGracePeriodSeconds) * time.Second
}

// TakesSettings reports whether a sandbox bound to a claim of this spec takes settings through its
// agent, again after every start of its Pod (a resume starts a new one): the claim's secretFiles,
// and its env when the sandbox came from a warm pool (warm; a cold sandbox has the env in its Pod
// spec). The claim controller delivers them and holds the claim's Ready until they arrive; the
// router waits for that before it proxies to a sandbox it woke.
func (s *SandboxClaimSpec) TakesSettings(warm bool) bool {
	return len(s.SecretFiles) > 0 || (len(s.Env) > 0 && warm)
}

// SettingsInputs returns the part of s that TakesSettings reads: its secretFiles (which name
// Secrets, not their data) and the names of its env, without their values. A cache that keeps no
// more of a claim than it needs (kubox-router's) keeps this, so TakesSettings answers the same for
// the cached claim as for s, whatever fields the rule comes to read.
func (s *SandboxClaimSpec) SettingsInputs() SandboxClaimSpec {
	var out SandboxClaimSpec
	out.SecretFiles = slices.Clone(s.SecretFiles)
	for _, e := range s.Env {
		out.Env = append(out.Env, EnvVar{Name: e.Name})
	}
	return out
}
