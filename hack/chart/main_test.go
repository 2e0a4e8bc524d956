package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func TestSplitImage(t *testing.T) {
	cases := map[string]struct {
		ref     string
		want    image
		wantErr bool
	}{
		"repository and tag":  {ref: "ghcr.io/kubox-dev/kubox-controller:v1.2", want: image{Repository: "ghcr.io/kubox-dev/kubox-controller", Tag: "v1.2"}},
		"no tag means latest": {ref: "kubox-router", want: image{Repository: "kubox-router", Tag: "latest"}},
		"registry port":       {ref: "registry.example:5000/router", want: image{Repository: "registry.example:5000/router", Tag: "latest"}},
		"registry port, tag":  {ref: "registry.example:5000/router:dev", want: image{Repository: "registry.example:5000/router", Tag: "dev"}},
		"digest":              {ref: "kubox-router@sha256:0123", wantErr: true},
		"empty":               {ref: "", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := splitImage(tc.ref)
			if (err != nil) != tc.wantErr {
				t.Fatalf("splitImage(%q) error = %v, want error %v", tc.ref, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("splitImage(%q) (-want +got):\n%s", tc.ref, diff)
			}
		})
	}
}

// fixture is a cut-down kustomize output and the CRD folder that goes with it.
func fixture(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	b, err := os.ReadFile("testdata/kustomize.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crds, err := readCRDs("testdata/crds")
	if err != nil {
		t.Fatal(err)
	}
	return string(b), crds
}

func TestGenerateFromFixture(t *testing.T) {
	rendered, crds := fixture(t)
	files, err := generate([]byte(rendered), crds, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{
		"Chart.yaml", "README.md", "crds/example.com_widgets.yaml", "templates/NOTES.txt", "templates/_helpers.tpl",
		"templates/clusterrolebinding-kubox-router.yaml", "templates/configmap-kubox-controller-config.yaml",
		"templates/deployment-kubox-controller.yaml", "templates/deployment-kubox-router.yaml",
		"templates/secret-kubox-agent-token-key.yaml", "templates/service-sandbox-router-svc.yaml",
		"templates/serviceaccount-kubox-router.yaml", "values.yaml",
	}
	if diff := cmp.Diff(wantFiles, keys(files)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if !bytes.Equal(files["crds/example.com_widgets.yaml"], crds["example.com_widgets.yaml"]) {
		t.Errorf("crds/example.com_widgets.yaml is not a copy of the CRD file")
	}
	for file, b := range files {
		if strings.HasPrefix(file, "templates/") && bytes.Contains(b, []byte("kubox-system")) {
			t.Errorf("%s names the namespace kubox-system instead of the release's:\n%s", file, b)
		}
	}

	var values map[string]any
	if err := yaml.Unmarshal(files["values.yaml"], &values); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	want := map[string]any{
		"controller": map[string]any{
			"replicas":  float64(1),
			"image":     map[string]any{"repository": "registry.example/controller", "tag": "v1", "pullPolicy": ""},
			"resources": map[string]any{"limits": map[string]any{"memory": "512Mi"}},
			"extraArgs": []any{},
			"config": map[string]any{
				"controllers": map[string]any{"sandbox": map[string]any{"workers": float64(7)}},
				"agent":       map[string]any{"tokenKeyFile": "/etc/key/secret-key"},
			},
		},
		"router": map[string]any{
			"replicas":  float64(2),
			"image":     map[string]any{"repository": "registry.example:5000/router", "tag": "latest", "pullPolicy": "IfNotPresent"},
			"resources": map[string]any{},
			"extraArgs": []any{},
			"service":   map[string]any{"type": "ClusterIP", "port": float64(8080), "annotations": map[string]any{}},
		},
		"agent":         map[string]any{"image": map[string]any{"repository": "registry.example/agent", "tag": "v1", "pullPolicy": "Always"}},
		"agentTokenKey": map[string]any{"existingSecret": ""},
	}
	if diff := cmp.Diff(want, values); diff != "" {
		t.Errorf("values.yaml (-want +got):\n%s", diff)
	}
	// config/'s comments on the settings stay; the ones on fields the chart moved go with them.
	if v := string(files["values.yaml"]); !strings.Contains(v, "workers: 7 # kept in values.yaml") || strings.Contains(v, "dropped with image") {
		t.Errorf("values.yaml does not keep the configuration's comments on its own fields:\n%s", v)
	}
	if s := string(files["templates/secret-kubox-agent-token-key.yaml"]); !strings.Contains(s, "  secret-key: {{") {
		t.Errorf("the key Secret's entry is not the file name of agent.tokenKeyFile (secret-key):\n%s", s)
	}
}

func TestGenerateRejects(t *testing.T) {
	cases := map[string]struct {
		old, new string // a change to the fixture
		crd      string // a CRD file name to add, when set
		wantErr  string
	}{
		"a Deployment the chart has no values for": {
			old: "name: kubox-router\n  namespace: kubox-system\nspec:\n  replicas", new: "name: kubox-other\n  namespace: kubox-system\nspec:\n  replicas",
			wantErr: "the chart knows the Deployments",
		},
		"the namespace in a field the generator does not template": {
			old: "- --http-bind-address=:8080", new: "- --namespace=kubox-system", wantErr: "names the namespace kubox-system",
		},
		"an object in another namespace": {
			old: "name: kubox-router\n  namespace: kubox-system\n---", new: "name: kubox-router\n  namespace: elsewhere\n---",
			wantErr: "is not config/default's kubox-system",
		},
		"an image pinned by digest": {
			old: "image: registry.example/controller:v1", new: "image: registry.example/controller@sha256:0123", wantErr: "pinned by digest",
		},
		"no Deployment mounts the key": {
			old: "secretName: kubox-agent-token-key", new: "secretName: something-else", wantErr: "mounts the Secret kubox-agent-token-key",
		},
		"a CRD file kustomize does not render": {
			crd: "example.com_gadgets.yaml", wantErr: "config/crd/bases holds",
		},
		"no router Service": {
			old: "name: sandbox-router-svc", new: "name: another-svc", wantErr: "has no Service/sandbox-router-svc",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rendered, crds := fixture(t)
			if tc.old != "" {
				if !strings.Contains(rendered, tc.old) {
					t.Fatalf("the fixture has no %q", tc.old)
				}
				rendered = strings.ReplaceAll(rendered, tc.old, tc.new)
			}
			if tc.crd != "" {
				crds[tc.crd] = []byte("kind: CustomResourceDefinition\nmetadata:\n  name: gadgets.example.com\n")
			}
			_, err := generate([]byte(rendered), crds, nil)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("generate() error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
