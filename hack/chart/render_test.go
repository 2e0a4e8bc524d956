//go:build chartrender

// The chart-render test needs kubectl and helm from the tool cache, so the unit tier (which must
// run on a machine with nothing built) leaves it out; `make chart-lint`, part of `make verify`,
// builds both and runs it: go test -tags chartrender -run TestChartRendersConfigDefault ./hack/chart

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// cachedTool returns the path of a binary of a pinned tool, failing the test when the tool cache
// does not have it: the test needs the real kubectl and helm, and never builds them itself.
func cachedTool(t *testing.T, tool, binary string) string {
	t.Helper()
	out, err := exec.Command("../tools/install.sh", "dir", tool).Output()
	if err != nil {
		t.Fatalf("hack/tools/install.sh dir %s: %v", tool, err)
	}
	dir := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		t.Fatalf("%s is not in the tool cache (%s): run make tools (or hack/tools/install.sh %s)", binary, dir, tool)
	}
	return filepath.Join(dir, binary)
}

func runTool(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func byKindName(t *testing.T, text []byte) map[string]object {
	t.Helper()
	objs, err := parseObjects(text)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]object{}
	for _, o := range objs {
		out[kind(o)+"/"+name(o)] = o
	}
	return out
}

// TestChartRendersConfigDefault generates the chart from the repository's config/default and
// checks that helm template, with the default values, writes config/default's objects (less the
// Namespace, which helm install --create-namespace makes) plus the key Secret, and that the values
// a user sets reach the objects.
func TestChartRendersConfigDefault(t *testing.T) {
	kubectl := cachedTool(t, "kubernetes", "kubectl")
	helm := cachedTool(t, "helm", "helm")

	rendered := runTool(t, kubectl, "kustomize", "../../config/default")
	nodeRendered := runTool(t, kubectl, "kustomize", "../../config/node")
	crds, err := readCRDs("../../config/crd/bases")
	if err != nil {
		t.Fatal(err)
	}
	files, err := generate(rendered, crds, nodeRendered)
	if err != nil {
		t.Fatal(err)
	}
	chart := t.TempDir()
	if err := write(chart, files); err != nil {
		t.Fatal(err)
	}
	kustomized := byKindName(t, rendered)
	namespace := ""
	for key, o := range kustomized {
		if kind(o) == "Namespace" {
			namespace = name(o)
			delete(kustomized, key)
		}
	}
	keyName := "Secret/" + keySecret

	t.Run("default values", func(t *testing.T) {
		got := byKindName(t, runTool(t, helm, "template", "kubox", chart, "-n", namespace, "--include-crds"))
		want := append(keys(kustomized), keyName)
		sort.Strings(want)
		if diff := cmp.Diff(want, keys(got)); diff != "" {
			t.Fatalf("objects of helm template (-want: kubectl kustomize config/default, less the Namespace, plus the key Secret; +got):\n%s", diff)
		}
		for key, want := range kustomized {
			if diff := cmp.Diff(normalize(t, want), normalize(t, got[key])); diff != "" {
				t.Errorf("%s differs from config/default's (-kustomize +helm):\n%s", key, diff)
			}
		}
		if data, _ := got[keyName]["data"].(object); len(data) != 1 {
			t.Errorf("the key Secret has data %v, want one generated key", data)
		}
	})

	t.Run("node enabled", func(t *testing.T) {
		objs, err := parseObjects(runTool(t, helm, "template", "kubox", chart, "-n", namespace, "--set", "node.enabled=true"))
		if err != nil {
			t.Fatal(err)
		}
		got, tokens := map[string]object{}, map[string]any{}
		for _, o := range objs {
			if kind(o) == "Secret" && name(o) == nodeTokenSecret {
				ns, _ := field(o, "metadata", "namespace").(string)
				tokens[ns] = field(o, "data", nodeTokenKey)
				continue
			}
			got[kind(o)+"/"+name(o)] = o
		}
		for key, want := range byKindName(t, nodeRendered) {
			if diff := cmp.Diff(normalize(t, want), normalize(t, got[key])); diff != "" {
				t.Errorf("%s differs from config/node's (-kustomize +helm):\n%s", key, diff)
			}
		}
		if len(tokens) != 2 || tokens[namespace] == nil || tokens[namespace] != tokens["kubox-node"] {
			t.Errorf("node token Secrets by namespace: %v; want one token in %s and kubox-node", tokens, namespace)
		}
	})

	t.Run("values set", func(t *testing.T) {
		got := byKindName(t, runTool(t, helm, "template", "kubox", chart, "-n", "sandboxes",
			"--set", "controller.replicas=2,controller.image.repository=registry.example/controller,controller.image.tag=v2,controller.image.pullPolicy=Always",
			"--set", "controller.resources.limits.memory=1Gi,controller.config.controllers.sandbox.workers=9",
			"--set", "router.replicas=5,router.image.tag=v3,router.service.type=LoadBalancer,router.service.port=443",
			"--set-string", `router.service.annotations.example\.com/internal=true`,
			"--set", "agent.image.repository=registry.example/agent,agent.image.tag=v4,agentTokenKey.existingSecret=my-key",
			"--set", "router.extraArgs={--e2b-domain=e2b.example.com}"))
		controller, router := got["Deployment/"+controllerDeployment], got["Deployment/"+routerDeployment]
		svc := got["Service/"+routerService]
		var config object
		if err := yaml.Unmarshal([]byte(field(got["ConfigMap/"+controllerConfigMap], "data", controllerConfigKey).(string)), &config); err != nil {
			t.Fatal(err)
		}
		wantRouterImage := "ghcr.io/kubox-dev/kubox-router:v3"
		if ref, _ := container(kustomized["Deployment/"+routerDeployment])["image"].(string); ref != "" {
			img, _ := splitImage(ref)
			wantRouterImage = img.Repository + ":v3"
		}
		gotFields := map[string]any{
			"controller replicas":         field(controller, "spec", "replicas"),
			"controller image":            container(controller)["image"],
			"controller imagePullPolicy":  container(controller)["imagePullPolicy"],
			"controller memory limit":     field(container(controller), "resources", "limits", "memory"),
			"router replicas":             field(router, "spec", "replicas"),
			"router image":                container(router)["image"],
			"router's last flag":          lastArg(router),
			"Service type":                field(svc, "spec", "type"),
			"Service port":                field(svc, "spec", "ports").([]any)[0].(object)["port"],
			"Service annotations":         field(svc, "metadata", "annotations"),
			"config agent image":          field(config, "agent", "image"),
			"config sandbox workers":      field(config, "controllers", "sandbox", "workers"),
			"config router namespace":     field(config, "networkPolicy", "router", "namespace"),
			"controller key Secret":       secretName(controller),
			"router key Secret":           secretName(router),
			"the chart's own key Secret?": got[keyName] != nil,
		}
		wantFields := map[string]any{
			"controller replicas":         float64(2),
			"controller image":            "registry.example/controller:v2",
			"controller imagePullPolicy":  "Always",
			"controller memory limit":     "1Gi",
			"router replicas":             float64(5),
			"router image":                wantRouterImage,
			"router's last flag":          "--e2b-domain=e2b.example.com",
			"Service type":                "LoadBalancer",
			"Service port":                float64(443),
			"Service annotations":         object{"example.com/internal": "true"},
			"config agent image":          "registry.example/agent:v4",
			"config sandbox workers":      float64(9),
			"config router namespace":     "sandboxes",
			"controller key Secret":       "my-key",
			"router key Secret":           "my-key",
			"the chart's own key Secret?": false,
		}
		if diff := cmp.Diff(wantFields, gotFields); diff != "" {
			t.Errorf("objects rendered with values set (-want +got):\n%s", diff)
		}
	})
}

// lastArg is the last flag of a Deployment's container.
func lastArg(o object) any {
	args, _ := container(o)["args"].([]any)
	if len(args) == 0 {
		return nil
	}
	return args[len(args)-1]
}

// normalize drops from an object what the chart adds on purpose, so that config/default's object
// and the chart's compare equal: Helm's labels, the configuration checksum that rolls the
// controller, the router Service's explicit type ClusterIP (Kubernetes' default), the CRDs' labels
// (crds/ is a plain copy of config/crd/bases) and, in the
// controller's configuration, the router namespace the chart sets to the release's. The
// configuration is compared as data, not text.
func normalize(t *testing.T, o object) object {
	t.Helper()
	b, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var c object
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if labels, ok := field(c, "metadata", "labels").(object); ok {
		for _, k := range []string{"helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version"} {
			delete(labels, k)
		}
	}
	if kind(c) == "CustomResourceDefinition" {
		// crds/ holds config/crd/bases as they are, without config/default's common labels.
		delete(c["metadata"].(object), "labels")
	}
	if ann, ok := field(c, "spec", "template", "metadata", "annotations").(object); ok {
		delete(ann, "checksum/config")
		if len(ann) == 0 {
			delete(field(c, "spec", "template", "metadata").(object), "annotations")
		}
	}
	if kind(c) == "Service" && name(c) == routerService && field(c, "spec", "type") == "ClusterIP" {
		delete(c["spec"].(object), "type")
	}
	if kind(c) == "ConfigMap" && name(c) == controllerConfigMap {
		data := c["data"].(object)
		var config object
		if err := yaml.Unmarshal([]byte(data[controllerConfigKey].(string)), &config); err != nil {
			t.Fatal(err)
		}
		for _, peer := range []string{"router", "egressProxy"} { // the release's namespace unless set
			if p, ok := field(config, "networkPolicy", peer).(object); ok {
				delete(p, "namespace")
				if len(p) == 0 {
					delete(config["networkPolicy"].(object), peer)
				}
				if len(config["networkPolicy"].(object)) == 0 {
					delete(config, "networkPolicy")
				}
			}
		}
		data[controllerConfigKey] = config
	}
	return c
}

func container(deployment object) object {
	containers, _ := field(deployment, "spec", "template", "spec", "containers").([]any)
	if len(containers) == 0 {
		return nil
	}
	c, _ := containers[0].(object)
	return c
}

func secretName(deployment object) any {
	volumes, _ := field(deployment, "spec", "template", "spec", "volumes").([]any)
	for _, v := range volumes {
		if s, ok := field(v.(object), "secret", "secretName").(string); ok {
			return s
		}
	}
	return nil
}
