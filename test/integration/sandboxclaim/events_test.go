package sandboxclaim

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandboxclaim"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestClaimEventsCanBeTurnedOff: with controllers.sandboxClaim.events false a claim gets its
// sandbox and no Event (each is an API write); with the default it gets SandboxProvisioned.
func TestClaimEventsCanBeTurnedOff(t *testing.T) {
	for _, events := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[events], func(t *testing.T) {
			ns := env.NewNamespace(t)
			env.StartKubox(t, ns, func(c *configv1alpha1.ControllerConfiguration) {
				c.Controllers.SandboxClaim.Events = ptr.To(events)
			})
			tpl := &extv1beta1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Name: "tpl", Namespace: ns}}
			tpl.Spec.PodTemplate.Spec.Containers = []corev1.Container{{Name: "main", Image: "busybox"}}
			claim := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns}}
			claim.Spec.SandboxTemplateRef = &extv1beta1.SandboxTemplateReference{Name: "tpl"}
			for _, obj := range []client.Object{tpl, claim} {
				if err := env.Client.Create(t.Context(), obj); err != nil {
					t.Fatalf("Creating %T: %v", obj, err)
				}
			}
			framework.Eventually(t, func() (bool, string) {
				err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "c"}, &sandboxv1beta1.Sandbox{})
				return err == nil, "cold sandbox: " + errText(err)
			})
			provisioned := func() (int, error) {
				list := &eventsv1.EventList{}
				if err := env.Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
					return 0, err
				}
				n := 0
				for _, e := range list.Items {
					if e.Reason == sandboxclaim.EventSandboxProvisioned {
						n++
					}
				}
				return n, nil
			}
			if events {
				framework.Eventually(t, func() (bool, string) {
					n, err := provisioned()
					return err == nil && n == 1, "SandboxProvisioned events: " + errText(err)
				})
				return
			}
			framework.Consistently(t, quiet, func() (bool, string) {
				n, err := provisioned()
				return err == nil && n == 0, "an Event was written with events turned off: " + errText(err)
			})
		})
	}
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
