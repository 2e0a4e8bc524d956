package api

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

// The extension CRDs, by plural resource name.
const (
	templatesResource = "sandboxtemplates"
	poolsResource     = "sandboxwarmpools"
	claimsResource    = "sandboxclaims"
)

// extServedVersion returns the extension CRD of resource as the API server has it, and its
// v1beta1 version.
func extServedVersion(t *testing.T, resource string) (*apiextensionsv1.CustomResourceDefinition, *apiextensionsv1.CustomResourceDefinitionVersion) {
	t.Helper()
	return servedVersion(t, resource, extv1beta1.GroupVersion)
}

// undescribed lists the fields under root that have no description, as dotted paths.
func undescribed(root *apiextensionsv1.JSONSchemaProps) []string {
	var missing []string
	var walk func(path string, s *apiextensionsv1.JSONSchemaProps)
	walk = func(path string, s *apiextensionsv1.JSONSchemaProps) {
		if path != "" && path != "metadata" && strings.TrimSpace(s.Description) == "" {
			missing = append(missing, path)
		}
		for name, p := range s.Properties {
			walk(strings.TrimPrefix(path+"."+name, "."), &p)
		}
		if s.Items != nil && s.Items.Schema != nil {
			// A list's items are described by the list itself.
			items := *s.Items.Schema
			items.Description = s.Description
			walk(path+".[]", &items)
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			values := *s.AdditionalProperties.Schema
			values.Description = s.Description
			walk(path+".{}", &values)
		}
	}
	walk("", root)
	sort.Strings(missing)
	return missing
}

func TestExtensionCRDDescriptions(t *testing.T) {
	for _, resource := range []string{templatesResource, poolsResource, claimsResource} {
		t.Run(resource, func(t *testing.T) {
			_, version := extServedVersion(t, resource)
			if diff := cmp.Diff([]string(nil), undescribed(version.Schema.OpenAPIV3Schema)); diff != "" {
				t.Errorf("Fields without a description (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExtensionCRDNamesAndColumns(t *testing.T) {
	type column struct {
		Name, Type, JSONPath string
		Priority             int32
	}
	cases := map[string]struct {
		shortName string
		columns   []column
		// scale is the scale subresource, nil for none.
		scale *apiextensionsv1.CustomResourceSubresourceScale
	}{
		templatesResource: {
			shortName: "sandboxtemplate",
			columns: []column{
				{"Network Policy", "string", ".spec.networkPolicyManagement", 0},
				{"Env Vars", "string", ".spec.envVarsInjectionPolicy", 1},
				{"Volumes", "string", ".spec.volumeClaimTemplatesPolicy", 1},
				{"Age", "date", ".metadata.creationTimestamp", 0},
			},
		},
		poolsResource: {
			shortName: "swp",
			// Ready and Desired are agent-sandbox's columns: Ready counts ready members.
			columns: []column{
				{"Ready", "integer", ".status.readyReplicas", 0},
				{"Desired", "integer", ".spec.replicas", 0},
				{"Up-to-date", "integer", ".status.updatedReplicas", 0},
				{"Reason", "string", ".status.conditions[?(@.type=='Ready')].reason", 0},
				{"Template", "string", ".spec.sandboxTemplateRef.name", 1},
				{"Strategy", "string", ".spec.updateStrategy.type", 1},
				{"Age", "date", ".metadata.creationTimestamp", 0},
			},
			scale: &apiextensionsv1.CustomResourceSubresourceScale{
				SpecReplicasPath:   ".spec.replicas",
				StatusReplicasPath: ".status.replicas",
				LabelSelectorPath:  ptr.To(".status.selector"),
			},
		},
		claimsResource: {
			shortName: "sandboxclaim",
			columns: []column{
				{"Ready", "string", ".status.conditions[?(@.type=='Ready')].status", 0},
				{"Sandbox", "string", ".status.sandbox.name", 0},
				{"Reason", "string", ".status.conditions[?(@.type=='Ready')].reason", 0},
				{"Warm Pool", "string", ".spec.warmPoolRef.name", 1},
				{"Template", "string", ".spec.sandboxTemplateRef.name", 1},
				{"Pod IP", "string", ".status.sandbox.podIPs[0]", 1},
				{"Age", "date", ".metadata.creationTimestamp", 0},
			},
		},
	}

	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatalf("Creating a discovery client: %v", err)
	}
	discovered, err := dc.ServerResourcesForGroupVersion(extv1beta1.GroupVersion.String())
	if err != nil {
		t.Fatalf("Discovering %s: %v", extv1beta1.GroupVersion, err)
	}

	for resource, tc := range cases {
		t.Run(resource, func(t *testing.T) {
			crd, version := extServedVersion(t, resource)
			var got []column
			for _, c := range version.AdditionalPrinterColumns {
				got = append(got, column{c.Name, c.Type, c.JSONPath, c.Priority})
				if c.Name != "Age" && strings.TrimSpace(c.Description) == "" {
					t.Errorf("Printer column %s has no description", c.Name)
				}
			}
			if diff := cmp.Diff(tc.columns, got); diff != "" {
				t.Errorf("Printer columns (-want +got):\n%s", diff)
			}
			if crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
				t.Errorf("Scope is %s; want Namespaced", crd.Spec.Scope)
			}
			if version.Subresources == nil || version.Subresources.Status == nil {
				if resource != templatesResource {
					t.Errorf("%s has no status subresource", resource)
				}
			}
			var scale *apiextensionsv1.CustomResourceSubresourceScale
			if version.Subresources != nil {
				scale = version.Subresources.Scale
			}
			if diff := cmp.Diff(tc.scale, scale); diff != "" {
				t.Errorf("Scale subresource (-want +got):\n%s", diff)
			}

			// kubectl finds categories and short names through discovery.
			i := slices.IndexFunc(discovered.APIResources, func(r metav1.APIResource) bool { return r.Name == resource })
			if i < 0 {
				t.Fatalf("Discovery of %s has no %s resource", extv1beta1.GroupVersion, resource)
			}
			r := discovered.APIResources[i]
			if !slices.Contains(r.Categories, "kubox") || !slices.Contains(r.ShortNames, tc.shortName) {
				t.Errorf("Discovery lists %s with categories %q and short names %q; want kubox and %s among them",
					resource, r.Categories, r.ShortNames, tc.shortName)
			}
		})
	}
}

// getTable lists resource in ns as kubectl does, as a Table with every column (-o wide).
func getTable(t *testing.T, ns, resource string) *metav1.Table {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatalf("Creating an HTTP client: %v", err)
	}
	url := strings.TrimSuffix(env.Config.Host, "/") + "/apis/" + extv1beta1.GroupVersion.String() +
		"/namespaces/" + ns + "/" + resource + "?includeObject=None"
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatalf("Building request: %v", err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("Reading %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		t.Fatalf("Decoding table: %v\n%s", err, body)
	}
	return table
}

// tableRows returns the table's cells by column name, one map per row, leaving out Age.
func tableRows(table *metav1.Table) []map[string]any {
	var rows []map[string]any
	for _, r := range table.Rows {
		row := map[string]any{}
		for i, c := range table.ColumnDefinitions {
			if c.Name != "Age" && i < len(r.Cells) {
				row[c.Name] = r.Cells[i]
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func TestExtensionTables(t *testing.T) {
	ns := env.NewNamespace(t)
	ctx := t.Context()

	claim := testutil.MakeClaim("listed", ns).WarmPool("python").Obj()
	if err := env.Client.Create(ctx, claim); err != nil {
		t.Fatalf("Creating claim: %v", err)
	}
	claim.Status = extv1beta1.SandboxClaimStatus{
		Conditions: []metav1.Condition{{
			Type: extv1beta1.ClaimConditionReady, Status: metav1.ConditionTrue,
			Reason: sandboxv1beta1.SandboxReasonDependenciesReady, Message: "Pod is Ready; Service Exists",
			LastTransitionTime: metav1.Now(), ObservedGeneration: claim.Generation,
		}},
		Sandbox:            extv1beta1.ClaimSandboxStatus{Name: "python-x7k2p", PodIPs: []string{"10.0.0.7"}},
		ObservedGeneration: claim.Generation,
	}
	if err := env.Client.Status().Update(ctx, claim); err != nil {
		t.Fatalf("Writing claim status: %v", err)
	}

	pool := testutil.MakePool("python", ns, "python-template").Replicas(3).Obj()
	if err := env.Client.Create(ctx, pool); err != nil {
		t.Fatalf("Creating pool: %v", err)
	}
	pool.Status = extv1beta1.SandboxWarmPoolStatus{
		Replicas: 3, ReadyReplicas: 2, UpdatedReplicas: 3,
		Selector: extv1beta1.WarmPoolSelector("python"), ObservedGeneration: pool.Generation,
		Conditions: []metav1.Condition{{
			Type: extv1beta1.WarmPoolConditionReady, Status: metav1.ConditionFalse,
			Reason: extv1beta1.WarmPoolReasonReplicasNotReady, Message: "2 of 3 members are ready",
			LastTransitionTime: metav1.Now(), ObservedGeneration: pool.Generation,
		}},
	}
	if err := env.Client.Status().Update(ctx, pool); err != nil {
		t.Fatalf("Writing pool status: %v", err)
	}

	if err := env.Client.Create(ctx, testutil.MakeTemplate("python-template", ns).Obj()); err != nil {
		t.Fatalf("Creating template: %v", err)
	}

	cases := map[string][]map[string]any{
		claimsResource: {{
			"Name": "listed", "Ready": "True", "Sandbox": "python-x7k2p", "Reason": "DependenciesReady",
			"Warm Pool": "python", "Template": nil, "Pod IP": "10.0.0.7",
		}},
		poolsResource: {{
			// JSON numbers decode as float64.
			"Name": "python", "Ready": float64(2), "Desired": float64(3), "Up-to-date": float64(3),
			"Reason": "ReplicasNotReady", "Template": "python-template", "Strategy": "OnReplenish",
		}},
		templatesResource: {{
			"Name": "python-template", "Network Policy": "Managed", "Env Vars": "Disallowed", "Volumes": "Disallowed",
		}},
	}
	for resource, want := range cases {
		t.Run(resource, func(t *testing.T) {
			if diff := cmp.Diff(want, tableRows(getTable(t, ns, resource))); diff != "" {
				t.Errorf("Table rows (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWarmPoolScaleSubresource drives a pool the way an HPA or KEDA does: through /scale.
func TestWarmPoolScaleSubresource(t *testing.T) {
	ns := env.NewNamespace(t)
	ctx := t.Context()
	pool := testutil.MakePool("scaled", ns, "template").Obj()
	if err := env.Client.Create(ctx, pool); err != nil {
		t.Fatalf("Creating pool: %v", err)
	}
	pool.Status = extv1beta1.SandboxWarmPoolStatus{Replicas: 1, ReadyReplicas: 1, Selector: extv1beta1.WarmPoolSelector("scaled")}
	if err := env.Client.Status().Update(ctx, pool); err != nil {
		t.Fatalf("Writing pool status: %v", err)
	}

	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(ctx, pool, scale); err != nil {
		t.Fatalf("Reading scale: %v", err)
	}
	want := autoscalingv1.ScaleStatus{Replicas: 1, Selector: "agents.x-k8s.io/warm-pool-sandbox=" + sandboxv1beta1.NameHash("scaled")}
	if scale.Spec.Replicas != 1 {
		t.Errorf("scale.spec.replicas = %d; want the defaulted 1", scale.Spec.Replicas)
	}
	if diff := cmp.Diff(want, scale.Status); diff != "" {
		t.Errorf("scale.status (-want +got):\n%s", diff)
	}

	t.Run("scale up", func(t *testing.T) {
		up := scale.DeepCopy()
		up.Spec.Replicas = 5
		if err := env.Client.SubResource("scale").Update(ctx, pool, client.WithSubResourceBody(up)); err != nil {
			t.Fatalf("Scaling to 5: %v", err)
		}
		got := &extv1beta1.SandboxWarmPool{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pool), got); err != nil {
			t.Fatalf("Reading pool: %v", err)
		}
		if got.Spec.Replicas == nil || *got.Spec.Replicas != 5 {
			t.Errorf("spec.replicas = %v after scaling to 5", got.Spec.Replicas)
		}
	})

	t.Run("scale to zero", func(t *testing.T) {
		if err := env.Client.SubResource("scale").Get(ctx, pool, scale); err != nil {
			t.Fatalf("Reading scale: %v", err)
		}
		zero := scale.DeepCopy()
		zero.Spec.Replicas = 0
		if err := env.Client.SubResource("scale").Update(ctx, pool, client.WithSubResourceBody(zero)); err != nil {
			t.Fatalf("Scaling to 0: %v", err)
		}
		got := &extv1beta1.SandboxWarmPool{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pool), got); err != nil {
			t.Fatalf("Reading pool: %v", err)
		}
		if got.Spec.Replicas == nil || *got.Spec.Replicas != 0 {
			t.Errorf("spec.replicas = %v after scaling to 0", got.Spec.Replicas)
		}
	})

	t.Run("scale below zero", func(t *testing.T) {
		if err := env.Client.SubResource("scale").Get(ctx, pool, scale); err != nil {
			t.Fatalf("Reading scale: %v", err)
		}
		negative := scale.DeepCopy()
		negative.Spec.Replicas = -1
		err := env.Client.SubResource("scale").Update(ctx, pool, client.WithSubResourceBody(negative))
		checkErr(t, "Scaling to -1", err, []string{"spec.replicas", "greater than or equal to 0"})
	})
}
