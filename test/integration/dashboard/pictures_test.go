package dashboard

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/metrics"
	"github.com/kubox-dev/kubox/internal/router"
	"github.com/kubox-dev/kubox/test/integration/clientenv"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestDashboardPictures draws claim latency and the warm pool's ready members from
// kubox-controller's own metrics: the controllers run in this process, so their registry is
// served as the controller's metrics endpoint, and a router with --ui-metrics-url scrapes it
// while claims are made.
func TestDashboardPictures(t *testing.T) {
	e := clientenv.Setup(t, env)
	env.Grant(t, e.NS, "dev", "dev-dashboard", readRule(extv1beta1.GroupVersion.Group, "sandboxwarmpools"))
	controller := serveControllerMetrics(t, e.NS)
	// This router serves only the dashboard's lists and pictures, which need no agent token:
	// a key of its own will do.
	key := make([]byte, 48)
	_, _ = rand.Read(key)
	_, routerURL := env.StartRouter(t, e.NS, key, func(c *router.Config) { c.UIMetricsURL = controller.URL })
	pe := *e
	pe.RouterURL = routerURL

	// The router's first scrape sets the baseline; claims after it show in the next interval.
	time.Sleep(time.Second)
	for i := range 3 {
		claim(t, e, fmt.Sprintf("pic-%d", i))
	}
	framework.WaitFor(t, time.Minute, func() (bool, string) {
		code, body := apiCall(t, &pe, e.DevToken, http.MethodGet, "metrics")
		var m struct {
			Points []struct {
				LatencyMs *float64 `json:"latencyMs"`
			} `json:"points"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &m) != nil {
			return false, fmt.Sprintf("GET metrics: %d %s", code, body)
		}
		for _, p := range m.Points {
			if p.LatencyMs != nil {
				return true, ""
			}
		}
		return false, fmt.Sprintf("GET metrics: %s; want a point with the claims' latency", body)
	})

	waitForPool(t, &pe)
	// noconnect may not list the namespace's warm pools: it is told so, and learns no template.
	code, body := apiCall(t, &pe, e.NoConnectToken, http.MethodGet, "namespaces/"+e.NS+"/metrics")
	if code != http.StatusOK || strings.Contains(body, `"template"`) || strings.Contains(body, "python") || !strings.Contains(body, "poolsDenied") {
		t.Errorf("GET the namespace's metrics as noconnect (no list on sandboxwarmpools): %d %s; want 200, the pools denied, no template named", code, body)
	}

	b := newBrowser(t)
	page := b.tab(t)
	run(t, page, "opening the login page", chromedp.Navigate(routerURL+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	login(t, page, e.DevToken)
	// A point of claim latency and a line of the pool's ready members, drawn as SVG.
	run(t, page, "waiting for the pictures",
		chromedp.WaitVisible(chromedp.CSS(".pictures figure:first-of-type svg circle, .pictures figure:first-of-type svg path")),
		chromedp.WaitVisible(chromedp.CSS("#pool-sizes svg path")))
	legend := get(t, page, "reading the pool picture's legend",
		chromedp.Evaluate[string](`[...document.querySelectorAll("#pool-sizes svg .legend")].map(e => e.textContent).join(",")`))
	if legend != "python" {
		t.Errorf("The pool picture's legend says %q; want the pool's template, python", legend)
	}
	b.screenshot(t, page, "pictures")
}

// waitForPool waits until the namespace's metrics, as dev (who may list its warm pools), show
// template python's pool over two scrapes (a line to draw), with members Ready at the last, as
// the controller's agent_sandboxes counts them.
func waitForPool(t *testing.T, e *clientenv.Env) {
	t.Helper()
	framework.WaitFor(t, time.Minute, func() (bool, string) {
		code, body := apiCall(t, e, e.DevToken, http.MethodGet, "namespaces/"+e.NS+"/metrics")
		var m struct {
			Pools []struct {
				Template string `json:"template"`
				Points   []struct {
					Ready, Total float64
				} `json:"points"`
			} `json:"pools"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &m) != nil {
			return false, fmt.Sprintf("GET the namespace's metrics: %d %s", code, body)
		}
		for _, p := range m.Pools {
			if n := len(p.Points); p.Template == "python" && n >= 2 && p.Points[n-1].Ready > 0 && p.Points[n-1].Ready <= p.Points[n-1].Total {
				return true, ""
			}
		}
		return false, fmt.Sprintf("GET the namespace's metrics: %s; want template python's pool with Ready members", body)
	})
}

// serveControllerMetrics serves the controllers' registry and, as kubox-controller registers it
// (manager.Setup, which the test's managers skip), agent_sandboxes counted from a cache of ns.
func serveControllerMetrics(t *testing.T, ns string) *httptest.Server {
	t.Helper()
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	sandboxes := metrics.NewSandboxCollector(logr.Discard())
	if err := sandboxes.WatchSandboxes(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(t.Context()) }()
	reg := prometheus.NewRegistry()
	reg.MustRegister(sandboxes)
	srv := httptest.NewServer(promhttp.HandlerFor(prometheus.Gatherers{crmetrics.Registry, reg}, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return srv
}
