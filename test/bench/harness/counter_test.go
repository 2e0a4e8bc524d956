package harness

import "testing"

func TestResourceOf(t *testing.T) {
	cases := map[string]string{
		"/api/v1/namespaces/ns/pods":                                           "pods",
		"/api/v1/namespaces/ns/pods/p1":                                        "pods",
		"/api/v1/namespaces/ns/pods/p1/binding":                                "pods/binding",
		"/apis/agents.x-k8s.io/v1beta1/namespaces/ns/sandboxes/s/status":       "sandboxes/status",
		"/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/ns/sandboxclaims": "sandboxclaims",
		"/apis/events.k8s.io/v1/namespaces/ns/events":                          "events",
		"/api/v1/namespaces/ns":                                                "namespaces",
		"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubox":     "leases",
		"/api/v1/nodes/n1/status":                                              "nodes/status",
	}
	for path, want := range cases {
		if got := resourceOf(path); got != want {
			t.Errorf("resourceOf(%q) = %q, want %q", path, got, want)
		}
	}
}
