package provenance

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

func withController(apiVersion, kind string, uid types.UID) *sandboxv1beta1.Sandbox {
	return &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
		{APIVersion: apiVersion, Kind: kind, Name: "owner", UID: uid, Controller: ptr.To(true)}}}}
}

func TestControlledBy(t *testing.T) {
	cases := map[string]struct {
		obj  *sandboxv1beta1.Sandbox
		gk   schema.GroupKind
		want bool
	}{
		"pool":                    {obj: withController("extensions.agents.x-k8s.io/v1beta1", "SandboxWarmPool", "u"), gk: SandboxWarmPool, want: true},
		"pool of another version": {obj: withController("extensions.agents.x-k8s.io/v1alpha1", "SandboxWarmPool", "u"), gk: SandboxWarmPool, want: true},
		"uid under another kind":  {obj: withController("v1", "ConfigMap", "u"), gk: SandboxWarmPool},
		"kind of another group":   {obj: withController("example.com/v1", "SandboxWarmPool", "u"), gk: SandboxWarmPool},
		"another uid":             {obj: withController("extensions.agents.x-k8s.io/v1beta1", "SandboxWarmPool", "v"), gk: SandboxWarmPool},
		"no controller":           {obj: &sandboxv1beta1.Sandbox{}, gk: SandboxWarmPool},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ControlledBy(tc.obj, tc.gk, "u"); got != tc.want {
				t.Errorf("ControlledBy = %v; want %v", got, tc.want)
			}
		})
	}
}

func TestControllerMade(t *testing.T) {
	cases := map[string]struct {
		sb   *sandboxv1beta1.Sandbox
		want bool
	}{
		"pool member": {sb: withController("extensions.agents.x-k8s.io/v1beta1", "SandboxWarmPool", "u"), want: true},
		"claimed":     {sb: withController("extensions.agents.x-k8s.io/v1beta1", "SandboxClaim", "u"), want: true},
		"warm label":  {sb: &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{sandboxv1beta1.WarmPoolSandboxLabel: "x"}}}, want: true},
		"claim label": {sb: &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{sandboxv1beta1.ClaimUIDLabel: "x"}}}, want: true},
		"user's own":  {sb: &sandboxv1beta1.Sandbox{}},
		"other owner": {sb: withController("apps/v1", "Deployment", "u")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ControllerMade(tc.sb); got != tc.want {
				t.Errorf("ControllerMade = %v; want %v", got, tc.want)
			}
		})
	}
}
