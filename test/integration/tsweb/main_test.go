// Package tsweb tests @kubox/sdk/web, the TypeScript SDK's claim-token mode on fetch, in a real
// browser: it bundles sdk/typescript/dist/web.js with esbuild for the browser (which fails if
// any module it imports is a node:* one), serves it with a test page from an origin of its own,
// and runs the page in Debian's Chromium (chromedp) against the real router, API server,
// controllers and agents of test/integration/clientenv. `make test-ts` installs the SDK's npm
// dependencies and builds dist/; `make chromium-deps` installs Chromium.
package tsweb

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env, framework.WithAgents()) }
