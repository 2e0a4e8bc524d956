package blueprint

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

func template(mutate func(*extv1beta1.SandboxTemplate)) *extv1beta1.SandboxTemplate {
	tpl := &extv1beta1.SandboxTemplate{}
	tpl.Spec.PodTemplate.Spec.Containers = []corev1.Container{{Name: "main", Image: "busybox"}}
	tpl.Spec.PodTemplate.Metadata.Labels = map[string]string{"team": "a"}
	if mutate != nil {
		mutate(tpl)
	}
	return tpl
}

func TestFromTemplateSecureDefaults(t *testing.T) {
	tpl := template(nil)
	bp := FromTemplate(tpl)
	if got := bp.PodTemplate.Spec.AutomountServiceAccountToken; got == nil || *got {
		t.Errorf("automountServiceAccountToken = %v, want false by default", got)
	}
	if tpl.Spec.PodTemplate.Spec.AutomountServiceAccountToken != nil {
		t.Error("FromTemplate changed the template it was given")
	}
	explicit := FromTemplate(template(func(t *extv1beta1.SandboxTemplate) {
		t.Spec.PodTemplate.Spec.AutomountServiceAccountToken = ptr.To(true)
	}))
	if got := explicit.PodTemplate.Spec.AutomountServiceAccountToken; got == nil || !*got {
		t.Errorf("automountServiceAccountToken = %v, want the template's true kept", got)
	}
}

func TestHash(t *testing.T) {
	base := FromTemplate(template(nil))
	h := Hash(&base)
	if len(h) != 8 {
		t.Fatalf("Hash = %q, want 8 hex digits", h)
	}
	cases := map[string]struct {
		mutate  func(*extv1beta1.SandboxTemplate)
		changes bool
	}{
		"identical template":       {mutate: func(*extv1beta1.SandboxTemplate) {}, changes: false},
		"pod template labels only": {mutate: func(t *extv1beta1.SandboxTemplate) { t.Spec.PodTemplate.Metadata.Labels["team"] = "b" }, changes: false},
		"image":                    {mutate: func(t *extv1beta1.SandboxTemplate) { t.Spec.PodTemplate.Spec.Containers[0].Image = "python" }, changes: true},
		"service":                  {mutate: func(t *extv1beta1.SandboxTemplate) { t.Spec.Service = ptr.To(true) }, changes: true},
		"volume claim templates": {mutate: func(t *extv1beta1.SandboxTemplate) {
			t.Spec.VolumeClaimTemplates = []sandboxv1beta1.PersistentVolumeClaimTemplate{{Metadata: sandboxv1beta1.EmbeddedObjectMetadata{Name: "w"}}}
		}, changes: true},
		"egress (the proxy settings and the CA's domains follow it)": {mutate: func(t *extv1beta1.SandboxTemplate) {
			t.Spec.Egress = &sandboxv1beta1.EgressPolicy{AllowDomains: []string{"pypi.org"}}
		}, changes: true},
		"network policy (not part of the blueprint)": {mutate: func(t *extv1beta1.SandboxTemplate) {
			t.Spec.NetworkPolicyManagement = extv1beta1.NetworkPolicyManagementUnmanaged
		}, changes: false},
	}
	// A blueprint without egress hashes as before egress existed, so existing pools keep their
	// members: the JSON of the hashed fields alone.
	if old := fnvHex(t, hashedWithoutEgress{Spec: base.PodTemplate.Spec}); old != h {
		t.Errorf("Hash without egress = %s, want %s as before egress existed", h, old)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			bp := FromTemplate(template(tc.mutate))
			if got := Hash(&bp) != h; got != tc.changes {
				t.Errorf("hash changed = %v, want %v", got, tc.changes)
			}
		})
	}
}

// hashedWithoutEgress is what Hash covered before egress existed.
type hashedWithoutEgress struct {
	Spec                 corev1.PodSpec                                 `json:"spec"`
	VolumeClaimTemplates []sandboxv1beta1.PersistentVolumeClaimTemplate `json:"volumeClaimTemplates,omitempty"`
	Service              *bool                                          `json:"service,omitempty"`
}

func fnvHex(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	h := fnv.New32a()
	_, _ = h.Write(b)
	return fmt.Sprintf("%08x", h.Sum32())
}
