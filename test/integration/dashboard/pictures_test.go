package dashboard

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/router"
	"github.com/kubox-dev/kubox/test/integration/clientenv"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestDashboardPictures draws claim latency from kubox-controller's own metrics: the
// controllers run in this process, so their registry is served as the controller's metrics
// endpoint, and a router with --ui-metrics-url scrapes it while claims are made.
func TestDashboardPictures(t *testing.T) {
	e := clientenv.Setup(t, env)
	env.Grant(t, e.NS, "dev", "dev-dashboard", readRule(extv1beta1.GroupVersion.Group, "sandboxwarmpools"))
	metrics := httptest.NewServer(promhttp.HandlerFor(crmetrics.Registry, promhttp.HandlerOpts{}))
	t.Cleanup(metrics.Close)
	// This router serves only the dashboard's lists and pictures, which need no agent token:
	// a key of its own will do.
	key := make([]byte, 48)
	_, _ = rand.Read(key)
	_, routerURL := env.StartRouter(t, e.NS, key, func(c *router.Config) { c.UIMetricsURL = metrics.URL })
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

	b := newBrowser(t)
	page := b.tab(t)
	run(t, page, "opening the login page", chromedp.Navigate(routerURL+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	login(t, page, e.DevToken)
	// A point of claim latency and a point of the pool's ready members, drawn as SVG.
	run(t, page, "waiting for the pictures", chromedp.WaitVisible(chromedp.CSS(".pictures figure:nth-of-type(2) svg")),
		chromedp.WaitVisible(chromedp.CSS(".pictures figure:first-of-type svg circle, .pictures figure:first-of-type svg path")))
	// Let the page poll a few times, so the pool's line has points.
	run(t, page, "watching the pool", chromedp.Sleep(7*time.Second))
	b.screenshot(t, page, "pictures")
}
