package v1beta1

import corev1 "k8s.io/api/core/v1"

// PodLive reports whether pod, a Pod of a Sandbox, is neither terminating nor terminated: only a
// live Pod's IP names its sandbox (the router dials it, kubox-egress attributes traffic from it),
// since a terminating or finished Pod's IP may already be another Pod's.
func PodLive(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}
