package router

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMetricsMoveAndProbesAnswer(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, withSharedToken)
	a := startAgentSandbox(t, ns, "box")
	label := fmt.Sprintf("sandbox_namespace=%q", ns)
	eventuallyStatus(t, http.StatusOK, http.MethodGet, rt.url+"/sandboxes/"+ns+"/box/healthz", "", bearer(sharedToken))
	waitNothingInFlight(t, rt)

	before := counter(t, rt, "sandbox_router_requests_total", label, `code="200"`, `method="GET"`)
	allowBefore := counter(t, rt, "sandbox_router_authz_decisions_total", `decision="allow"`)
	do(t, http.MethodGet, rt.url+"/sandboxes/"+ns+"/box/healthz", "", bearer(sharedToken))
	// The handler counts a request after its last byte reached the client: wait for it.
	eventually(t, func() (bool, string) {
		got := counter(t, rt, "sandbox_router_requests_total", label, `code="200"`, `method="GET"`)
		return got == before+1, fmt.Sprintf("sandbox_router_requests_total{code=200} went from %v to %v, want +1", before, got)
	})
	if got := counter(t, rt, "sandbox_router_authz_decisions_total", `decision="allow"`); got != allowBefore+1 {
		t.Errorf("sandbox_router_authz_decisions_total{decision=allow} went from %v to %v, want +1", allowBefore, got)
	}
	do(t, http.MethodGet, rt.url+"/sandboxes/"+ns+"/box/healthz", "")
	if got := counter(t, rt, "sandbox_router_authz_decisions_total", `decision="unauthenticated"`); got < 1 {
		t.Errorf("sandbox_router_authz_decisions_total{decision=unauthenticated} = %v, want at least 1", got)
	}
	eventually(t, func() (bool, string) {
		got := counter(t, rt, "sandbox_router_request_duration_seconds_count", label)
		return got >= 2, fmt.Sprintf("sandbox_router_request_duration_seconds_count = %v, want at least 2", got)
	})
	if got := counter(t, rt, "sandbox_router_build_info"); got != 1 {
		t.Errorf("sandbox_router_build_info = %v, want 1", got)
	}
	waitNothingInFlight(t, rt)

	// The router's own probes are neither counted nor routed.
	probes := counter(t, rt, "sandbox_router_requests_total")
	for _, path := range []string{"/healthz", "/readyz"} {
		if res := do(t, http.MethodGet, rt.url+path, ""); res.code != http.StatusOK || !strings.Contains(res.body, `"ok"`) {
			t.Errorf("main listener %s: %s", path, res)
		}
		rec := httptest.NewRecorder()
		rt.HealthHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("health listener %s: %d %s", path, rec.Code, rec.Body)
		}
	}
	if got := counter(t, rt, "sandbox_router_requests_total"); got != probes {
		t.Errorf("probes moved sandbox_router_requests_total from %v to %v", probes, got)
	}

	// A sandbox whose pod goes away invalidates what the router knew.
	inv := counter(t, rt, "sandbox_router_cache_invalidations_total")
	setStatus(t, a.sb, nil, metav1.ConditionFalse)
	eventually(t, func() (bool, string) {
		got := counter(t, rt, "sandbox_router_cache_invalidations_total")
		return got == inv+1, fmt.Sprintf("sandbox_router_cache_invalidations_total %v, want %v", got, inv+1)
	})
}
