package sandboxclaim

import (
	corev1 "k8s.io/api/core/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

// mergeEnv implements spec.env: it sets the claim's variables in spec, the template's pod spec,
// as the template's envVarsInjectionPolicy allows, or says why it may not. Disallowed (or unset)
// rejects any variable; Allowed adds variables the container does not define (and so none to a
// container whose envFrom could define any name); Overrides also replaces the template's values.
// A variable goes to the container, or init container, it names, by default the first container.
func mergeEnv(spec *corev1.PodSpec, env []extv1beta1.EnvVar, policy extv1beta1.EnvVarsInjectionPolicy, template string) *failure {
	if len(env) == 0 {
		return nil
	}
	if policy != extv1beta1.EnvVarsInjectionPolicyAllowed && policy != extv1beta1.EnvVarsInjectionPolicyOverrides {
		return fail(extv1beta1.ClaimReasonEnvVarsInjectionRejected,
			"Claim sets env, but SandboxTemplate %s does not allow it (envVarsInjectionPolicy %s); remove spec.env or set the template's envVarsInjectionPolicy to Allowed or Overrides",
			template, orDefault(string(policy), string(extv1beta1.EnvVarsInjectionPolicyDisallowed)))
	}
	for _, e := range env {
		c := findContainer(spec, e.ContainerName)
		if c == nil {
			return fail(extv1beta1.ClaimReasonEnvVarsInjectionRejected,
				"env %s is for container %q, which the pod of SandboxTemplate %s does not have; name one of its containers or init containers",
				e.Name, orDefault(e.ContainerName, "(first container)"), template)
		}
		i := envIndex(c.Env, e.Name)
		switch {
		case i >= 0 && policy == extv1beta1.EnvVarsInjectionPolicyAllowed:
			return fail(extv1beta1.ClaimReasonEnvVarsInjectionRejected,
				"env %s is already set in container %s by SandboxTemplate %s, whose envVarsInjectionPolicy Allowed only adds variables; rename it, or set the policy to Overrides",
				e.Name, c.Name, template)
		case i < 0 && policy == extv1beta1.EnvVarsInjectionPolicyAllowed && len(c.EnvFrom) > 0:
			return fail(extv1beta1.ClaimReasonEnvVarsInjectionRejected,
				"env %s cannot be added to container %s: it takes variables from envFrom, so it might replace one, and SandboxTemplate %s's envVarsInjectionPolicy Allowed only adds variables; set the policy to Overrides",
				e.Name, c.Name, template)
		case i >= 0:
			c.Env[i] = corev1.EnvVar{Name: e.Name, Value: e.Value}
		default:
			c.Env = append(c.Env, corev1.EnvVar{Name: e.Name, Value: e.Value})
		}
	}
	return nil
}

// findContainer returns the container or init container called name, or the first container when
// name is empty; nil when there is none.
func findContainer(spec *corev1.PodSpec, name string) *corev1.Container {
	if name == "" {
		if len(spec.Containers) == 0 {
			return nil
		}
		return &spec.Containers[0]
	}
	for _, cs := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	return nil
}

func envIndex(env []corev1.EnvVar, name string) int {
	for i := range env {
		if env[i].Name == name {
			return i
		}
	}
	return -1
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
