package main

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func nodeFixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/node.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGenerateNodeFromFixture: config/node's Namespace and DaemonSet become templates behind
// node.enabled, in node.namespace, with the node token Secret and values.yaml's node section
// holding config/node's image and resources.
func TestGenerateNodeFromFixture(t *testing.T) {
	rendered, crds := fixture(t)
	files, err := generate([]byte(rendered), crds, []byte(nodeFixture(t)))
	if err != nil {
		t.Fatal(err)
	}
	ds := string(files["templates/daemonset-kubox-node.yaml"])
	for _, want := range []string{"{{- if .Values.node.enabled }}\n", "namespace: {{ .Values.node.namespace }}",
		`image: {{ include "kubox.image" .Values.node.image | quote }}`, "{{- range .Values.node.extraArgs }}",
		"{{- with .Values.node.extraVolumes }}", "{{- with .Values.node.extraVolumeMounts }}", "hostNetwork: true"} {
		if !strings.Contains(ds, want) {
			t.Errorf("the DaemonSet's template lacks %q:\n%s", want, ds)
		}
	}
	if n := strings.Count(ds, `image: {{ include "kubox.image" .Values.node.image | quote }}`); n != 2 {
		t.Errorf("the DaemonSet's template sets node.image on %d containers, want 2 (the init container too):\n%s", n, ds)
	}
	if ns := string(files["templates/namespace-kubox-node.yaml"]); !strings.Contains(ns, "{{- if and .Values.node.enabled .Values.node.createNamespace }}") ||
		!strings.Contains(ns, "name: {{ .Values.node.namespace }}") || !strings.Contains(ns, "pod-security.kubernetes.io/enforce: privileged") {
		t.Errorf("the Namespace's template:\n%s", ns)
	}
	if s := string(files["templates/secret-kubox-node-token.yaml"]); !strings.Contains(s, "range $ns := list .Release.Namespace .Values.node.namespace") {
		t.Errorf("the node token Secret is not made in both namespaces:\n%s", s)
	}
	var values map[string]any
	if err := yaml.Unmarshal(files["values.yaml"], &values); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"enabled": false, "namespace": "kubox-node", "createNamespace": true,
		"image":     map[string]any{"repository": "registry.example/node", "tag": "v2", "pullPolicy": ""},
		"resources": map[string]any{"requests": map[string]any{"memory": "64Mi"}},
		"extraArgs": []any{}, "extraVolumes": []any{}, "extraVolumeMounts": []any{}}
	if diff := cmp.Diff(want, values["node"]); diff != "" {
		t.Errorf("values.yaml's node section (-want +got):\n%s", diff)
	}
	// Without config/node, the chart has no node section and no kubox-node objects.
	files, err = generate([]byte(rendered), crds, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(files["values.yaml"]), "\nnode:") || files["templates/daemonset-kubox-node.yaml"] != nil {
		t.Error("without config/node the chart still has kubox-node")
	}
}

func TestGenerateNodeRejects(t *testing.T) {
	for name, tc := range map[string]struct{ old, new, wantErr string }{
		"another object":     {"kind: DaemonSet", "kind: Deployment", "the chart knows one Namespace, the DaemonSet kubox-node and its ServiceAccount"},
		"another namespace":  {"  namespace: kubox-node\n", "  namespace: elsewhere\n", "is not config/node's Namespace kubox-node"},
		"an image by digest": {"image: registry.example/node:v2", "image: registry.example/node@sha256:0123", "pinned by digest"},
		"an init container of another image": {"- name: install\n        image: registry.example/node:v2", "- name: install\n        image: registry.example/other:v1",
			"init container install runs registry.example/other:v1, not the DaemonSet's image registry.example/node:v2"},
	} {
		t.Run(name, func(t *testing.T) {
			rendered, crds := fixture(t)
			node := nodeFixture(t)
			if !strings.Contains(node, tc.old) {
				t.Fatalf("the fixture has no %q", tc.old)
			}
			_, err := generate([]byte(rendered), crds, []byte(strings.Replace(node, tc.old, tc.new, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("generate() error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestGenerateNodeIdentity: config/node's ServiceAccount, Role and RoleBinding of kubox-node are
// templated behind node.enabled in node.namespace, the RoleBinding's subject moved with them, and
// any other object of config/node is refused.
func TestGenerateNodeIdentity(t *testing.T) {
	rendered, crds := fixture(t)
	identity := `---
apiVersion: v1
kind: ServiceAccount
metadata: {name: kubox-node, namespace: kubox-node}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: kubox-node, namespace: kubox-node}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: kubox-node}
subjects: [{kind: ServiceAccount, name: kubox-node, namespace: kubox-node}]
`
	files, err := generate([]byte(rendered), crds, []byte(nodeFixture(t)+identity))
	if err != nil {
		t.Fatal(err)
	}
	for file, wants := range map[string][]string{
		"templates/serviceaccount-kubox-node.yaml": {"{{- if .Values.node.enabled }}\n", "namespace: {{ .Values.node.namespace }}"},
		"templates/rolebinding-kubox-node.yaml": {"{{- if .Values.node.enabled }}\n",
			"  namespace: {{ .Values.node.namespace }}\nroleRef", "- kind: ServiceAccount\n  name: kubox-node\n  namespace: {{ .Values.node.namespace }}"},
	} {
		for _, want := range wants {
			if !strings.Contains(string(files[file]), want) {
				t.Errorf("%s lacks %q:\n%s", file, want, files[file])
			}
		}
	}
	other := "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: kubox-node, namespace: kubox-node}\n"
	if _, err := generate([]byte(rendered), crds, []byte(nodeFixture(t)+other)); err == nil || !strings.Contains(err.Error(), "ConfigMap kubox-node") {
		t.Errorf("a ConfigMap in config/node: error %v; want it refused by name", err)
	}
}
