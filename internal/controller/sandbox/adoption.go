package sandbox

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/provenance"
)

// adopt makes sb the controller of obj, a pre-existing Pod, Service or PVC with the name sb would
// give it. Adoption is allowed only for an object without a controller that is labelled
// agents.x-k8s.io/adoptable=true or carries sb's name-hash label, and never for a warm-pool
// member or a claim's sandbox: whoever claims those runs their code and secrets in them, and
// anyone who may create a Pod can give it those labels and a name a sandbox will have. An object
// another controller owns is never touched. The write uses optimistic concurrency, so two
// controllers racing to adopt cannot both win.
func (r *Reconciler) adopt(ctx context.Context, sb *sandboxv1beta1.Sandbox, obj client.Object, obs *observed) error {
	kind := kindOf(obj)
	if ref := metav1.GetControllerOf(obj); ref != nil {
		if owns(sb, obj) {
			return nil
		}
		if predecessorOf(sb, obj) {
			return &predecessorWait{kind: kind, name: obj.GetName(), owner: ref.Name, uid: string(ref.UID)}
		}
		return fmt.Errorf("%s %s is controlled by %s %s, not by this Sandbox; it is left alone: rename the Sandbox or delete the %s",
			kind, obj.GetName(), ref.Kind, ref.Name, kind)
	}
	if provenance.ControllerMade(sb) {
		obs.record(obj, corev1.EventTypeWarning, EventAdoptionRefused, "Adopt",
			fmt.Sprintf("Refused to adopt existing %s %s: it holds the name of a %s but kubox did not create it", kind, obj.GetName(), madeBy(sb)))
		return fmt.Errorf("%s %s already exists and was not created for this Sandbox, a %s; it is never adopted, since the "+
			"sandbox runs the work of whoever claims it: delete the %s (and find out who created it)", kind, obj.GetName(), madeBy(sb), kind)
	}
	if !adoptable(sb, obj) {
		return fmt.Errorf("%s %s already exists and is not controlled by this Sandbox; label it %s=true to let the Sandbox adopt it, or delete it",
			kind, obj.GetName(), sandboxv1beta1.AdoptableLabel)
	}
	base := obj.DeepCopyObject().(client.Object)
	if err := controllerutil.SetControllerReference(sb, obj, r.scheme); err != nil {
		return fmt.Errorf("setting the owner of %s %s: %w", kind, obj.GetName(), err)
	}
	// The informer caches hold only objects with the name-hash label: without it, an adopted
	// object stays invisible to the controller (a PVC would escape its retention policy).
	lbls := obj.GetLabels()
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[sandboxv1beta1.SandboxNameHashLabel] = sandboxv1beta1.NameHash(sb.Name)
	obj.SetLabels(lbls)
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	if err := r.client.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("adopting %s %s: %w", kind, obj.GetName(), err)
	}
	obs.record(obj, corev1.EventTypeNormal, EventAdopted, "Adopt", fmt.Sprintf("Adopted existing %s %s", kind, obj.GetName()))
	return nil
}

// predecessorOf reports whether obj, named as sb names its children, is controlled by an earlier
// Sandbox of sb's name (one deleted and created again, as a claim created again under its name
// does): a Sandbox reference of that name and another UID. Two Sandboxes cannot hold one name at
// once, so that owner is gone and the garbage collector deletes obj; sb waits for it rather than
// asking for it to be deleted or renamed. obj is never touched either way.
func predecessorOf(sb *sandboxv1beta1.Sandbox, obj client.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.Name == sb.Name && ref.UID != sb.UID && provenance.ControlledBy(obj, provenance.Sandbox, ref.UID)
}

// predecessorWait is adopt's answer for a child of an earlier Sandbox of this name (predecessorOf):
// not a fault of this Sandbox but a wait for the garbage collector, which Ready reports as
// DependenciesNotReady rather than ReconcilerError. The Pod's, Service's or PVC's deletion event
// requeues the Sandbox (its owner reference names it).
type predecessorWait struct{ kind, name, owner, uid string }

func (w *predecessorWait) Error() string {
	return fmt.Sprintf("%s %s belongs to an earlier Sandbox %s (uid %s), deleted before this one was created; it is left "+
		"alone, and this Sandbox creates its own once the garbage collector has deleted it", w.kind, w.name, w.owner, w.uid)
}

// onlyPredecessorWaits reports whether err is made of predecessorWaits only (one, or several
// joined, each perhaps wrapped): then the Sandbox is waiting, not failing.
func onlyPredecessorWaits(err error) bool {
	if err == nil {
		return false
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if !onlyPredecessorWaits(e) {
				return false
			}
		}
		return len(joined.Unwrap()) > 0
	}
	var w *predecessorWait
	return errors.As(err, &w)
}

// adoptable reports whether the unowned obj may be adopted by sb.
func adoptable(sb *sandboxv1beta1.Sandbox, obj client.Object) bool {
	l := obj.GetLabels()
	return l[sandboxv1beta1.AdoptableLabel] == "true" || l[sandboxv1beta1.SandboxNameHashLabel] == sandboxv1beta1.NameHash(sb.Name)
}

// owns reports whether sb is obj's controller: by the reference's kind and group as well as its
// UID, which anyone can copy into a reference of another kind.
func owns(sb *sandboxv1beta1.Sandbox, obj metav1.Object) bool {
	return provenance.ControlledBy(obj, provenance.Sandbox, sb.UID)
}

// madeBy names what made sb, a Sandbox provenance.ControllerMade reports.
func madeBy(sb *sandboxv1beta1.Sandbox) string {
	if gk, ok := provenance.ControllerKind(sb); ok && gk == provenance.SandboxClaim {
		return "SandboxClaim's sandbox"
	}
	if _, claimed := sb.Labels[sandboxv1beta1.ClaimUIDLabel]; claimed {
		return "SandboxClaim's sandbox"
	}
	return "warm-pool member"
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *corev1.Pod:
		return "Pod"
	case *corev1.Service:
		return "Service"
	case *corev1.PersistentVolumeClaim:
		return "PersistentVolumeClaim"
	}
	return fmt.Sprintf("%T", obj)
}
