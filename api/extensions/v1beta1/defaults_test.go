package v1beta1

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestSpecDefaults(t *testing.T) {
	var unset SandboxWarmPoolSpec
	if got := unset.DesiredReplicas(); got != 1 {
		t.Errorf("DesiredReplicas() of an unset spec = %d, want 1", got)
	}
	if got := unset.ProgressDeadline(); got != 10*time.Minute {
		t.Errorf("ProgressDeadline() of an unset spec = %v, want 10m", got)
	}
	if got := unset.UpdateStrategy.StrategyType(); got != WarmPoolUpdateStrategyOnReplenish {
		t.Errorf("StrategyType() of an unset strategy = %q, want OnReplenish", got)
	}

	set := SandboxWarmPoolSpec{
		Replicas:                ptr.To[int32](0),
		ProgressDeadlineSeconds: ptr.To[int32](30),
		UpdateStrategy:          WarmPoolUpdateStrategy{Type: WarmPoolUpdateStrategyRecreate},
	}
	if got := set.DesiredReplicas(); got != 0 {
		t.Errorf("DesiredReplicas() = %d, want 0", got)
	}
	if got := set.ProgressDeadline(); got != 30*time.Second {
		t.Errorf("ProgressDeadline() = %v, want 30s", got)
	}
	if got := set.UpdateStrategy.StrategyType(); got != WarmPoolUpdateStrategyRecreate {
		t.Errorf("StrategyType() = %q, want Recreate", got)
	}
}

func TestRollingUpdateBounds(t *testing.T) {
	v := func(x intstr.IntOrString) *intstr.IntOrString { return &x }
	cases := map[string]struct {
		rollingUpdate              *RollingUpdateWarmPool
		replicas                   int32
		wantSurge, wantUnavailable int32
	}{
		"defaults, 10 replicas: 25% up and down": {
			replicas: 10, wantSurge: 3, wantUnavailable: 2,
		},
		"defaults, 1 replica: surge rounds up, unavailability down": {
			replicas: 1, wantSurge: 1, wantUnavailable: 0,
		},
		"defaults, 0 replicas: both 0, so one may be unavailable": {
			replicas: 0, wantSurge: 0, wantUnavailable: 1,
		},
		"empty rollingUpdate takes the defaults": {
			rollingUpdate: &RollingUpdateWarmPool{}, replicas: 4, wantSurge: 1, wantUnavailable: 1,
		},
		"numbers": {
			rollingUpdate: &RollingUpdateWarmPool{MaxSurge: v(intstr.FromInt32(5)), MaxUnavailable: v(intstr.FromInt32(0))},
			replicas:      3, wantSurge: 5, wantUnavailable: 0,
		},
		"percentages": {
			rollingUpdate: &RollingUpdateWarmPool{MaxSurge: v(intstr.FromString("10%")), MaxUnavailable: v(intstr.FromString("100%"))},
			replicas:      15, wantSurge: 2, wantUnavailable: 15,
		},
		"zero percentages of few replicas": {
			rollingUpdate: &RollingUpdateWarmPool{MaxSurge: v(intstr.FromString("0%")), MaxUnavailable: v(intstr.FromString("10%"))},
			replicas:      5, wantSurge: 0, wantUnavailable: 1,
		},
		"invalid values resolve to 0": {
			rollingUpdate: &RollingUpdateWarmPool{MaxSurge: v(intstr.FromString("many")), MaxUnavailable: v(intstr.FromInt32(-2))},
			replicas:      5, wantSurge: 0, wantUnavailable: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := WarmPoolUpdateStrategy{Type: WarmPoolUpdateStrategyRollingUpdate, RollingUpdate: tc.rollingUpdate}
			surge, unavailable := s.RollingUpdateBounds(tc.replicas)
			if surge != tc.wantSurge || unavailable != tc.wantUnavailable {
				t.Errorf("RollingUpdateBounds(%d) = (%d, %d), want (%d, %d)", tc.replicas, surge, unavailable, tc.wantSurge, tc.wantUnavailable)
			}
		})
	}
}

func TestReadinessGracePeriod(t *testing.T) {
	def := 5 * time.Minute
	if got := (&SandboxWarmPoolSpec{}).ReadinessGracePeriod(def); got != def {
		t.Errorf("ReadinessGracePeriod of an unset spec = %v, want the default %v", got, def)
	}
	s := SandboxWarmPoolSpec{ReadinessGracePeriodSeconds: ptr.To[int32](45)}
	if got := s.ReadinessGracePeriod(def); got != 45*time.Second {
		t.Errorf("ReadinessGracePeriod with 45 seconds = %v, want 45s", got)
	}
}

func TestTakesSettings(t *testing.T) {
	env := []EnvVar{{Name: "TOKEN", Value: "x"}}
	files := []SecretFile{{SecretName: "api", MountPath: "/run/secrets/api"}}
	for _, tc := range []struct {
		spec SandboxClaimSpec
		warm bool
		want bool
	}{
		{SandboxClaimSpec{}, true, false},
		{SandboxClaimSpec{Env: env}, true, true},
		{SandboxClaimSpec{Env: env}, false, false}, // a cold sandbox has its env in its Pod spec
		{SandboxClaimSpec{SecretFiles: files}, false, true},
		{SandboxClaimSpec{SecretFiles: files}, true, true},
	} {
		if got := tc.spec.TakesSettings(tc.warm); got != tc.want {
			t.Errorf("%+v warm=%v: TakesSettings = %v, want %v", tc.spec, tc.warm, got, tc.want)
		}
	}
}
