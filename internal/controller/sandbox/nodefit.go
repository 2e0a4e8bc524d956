package sandbox

import (
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kubox-dev/kubox/internal/controller/nodeapi"
)

// This file is the controller's estimate of whether a restoring Pod fits a node, by which the
// restore planner (planRestore) chooses between the node that holds the snapshot and one that must
// fetch it. It decides nothing else, and reads nothing: the Pod is required on the chosen node
// through the scheduler, which has the last word (a Pod that does not fit after all stays Pending
// with the scheduler's reason).

// podNodeNameField is the Pod field selector the API server offers for a node's Pods.
const podNodeNameField = "spec.nodeName"

// unfitNode says why pod cannot run on n whatever else runs there, or "" when it may: n is not
// Ready, is cordoned, does not match the Pod's node selector or required node affinity, or has a
// taint the Pod does not tolerate. lacks then says whether what is left of n is enough.
func unfitNode(pod *corev1.Pod, n *corev1.Node) string {
	switch {
	case !nodeapi.NodeReady(n):
		return "is not Ready"
	case n.Spec.Unschedulable && !tolerates(pod, &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}):
		return "is cordoned (spec.unschedulable)"
	case !matchesNode(&pod.Spec, n):
		return "does not match the Pod's node selector or required node affinity"
	}
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectPreferNoSchedule && !tolerates(pod, t) {
			return fmt.Sprintf("has the taint %s, which the Pod does not tolerate", t.ToString())
		}
	}
	return ""
}

// tolerates reports whether one of pod's tolerations tolerates t. Gt and Lt, behind a feature gate,
// are not compared (such a toleration tolerates nothing here), and only they would log.
func tolerates(pod *corev1.Pod, t *corev1.Taint) bool {
	return slices.ContainsFunc(pod.Spec.Tolerations, func(tol corev1.Toleration) bool {
		return tol.ToleratesTaint(logr.Discard(), t, false)
	})
}

// matchesNode reports whether n matches spec's node selector and one of its required node
// affinity terms, as the scheduler's NodeAffinity filter decides.
func matchesNode(spec *corev1.PodSpec, n *corev1.Node) bool {
	if !labels.SelectorFromSet(spec.NodeSelector).Matches(labels.Set(n.Labels)) {
		return false
	}
	a := spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	return slices.ContainsFunc(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms,
		func(t corev1.NodeSelectorTerm) bool { return termMatches(t, n) })
}

// termMatches reports whether n matches every requirement of t; an empty term matches no node.
func termMatches(t corev1.NodeSelectorTerm, n *corev1.Node) bool {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return false
	}
	fields := labels.Set{metav1.ObjectNameField: n.Name}
	return !slices.ContainsFunc(t.MatchExpressions, func(r corev1.NodeSelectorRequirement) bool { return !requirementMatches(r, n.Labels) }) &&
		!slices.ContainsFunc(t.MatchFields, func(r corev1.NodeSelectorRequirement) bool { return !requirementMatches(r, fields) })
}

var selectorOperators = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn: selection.In, corev1.NodeSelectorOpNotIn: selection.NotIn,
	corev1.NodeSelectorOpExists: selection.Exists, corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt: selection.GreaterThan, corev1.NodeSelectorOpLt: selection.LessThan,
}

func requirementMatches(r corev1.NodeSelectorRequirement, set labels.Set) bool {
	op, ok := selectorOperators[r.Operator]
	if !ok {
		return false
	}
	req, err := labels.NewRequirement(r.Key, op, r.Values)
	return err == nil && req.Matches(set)
}

// lacks says which resource n has too little of for pod, or "" when every request fits: its
// allocatable less the requests of pods, the Pods bound to n as read from the API server (the
// cache holds sandbox Pods only), those that have ended left out.
func lacks(pod *corev1.Pod, n *corev1.Node, pods []corev1.Pod) string {
	used, count := corev1.ResourceList{}, int64(1)
	for i := range pods {
		if p := &pods[i]; p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			addResources(used, podRequests(&p.Spec))
			count++
		}
	}
	alloc := n.Status.Allocatable
	if most, ok := alloc[corev1.ResourcePods]; ok && count > most.Value() {
		return fmt.Sprintf("runs %d Pods, as many as it allows", count-1)
	}
	for name, want := range podRequests(&pod.Spec) {
		have, ok := alloc[name]
		if want.IsZero() {
			continue
		}
		if !ok {
			return fmt.Sprintf("has no %s", name)
		}
		have.Sub(used[name])
		if have.Cmp(want) < 0 {
			return fmt.Sprintf("has %s of %s free, less than the Pod's request of %s", have.String(), name, want.String())
		}
	}
	return ""
}

// podRequests is what the scheduler reserves for a Pod: the requests of its containers and
// sidecars (restartable init containers), or of the largest init container with the sidecars
// started before it if that is more, plus the Pod's overhead; the Pod-level requests when set.
func podRequests(spec *corev1.PodSpec) corev1.ResourceList {
	if spec.Resources != nil && len(spec.Resources.Requests) > 0 {
		out := spec.Resources.Requests.DeepCopy()
		addResources(out, spec.Overhead)
		return out
	}
	out, sidecars, inits := corev1.ResourceList{}, corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addResources(sidecars, c.Resources.Requests)
			continue
		}
		step := sidecars.DeepCopy()
		addResources(step, c.Resources.Requests)
		maxResources(inits, step)
	}
	for _, c := range spec.Containers {
		addResources(out, c.Resources.Requests)
	}
	addResources(out, sidecars)
	maxResources(out, inits)
	addResources(out, spec.Overhead)
	return out
}

func addResources(into, l corev1.ResourceList) {
	for k, v := range l {
		q := into[k]
		q.Add(v)
		into[k] = q
	}
}

func maxResources(into, l corev1.ResourceList) {
	for k, v := range l {
		if q, ok := into[k]; !ok || q.Cmp(v) < 0 {
			into[k] = v.DeepCopy()
		}
	}
}
