package api

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// servedVersion returns the CRD of resource in gv's group as the API server has it, and its
// version gv.Version.
func servedVersion(t *testing.T, resource string, gv schema.GroupVersion) (*apiextensionsv1.CustomResourceDefinition, *apiextensionsv1.CustomResourceDefinitionVersion) {
	t.Helper()
	name := resource + "." + gv.Group
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatalf("Reading CRD %s: %v", name, err)
	}
	for i := range crd.Spec.Versions {
		if v := &crd.Spec.Versions[i]; v.Name == gv.Version {
			return crd, v
		}
	}
	t.Fatalf("CRD %s has no version %s", name, gv.Version)
	return nil, nil
}

// servedSchema returns the Sandbox CRD as the API server has it and its v1beta1 version.
func servedSchema(t *testing.T) (*apiextensionsv1.CustomResourceDefinition, *apiextensionsv1.CustomResourceDefinitionVersion) {
	t.Helper()
	return servedVersion(t, "sandboxes", sandboxv1beta1.GroupVersion)
}

// property returns the schema at a dotted path of property names; "[]" steps into list items.
func property(t *testing.T, root *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	s := root
	for _, name := range strings.Split(path, ".") {
		if name == "[]" {
			if s.Items == nil || s.Items.Schema == nil {
				t.Fatalf("Schema at %s has no items", path)
			}
			s = s.Items.Schema
			continue
		}
		p, ok := s.Properties[name]
		if !ok {
			t.Fatalf("Schema has no property %s (looking for %s)", name, path)
		}
		s = &p
	}
	return s
}

func TestSandboxCRDDescriptions(t *testing.T) {
	_, version := servedSchema(t)
	root := version.Schema.OpenAPIV3Schema
	// kubectl explain shows these; the API's own fields must say what they do.
	for _, path := range []string{
		"spec",
		"spec.operatingMode",
		"spec.shutdownTime",
		"spec.shutdownPolicy",
		"spec.service",
		"spec.podTemplate",
		"spec.podTemplate.metadata.labels",
		"spec.podTemplate.spec",
		"spec.podTemplate.spec.containers",
		"spec.volumeClaimTemplates",
		"spec.volumeClaimTemplates.[].metadata.name",
		"spec.persistentVolumeClaimRetentionPolicy.whenDeleted",
		"spec.persistentVolumeClaimRetentionPolicy.whenExpired",
		"status",
		"status.conditions",
		"status.serviceFQDN",
		"status.selector",
		"status.podIPs",
		"status.observedGeneration",
	} {
		t.Run(path, func(t *testing.T) {
			if d := property(t, root, path).Description; strings.TrimSpace(d) == "" {
				t.Errorf("%s has no description", path)
			}
		})
	}

	t.Run("every field", func(t *testing.T) {
		if diff := cmp.Diff([]string(nil), undescribed(root)); diff != "" {
			t.Errorf("Fields without a description (-want +got):\n%s", diff)
		}
	})
}

func TestSandboxPrinterColumnsAndCategories(t *testing.T) {
	crd, version := servedSchema(t)

	type column struct{ Type, JSONPath string }
	got := map[string]column{}
	for _, c := range version.AdditionalPrinterColumns {
		got[c.Name] = column{Type: c.Type, JSONPath: c.JSONPath}
	}
	want := map[string]column{
		"Ready":  {Type: "string", JSONPath: ".status.conditions[?(@.type=='Ready')].status"},
		"Reason": {Type: "string", JSONPath: ".status.conditions[?(@.type=='Ready')].reason"},
		"Age":    {Type: "date", JSONPath: ".metadata.creationTimestamp"},
	}
	for name, w := range want {
		if diff := cmp.Diff(w, got[name]); diff != "" {
			t.Errorf("Printer column %s (-want +got):\n%s", name, diff)
		}
	}
	if !slices.Contains(crd.Spec.Names.Categories, "kubox") {
		t.Errorf("CRD categories are %q; want them to include kubox", crd.Spec.Names.Categories)
	}

	// kubectl finds categories and short names through discovery.
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatalf("Creating a discovery client: %v", err)
	}
	resources, err := dc.ServerResourcesForGroupVersion(sandboxv1beta1.GroupVersion.String())
	if err != nil {
		t.Fatalf("Discovering %s: %v", sandboxv1beta1.GroupVersion, err)
	}
	i := slices.IndexFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == "sandboxes" })
	if i < 0 {
		t.Fatalf("Discovery of %s has no sandboxes resource", sandboxv1beta1.GroupVersion)
	}
	r := resources.APIResources[i]
	if !slices.Contains(r.Categories, "kubox") || !slices.Contains(r.ShortNames, "sandbox") {
		t.Errorf("Discovery lists sandboxes with categories %q and short names %q; want kubox and sandbox among them",
			r.Categories, r.ShortNames)
	}
}

// TestKubectl runs kubectl the way a user does: `kubectl get kubox` lists sandboxes with the Ready,
// Reason and Age columns, and `kubectl explain` shows the API's descriptions.
func TestKubectl(t *testing.T) {
	ns := env.NewNamespace(t)
	kubectl := filepath.Join(env.AssetsDir, "kubectl")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatalf("Writing kubeconfig: %v", err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}

	sb := testutil.MakeSandbox("listed", ns).Obj()
	if err := env.Client.Create(t.Context(), sb); err != nil {
		t.Fatalf("Creating sandbox: %v", err)
	}

	t.Run("get kubox", func(t *testing.T) {
		out, err := run("get", "kubox", "--namespace", ns)
		if err != nil {
			t.Fatalf("kubectl get kubox: %v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if diff := cmp.Diff([]string{"NAME", "READY", "REASON", "AGE"}, strings.Fields(lines[0])); diff != "" {
			t.Errorf("Header of kubectl get kubox (-want +got):\n%s\n%s", diff, out)
		}
		var names []string
		for _, l := range lines[1:] {
			names = append(names, strings.Fields(l)[0])
		}
		// Several kinds share the category, so kubectl names each row <resource>.<group>/<name>.
		if diff := cmp.Diff([]string{"sandbox.agents.x-k8s.io/listed"}, names); diff != "" {
			t.Errorf("Rows of kubectl get kubox (-want +got):\n%s\n%s", diff, out)
		}
	})

	t.Run("explain", func(t *testing.T) {
		cases := map[string]string{
			"sandbox.spec.operatingMode": "Suspended deletes the Pod",
			"sandbox.status.conditions":  "Ready, Suspended, PodScheduled and Finished",
		}
		for field, want := range cases {
			t.Run(field, func(t *testing.T) {
				// The API server publishes a new CRD's OpenAPI a moment after it is established.
				framework.Eventually(t, func() (bool, string) {
					out, err := run("explain", field)
					if err != nil {
						return false, "kubectl explain " + field + ": " + err.Error() + ": " + out
					}
					// kubectl wraps descriptions; compare with whitespace collapsed.
					return strings.Contains(strings.Join(strings.Fields(out), " "), want), "kubectl explain " + field + " printed:\n" + out
				})
			})
		}
	})
}
