// Package dashboard tests kubox-router's web dashboard (/ui/) in a real headless browser,
// Debian's Chromium driven over the DevTools protocol (chromedp), against the real router,
// API server, controllers and agents that test/integration/clientenv brings up. `make
// chromium-deps` installs Chromium; without it the tests fail and say so.
//
// With KUBOX_SCREENSHOTS=<dir> the tests write a PNG of each page there (docs/images keeps
// them as dashboard-*.png).
package dashboard

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env, framework.WithAgents()) }
