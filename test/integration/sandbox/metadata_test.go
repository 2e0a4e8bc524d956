package sandbox

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestPodMetadataPropagation checks that the pod template's labels and annotations reach the Pod
// (reserved keys ignored), that later changes to them reach the running Pod without replacing it,
// and that keys someone else put on the Pod are left alone.
func TestPodMetadataPropagation(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	const name = "labelled"
	hash := sandboxv1beta1.NameHash(name)
	env.Create(t, testutil.MakeSandbox(name, ns).
		PodLabel("app", "agent").PodLabel("team", "a").
		PodLabel(sandboxv1beta1.SandboxNameHashLabel, "deadbeef").PodLabel(sandboxv1beta1.AgentsPrefix+"custom", "x").
		PodLabel(sandboxv1beta1.ExtensionsPrefix+"custom", "x").
		PodAnnotation("note", "hello").PodAnnotation("owner", "me").
		PodAnnotation(sandboxv1beta1.AgentsPrefix+"custom", "x").PodAnnotation(sandboxv1beta1.TraceContextAnnotation, `{"traceparent":"x"}`).
		Obj())
	pod := waitForPod(t, ns, name)

	wantLabels := map[string]string{
		"app": "agent", "team": "a",
		sandboxv1beta1.SandboxNameHashLabel: hash,
		sandboxv1beta1.SandboxNameLabel:     name,
	}
	wantAnnos := map[string]string{
		"note": "hello", "owner": "me",
		sandboxv1beta1.PropagatedLabelsAnnotation:      "app,team",
		sandboxv1beta1.PropagatedAnnotationsAnnotation: "note,owner",
	}
	if diff := cmp.Diff(wantLabels, pod.Labels); diff != "" {
		t.Errorf("Labels of the new Pod (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantAnnos, pod.Annotations); diff != "" {
		t.Errorf("Annotations of the new Pod (-want +got):\n%s", diff)
	}

	t.Log("Someone else labels the Pod; the template changes")
	patch := []byte(`{"metadata":{"labels":{"external":"keep"},"annotations":{"external":"keep"}}}`)
	if err := env.Client.Patch(t.Context(), pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("Labelling Pod: %v", err)
	}
	updateSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) {
		m := &sb.Spec.PodTemplate.Metadata
		delete(m.Labels, "team")
		m.Labels["app"] = "agent-v2"
		m.Labels["env"] = "prod"
		delete(m.Annotations, "note")
		m.Annotations["owner"] = "you"
		m.Annotations["ticket"] = "42"
	})
	wantLabels = map[string]string{
		"app": "agent-v2", "env": "prod", "external": "keep",
		sandboxv1beta1.SandboxNameHashLabel: hash,
		sandboxv1beta1.SandboxNameLabel:     name,
	}
	wantAnnos = map[string]string{
		"owner": "you", "ticket": "42", "external": "keep",
		sandboxv1beta1.PropagatedLabelsAnnotation:      "app,env",
		sandboxv1beta1.PropagatedAnnotationsAnnotation: "owner,ticket",
	}
	updated := framework.WaitForObject(t, env, pod.DeepCopy(), func(p *corev1.Pod) (bool, string) {
		return cmp.Equal(wantLabels, p.Labels) && cmp.Equal(wantAnnos, p.Annotations),
			fmt.Sprintf("labels %v, annotations %v; want labels %v, annotations %v", p.Labels, p.Annotations, wantLabels, wantAnnos)
	})
	if updated.UID != pod.UID {
		t.Errorf("Pod %s was replaced to change its metadata (uid %s, now %s); want it patched", name, pod.UID, updated.UID)
	}

	t.Log("The controller repairs a managed label someone changed")
	patch = []byte(fmt.Sprintf(`{"metadata":{"labels":{"app":"tampered",%q:"00000000"}}}`, sandboxv1beta1.SandboxNameHashLabel))
	if err := env.Client.Patch(t.Context(), updated, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("Labelling Pod: %v", err)
	}
	framework.WaitForObject(t, env, pod.DeepCopy(), func(p *corev1.Pod) (bool, string) {
		return cmp.Equal(wantLabels, p.Labels), fmt.Sprintf("labels %v; want %v", p.Labels, wantLabels)
	})
}
