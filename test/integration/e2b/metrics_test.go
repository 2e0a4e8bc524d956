package e2b

import (
	"net/http"
	"strings"
	"testing"
)

// TestMetricsWithoutMetricsServer: getMetrics reads metrics.k8s.io's PodMetrics of the sandbox's
// Pod as the caller; the integration apiserver serves no metrics.k8s.io, so getMetrics and the
// list variant answer 501 saying so and what to install. A sandbox the caller cannot read
// answers 404 first (no metrics of what is not the caller's).
func TestMetricsWithoutMetricsServer(t *testing.T) {
	f := setup(t)
	sb := f.create(t, map[string]any{"templateID": pool, "timeout": 300})
	var e struct {
		Message string `json:"message"`
	}
	for _, path := range []string{"/sandboxes/" + sb.SandboxID + "/metrics", "/sandboxes/metrics?sandbox_ids=" + sb.SandboxID} {
		if code := f.apiRaw(t, http.MethodGet, path, nil, &e); code != http.StatusNotImplemented ||
			!strings.Contains(e.Message, "metrics.k8s.io is not served by this cluster: install metrics-server") {
			t.Errorf("GET %s answered %d %q; want 501 naming metrics-server", path, code, e.Message)
		}
	}
	if code := f.api(t, f.apiKey, http.MethodGet, "/sandboxes/e2b-nosuchsandbox/metrics", nil, nil); code != http.StatusNotFound {
		t.Errorf("metrics of a sandbox that does not exist answered %d, not 404", code)
	}
	if code := f.api(t, f.apiKey, http.MethodGet, "/sandboxes/metrics", nil, nil); code != http.StatusBadRequest {
		t.Errorf("metrics list without sandbox_ids answered %d, not 400", code)
	}
}
