//go:build chartrender

package main

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
)

// agentSandboxNamespace is where agent-sandbox's clients look for sandbox-router-svc by default.
const agentSandboxNamespace = "agent-sandbox-system"

// TestAgentSandboxSystemOverlay checks config/agent-sandbox-system, the install in the namespace
// agent-sandbox's clients look in: it has config/default's objects, the namespaced ones in
// agent-sandbox-system and the cluster-scoped ones (admission policies included) in none; the
// router's Service is there under the name and port the clients expect, selecting the router's
// Pods in the same namespace (kubectl port-forward svc/... needs that); and the controller's
// configuration is config/manager's except for the router's namespace.
func TestAgentSandboxSystemOverlay(t *testing.T) {
	kubectl := cachedTool(t, "kubernetes", "kubectl")
	def := byKindName(t, runTool(t, kubectl, "kustomize", "../../config/default"))
	got := byKindName(t, runTool(t, kubectl, "kustomize", "../../config/agent-sandbox-system"))

	want := map[string]string{} // kind/name: namespace
	for key, o := range def {
		if kind(o) == "Namespace" {
			key = "Namespace/" + agentSandboxNamespace
		}
		ns := ""
		if field(o, "metadata", "namespace") != nil {
			ns = agentSandboxNamespace
		}
		want[key] = ns
	}
	have := map[string]string{}
	for key, o := range got {
		ns, _ := field(o, "metadata", "namespace").(string)
		have[key] = ns
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("objects and their namespaces (-want: config/default's in %s; +got):\n%s", agentSandboxNamespace, diff)
	}

	svc := got["Service/sandbox-router-svc"]
	router := got["Deployment/kubox-router"]
	if svc == nil || router == nil {
		t.Fatal("no Service sandbox-router-svc or Deployment kubox-router")
	}
	ports, _ := field(svc, "spec", "ports").([]any)
	if len(ports) != 1 || ports[0].(map[string]any)["port"] != float64(8080) {
		t.Errorf("sandbox-router-svc ports %v; want the one port 8080 agent-sandbox's clients use", ports)
	}
	podLabels := stringMap(field(router, "spec", "template", "metadata", "labels"))
	for k, v := range stringMap(field(svc, "spec", "selector")) {
		if podLabels[k] != v {
			t.Errorf("sandbox-router-svc selects %s=%s, which kubox-router's Pods (%v) do not have", k, v, podLabels)
		}
	}

	cfg, err := configv1alpha1.Load("../../config/agent-sandbox-system/controller_config.yaml")
	if err != nil {
		t.Fatalf("kubox-controller rejects the overlay's configuration: %v", err)
	}
	if got := cfg.NetworkPolicy.Router.Namespace; got != agentSandboxNamespace {
		t.Errorf("the controller reads networkPolicy.router.namespace %q, want %s", got, agentSandboxNamespace)
	}
	base := readConfig(t, "../../config/manager/controller_config.yaml")
	overlay := readConfig(t, "../../config/agent-sandbox-system/controller_config.yaml")
	if ns := field(overlay, "networkPolicy", "router", "namespace"); ns != agentSandboxNamespace {
		t.Errorf("the overlay's networkPolicy.router.namespace is %v, want %s", ns, agentSandboxNamespace)
	}
	delete(overlay, "networkPolicy")
	if diff := cmp.Diff(base, overlay); diff != "" {
		t.Errorf("config/agent-sandbox-system/controller_config.yaml differs from config/manager's in more than "+
			"networkPolicy; copy the change over (-manager +overlay):\n%s", diff)
	}
	cm := got["ConfigMap/kubox-controller-config"]
	rendered := object{}
	if err := yaml.Unmarshal([]byte(field(cm, "data", "config.yaml").(string)), &rendered); err != nil {
		t.Fatal(err)
	}
	if ns := field(rendered, "networkPolicy", "router", "namespace"); ns != agentSandboxNamespace {
		t.Errorf("the rendered ConfigMap's networkPolicy.router.namespace is %v, want %s", ns, agentSandboxNamespace)
	}
}

func readConfig(t *testing.T, path string) object {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	o := object{}
	if err := yaml.Unmarshal(b, &o); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return o
}
