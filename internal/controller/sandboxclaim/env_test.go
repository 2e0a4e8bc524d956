package sandboxclaim

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

func TestMergeEnv(t *testing.T) {
	spec := func() corev1.PodSpec {
		return corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "setup"}},
			Containers: []corev1.Container{
				{Name: "main", Env: []corev1.EnvVar{{Name: "MODE", Value: "prod"}}},
				{Name: "sidecar", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{}}}},
			},
		}
	}
	env := func(name, value, container string) extv1beta1.EnvVar {
		return extv1beta1.EnvVar{Name: name, Value: value, ContainerName: container}
	}
	withEnv := func(mutate func(*corev1.PodSpec)) corev1.PodSpec {
		s := spec()
		mutate(&s)
		return s
	}
	cases := map[string]struct {
		env        []extv1beta1.EnvVar
		policy     extv1beta1.EnvVarsInjectionPolicy
		want       corev1.PodSpec
		wantReason string
	}{
		"no env changes nothing, whatever the policy": {
			policy: extv1beta1.EnvVarsInjectionPolicyDisallowed,
			want:   spec(),
		},
		"Disallowed rejects any variable": {
			env: []extv1beta1.EnvVar{env("TOKEN", "x", "")}, policy: extv1beta1.EnvVarsInjectionPolicyDisallowed,
			wantReason: "EnvVarsInjectionRejected",
		},
		"an unset policy is Disallowed": {
			env:        []extv1beta1.EnvVar{env("TOKEN", "x", "")},
			wantReason: "EnvVarsInjectionRejected",
		},
		"Allowed adds a new variable to the first container by default": {
			env: []extv1beta1.EnvVar{env("TOKEN", "x", "")}, policy: extv1beta1.EnvVarsInjectionPolicyAllowed,
			want: withEnv(func(s *corev1.PodSpec) {
				s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "TOKEN", Value: "x"})
			}),
		},
		"Allowed adds to a named init container": {
			env: []extv1beta1.EnvVar{env("TOKEN", "x", "setup")}, policy: extv1beta1.EnvVarsInjectionPolicyAllowed,
			want: withEnv(func(s *corev1.PodSpec) { s.InitContainers[0].Env = []corev1.EnvVar{{Name: "TOKEN", Value: "x"}} }),
		},
		"Allowed refuses to replace the template's variable": {
			env: []extv1beta1.EnvVar{env("MODE", "dev", "main")}, policy: extv1beta1.EnvVarsInjectionPolicyAllowed,
			wantReason: "EnvVarsInjectionRejected",
		},
		"Allowed refuses a container with envFrom": {
			env: []extv1beta1.EnvVar{env("TOKEN", "x", "sidecar")}, policy: extv1beta1.EnvVarsInjectionPolicyAllowed,
			wantReason: "EnvVarsInjectionRejected",
		},
		"Overrides replaces the template's variable and adds new ones": {
			env:    []extv1beta1.EnvVar{env("MODE", "dev", ""), env("TOKEN", "x", "sidecar")},
			policy: extv1beta1.EnvVarsInjectionPolicyOverrides,
			want: withEnv(func(s *corev1.PodSpec) {
				s.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "dev"}}
				s.Containers[1].Env = []corev1.EnvVar{{Name: "TOKEN", Value: "x"}}
			}),
		},
		"a container the template does not have is rejected": {
			env: []extv1beta1.EnvVar{env("TOKEN", "x", "nope")}, policy: extv1beta1.EnvVarsInjectionPolicyOverrides,
			wantReason: "EnvVarsInjectionRejected",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := spec()
			f := mergeEnv(&got, tc.env, tc.policy, "python")
			if tc.wantReason != "" {
				if f == nil || f.reason != tc.wantReason || f.message == "" {
					t.Fatalf("mergeEnv() = %v; want reason %s with a message", f, tc.wantReason)
				}
				return
			}
			if f != nil {
				t.Fatalf("mergeEnv() = %v; want no failure", f)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pod spec mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
