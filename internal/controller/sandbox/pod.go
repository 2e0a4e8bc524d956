package sandbox

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/indexer"
)

// systemLabelsFromSandbox are the Sandbox labels the controller copies to its Pod, and removes
// from the Pod when the Sandbox loses them (a warm-pool member leaving its pool).
var systemLabelsFromSandbox = []string{
	sandboxv1beta1.WarmPoolSandboxLabel,
	sandboxv1beta1.SandboxTemplateRefHashLabel,
	sandboxv1beta1.CreatedByLabel,
	sandboxv1beta1.ClaimUIDLabel,
}

// reconcilePod makes the Sandbox's Pod match spec.operatingMode: present when Running, deleted
// when Suspended. It never changes an existing Pod's spec, only its labels and annotations.
func (r *Reconciler) reconcilePod(ctx context.Context, sb *sandboxv1beta1.Sandbox, obs *observed) error {
	if err := r.observePods(ctx, sb, obs); err != nil || obs.ownedPods > 1 {
		return err
	}
	if suspended(sb) {
		return r.suspendPod(ctx, sb, obs)
	}
	if obs.pod == nil {
		return r.createPod(ctx, sb, obs)
	}
	why, wait := restoreFailure(obs.pod, r.clock.Now())
	switch {
	case why != "" && restoringMemory(sb, obs.pod):
		return r.failRestore(ctx, sb, obs, why)
	case why != "" && sb.Spec.SnapshotRef != nil:
		obs.restoreFailed = snapshotRestoreFailure(sb, obs.pod, why)
	case wait > 0:
		obs.requeueAfter = wait
	}
	return r.patchPodMetadata(ctx, sb, obs.pod)
}

// observePods finds the Pods the Sandbox controls.
func (r *Reconciler) observePods(ctx context.Context, sb *sandboxv1beta1.Sandbox, obs *observed) error {
	pods, err := r.listOwnedPods(ctx, sb)
	if err != nil {
		return err
	}
	obs.ownedPods = len(pods)
	if obs.ownedPods == 1 {
		obs.pod = &pods[0]
	}
	if obs.ownedPods > 1 {
		// One event when the Sandbox enters the state, not one per pass while it stays there.
		if ready := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady); ready == nil ||
			ready.Reason != sandboxv1beta1.SandboxReasonMultiplePods {
			obs.record(nil, corev1.EventTypeWarning, EventMultiplePods, "CheckPods", multiplePodsMessage(obs.ownedPods))
		}
	}
	return nil
}

// listOwnedPods returns the Pods sb controls, from the cache's controller-UID index.
func (r *Reconciler) listOwnedPods(ctx context.Context, sb *sandboxv1beta1.Sandbox) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := r.client.List(ctx, pods, client.InNamespace(sb.Namespace),
		client.MatchingFields{indexer.ControllerUIDKey: string(sb.UID)}); err != nil {
		return nil, fmt.Errorf("listing the Pods of Sandbox %s: %w", sb.Name, err)
	}
	// The index matched the UID only; a reference of another kind carrying the sandbox's UID
	// makes no Pod of the sandbox's.
	return slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return !owns(sb, &p) }), nil
}

// suspendPod deletes the owned Pod. A Pod with the sandbox's name that the sandbox does not own is
// reported and left alone; it can only be seen uncached, since the cache holds labelled Pods only.
func (r *Reconciler) suspendPod(ctx context.Context, sb *sandboxv1beta1.Sandbox, obs *observed) error {
	if obs.pod != nil {
		if obs.pod.DeletionTimestamp != nil {
			return nil
		}
		if keepsMemory(sb) {
			if err := r.keepMemory(ctx, sb, obs.pod); err != nil {
				return err
			}
		}
		r.pods.Forget(obs.pod.UID)
		return client.IgnoreNotFound(r.client.Delete(ctx, obs.pod, client.Preconditions{UID: &obs.pod.UID}))
	}
	pod := &corev1.Pod{}
	err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: sb.Namespace, Name: sb.Name}, pod)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading Pod %s: %w", sb.Name, err)
	}
	obs.foreignPod = true
	return nil
}

// podNameFreedRetry is how soon a Sandbox whose Pod name was taken by a Pod deleted before it
// could be read creates its Pod.
const podNameFreedRetry = 200 * time.Millisecond

// createPod creates the Pod, or, when one with the sandbox's name already exists, adopts it if
// the adoption rules allow.
func (r *Reconciler) createPod(ctx context.Context, sb *sandboxv1beta1.Sandbox, obs *observed) error {
	pod, err := r.buildPod(sb)
	if err != nil {
		return err
	}
	if why, err := r.shapeRestore(ctx, sb, pod); err != nil || why != "" {
		obs.snapshotWait, obs.requeueAfter = why, snapshotRetry
		return err
	}
	if sb.Spec.Agent != nil {
		if err := r.ensureAgentSecret(ctx, sb); err != nil {
			return err
		}
	}
	if sb.Spec.Egress != nil && len(sb.Spec.Egress.Credentials) > 0 {
		if err := r.ensureEgressCA(ctx, sb); err != nil {
			return err
		}
	}
	err = r.client.Create(ctx, pod, client.FieldOwner(FieldManager))
	switch {
	case err == nil:
		obs.pod = pod
		obs.ownedPods = 1
		obs.recordAction(pod, corev1.EventTypeNormal, EventPodCreated, "CreatePod", "Created Pod "+pod.Name)
		return r.recordPodName(ctx, sb)
	case !apierrors.IsAlreadyExists(err):
		obs.record(nil, corev1.EventTypeWarning, EventPodCreateFailed, "CreatePod",
			fmt.Sprintf("Creating Pod %s failed: %v", sb.Name, err))
		return fmt.Errorf("creating Pod %s: %w", sb.Name, err)
	}
	existing := &corev1.Pod{}
	switch err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(pod), existing); {
	case apierrors.IsNotFound(err):
		// Deleted between the two calls (an earlier Sandbox's Pod, garbage-collected): the name
		// is free, and the next pass creates the Pod.
		obs.requeueAfter = podNameFreedRetry
		return nil
	case err != nil:
		return fmt.Errorf("reading existing Pod %s: %w", sb.Name, err)
	}
	if err := r.adopt(ctx, sb, existing, obs); err != nil {
		obs.foreignPod = true
		return err
	}
	obs.pod = existing
	obs.ownedPods = 1
	return r.patchPodMetadata(ctx, sb, existing)
}

// shapeRestore shapes the new Pod of a sandbox to restore from its memory snapshot (a resume with
// keepMemory) or else from its spec.snapshotRef, on a node that holds the snapshot (placeRestore),
// and discards a memory snapshot the sandbox no longer resumes from. It returns why the Pod must
// wait, or "".
func (r *Reconciler) shapeRestore(ctx context.Context, sb *sandboxv1beta1.Sandbox, pod *corev1.Pod) (string, error) {
	from := sb.Status.Memory
	if !resumeFromMemory(sb, pod) {
		if from != nil {
			if err := r.dropMemory(ctx, sb); err != nil {
				return "", err
			}
		}
		if sb.Spec.SnapshotRef == nil {
			return "", nil
		}
		s, why, err := r.startFromSnapshot(ctx, sb, pod)
		if err != nil || why != "" {
			return why, err
		}
		from = s
	}
	return r.placeRestore(ctx, sb.Namespace, pod, from)
}

// recordPodName sets the agent-sandbox pod-name annotation on the Sandbox once.
func (r *Reconciler) recordPodName(ctx context.Context, sb *sandboxv1beta1.Sandbox) error {
	if sb.Annotations[sandboxv1beta1.PodNameAnnotation] == sb.Name {
		return nil
	}
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, sandboxv1beta1.PodNameAnnotation, sb.Name))
	base := sb.ResourceVersion
	if err := r.client.Patch(ctx, sb, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotating Sandbox %s with its Pod name: %w", sb.Name, err)
	}
	r.sandboxes.Wrote(sb.UID, base)
	return nil
}

// buildPod returns the Pod the Sandbox should have.
func (r *Reconciler) buildPod(sb *sandboxv1beta1.Sandbox) (*corev1.Pod, error) {
	lbls, annos := desiredPodMetadata(sb)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: sb.Name, Namespace: sb.Namespace, Labels: lbls, Annotations: annos},
		Spec:       *sb.Spec.PodTemplate.Spec.DeepCopy(),
	}
	pod.Spec.Volumes = withClaimVolumes(pod.Spec.Volumes, sb)
	if sb.Spec.Egress != nil {
		r.injectEgress(pod, sb)
	}
	if sb.Spec.Agent != nil {
		if err := r.agent.agentReady(); err != nil {
			return nil, err
		}
		if err := r.injectAgent(pod, sb.Spec.Agent); err != nil {
			return nil, err
		}
	}
	if err := controllerutil.SetControllerReference(sb, pod, r.scheme); err != nil {
		return nil, fmt.Errorf("setting the owner of Pod %s: %w", sb.Name, err)
	}
	return pod, nil
}

// withClaimVolumes adds one volume per volume claim template, replacing a same-named volume.
func withClaimVolumes(vols []corev1.Volume, sb *sandboxv1beta1.Sandbox) []corev1.Volume {
	for _, vct := range sb.Spec.VolumeClaimTemplates {
		v := corev1.Volume{Name: vct.Metadata.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: sandboxv1beta1.PVCName(vct.Metadata.Name, sb.Name)},
		}}
		vols = setNamed(vols, v, func(v corev1.Volume) string { return v.Name })
	}
	return vols
}

// desiredPodMetadata returns the labels and annotations the controller manages on the Pod: the
// template's (reserved keys dropped), safe-to-evict on an unclaimed pool member's, the
// propagated-keys bookkeeping, and the system labels.
func desiredPodMetadata(sb *sandboxv1beta1.Sandbox) (map[string]string, map[string]string) {
	lbls := userKeys(sb.Spec.PodTemplate.Metadata.Labels)
	annos := userKeys(sb.Spec.PodTemplate.Metadata.Annotations)
	if _, member := sb.Labels[sandboxv1beta1.WarmPoolSandboxLabel]; member {
		if _, set := annos[sandboxv1beta1.SafeToEvictAnnotation]; !set {
			// An unclaimed pool member holds no one's work: the cluster autoscaler may evict
			// it. Propagated like a template annotation, it goes when a claim takes the member.
			annos[sandboxv1beta1.SafeToEvictAnnotation] = "true"
		}
	}
	annoKeys := joinKeys(annos)
	annos[sandboxv1beta1.PropagatedLabelsAnnotation] = joinKeys(lbls)
	annos[sandboxv1beta1.PropagatedAnnotationsAnnotation] = annoKeys
	lbls[sandboxv1beta1.SandboxNameHashLabel] = sandboxv1beta1.NameHash(sb.Name)
	lbls[sandboxv1beta1.SandboxNameLabel] = sb.Name
	for _, k := range systemLabelsFromSandbox {
		if v, ok := sb.Labels[k]; ok {
			lbls[k] = v
		}
	}
	return lbls, annos
}

// patchPodMetadata brings the Pod's managed labels and annotations up to date with one merge
// patch, removing keys the template or the Sandbox no longer has. Other keys are left alone.
func (r *Reconciler) patchPodMetadata(ctx context.Context, sb *sandboxv1beta1.Sandbox, pod *corev1.Pod) error {
	wantLabels, wantAnnos := desiredPodMetadata(sb)
	stale := func(key string) []string {
		return strings.Split(pod.Annotations[key], ",")
	}
	labelPatch := metadataPatch(pod.Labels, wantLabels, append(stale(sandboxv1beta1.PropagatedLabelsAnnotation), systemLabelsFromSandbox...))
	annoPatch := metadataPatch(pod.Annotations, wantAnnos, stale(sandboxv1beta1.PropagatedAnnotationsAnnotation))
	// While the cache still shows the version this process last patched from, the patched
	// version's event is on its way and requeues the Sandbox: patching from the stale copy would
	// only repeat the write (under a claim burst the Pod cache lags by hundreds of milliseconds).
	if len(labelPatch) == 0 && len(annoPatch) == 0 || r.pods.Behind(pod.UID, pod.ResourceVersion) {
		return nil
	}
	base := pod.ResourceVersion
	patch := map[string]any{"metadata": map[string]any{"labels": labelPatch, "annotations": annoPatch}}
	if err := r.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, mustJSON(patch))); err != nil {
		return fmt.Errorf("updating the labels of Pod %s: %w", pod.Name, err)
	}
	r.pods.Wrote(pod.UID, base)
	return nil
}

// metadataPatch returns the merge-patch entries that turn have into want for the keys in want and
// removable (a nil value deletes a key).
func metadataPatch(have, want map[string]string, removable []string) map[string]any {
	p := map[string]any{}
	for k, v := range want {
		if cur, ok := have[k]; !ok || cur != v {
			p[k] = v
		}
	}
	for _, k := range removable {
		if _, wanted := want[k]; k != "" && !wanted {
			if _, present := have[k]; present {
				p[k] = nil
			}
		}
	}
	return p
}

// userKeys copies m without the keys reserved for the controller.
func userKeys(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+2)
	for k, v := range m {
		if !reservedKey(k) {
			out[k] = v
		}
	}
	return out
}

func reservedKey(k string) bool {
	return strings.HasPrefix(k, sandboxv1beta1.AgentsPrefix) ||
		strings.HasPrefix(k, sandboxv1beta1.ExtensionsPrefix) ||
		// The controller sets the restore annotations itself on the Pods it restores and never
		// takes one from a pod template, whatever let it into the Sandbox (config/admission
		// refuses it there).
		strings.HasPrefix(k, contract.RestoreAnnotationPrefix) ||
		k == sandboxv1beta1.TraceContextAnnotation
}

func joinKeys(m map[string]string) string {
	keys := sets.List(sets.KeySet(m))
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// setNamed replaces the items of list named like v with v, or appends v when none is.
func setNamed[T any](list []T, v T, name func(T) string) []T {
	replaced := false
	for i := range list {
		if name(list[i]) == name(v) {
			list[i], replaced = v, true
		}
	}
	if !replaced {
		list = append(list, v)
	}
	return list
}
