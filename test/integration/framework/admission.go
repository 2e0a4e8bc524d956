package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

// ProvenanceRule allows `create` on sandboxes/provenance: what the admission policies of
// config/admission ask before they let a requester mark a Sandbox as a warm-pool member or a
// claim's sandbox, or give an object an owner reference to a Sandbox.
func ProvenanceRule() rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{sandboxv1beta1.GroupVersion.Group},
		Resources: []string{"sandboxes/provenance"}, Verbs: []string{"create"}}
}

// installAdmissionPolicies creates the ValidatingAdmissionPolicies and their bindings of
// config/admission, as a cluster gets them from config/default, and waits until the API server
// enforces them.
func installAdmissionPolicies(cfg *rest.Config, c client.Client, root string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := filepath.Join(root, "config", "admission")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	n := 0
	for _, file := range files {
		if filepath.Base(file) == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("reading the admission policies: %w", err)
		}
		for _, doc := range bytes.Split(b, []byte("\n---\n")) {
			obj, err := admissionObject(doc)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			if obj == nil {
				continue
			}
			if err := c.Create(ctx, obj); err != nil {
				return fmt.Errorf("creating %s from %s: %w", obj.GetName(), file, err)
			}
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("%s holds no admission policy", dir)
	}
	return waitForPolicies(ctx, cfg, c)
}

// admissionObject decodes one YAML document of config/admission; nil for an empty one.
func admissionObject(doc []byte) (client.Object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	var obj client.Object
	switch tm.Kind {
	case "":
		return nil, nil
	case "ValidatingAdmissionPolicy":
		obj = &admissionregistrationv1.ValidatingAdmissionPolicy{}
	case "ValidatingAdmissionPolicyBinding":
		obj = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	default:
		return nil, fmt.Errorf("unexpected kind %q", tm.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// waitForPolicies waits until the API server refuses a Sandbox with a warm-pool label from a user
// who may create Sandboxes but has no provenance permission: the API server loads new policies
// in the background.
func waitForPolicies(ctx context.Context, cfg *rest.Config, c client.Client) error {
	const probe, ns = "kubox-framework-admission-probe", "default"
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: probe, Namespace: ns}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{sandboxv1beta1.GroupVersion.Group}, Resources: []string{"sandboxes"}, Verbs: []string{"create"}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: probe, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: probe},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: probe}}}
	for _, obj := range []client.Object{role, rb} {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating the admission probe's %T: %w", obj, err)
		}
	}
	pcfg := rest.CopyConfig(cfg)
	pcfg.Impersonate = rest.ImpersonationConfig{UserName: probe}
	pc, err := client.New(pcfg, client.Options{Scheme: c.Scheme()})
	if err != nil {
		return err
	}
	var last error
	for ctx.Err() == nil {
		sb := testutil.MakeSandbox(probe, ns).Label(sandboxv1beta1.WarmPoolSandboxLabel, "probe").Obj()
		last = pc.Create(ctx, sb, client.DryRunAll)
		if apierrors.IsForbidden(last) && strings.Contains(last.Error(), "sandboxes/provenance") {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.Join(errors.New("the admission policies of config/admission were not enforced within a minute"), last)
}
