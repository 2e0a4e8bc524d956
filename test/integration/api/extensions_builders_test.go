package api

import "github.com/kubox-dev/kubox/internal/testutil"

// The extension kinds' builders are internal/testutil's; these start them the way this
// package's tests use them.

type (
	templateWrapper = testutil.TemplateWrapper
	poolWrapper     = testutil.PoolWrapper
	claimWrapper    = testutil.ClaimWrapper
)

// makeTemplate starts a SandboxTemplate whose blueprint is testutil.MakeSandbox's.
func makeTemplate(name, ns string) *templateWrapper { return testutil.MakeTemplate(name, ns) }

// makePool starts a SandboxWarmPool of template.
func makePool(name, ns, template string) *poolWrapper { return testutil.MakePool(name, ns, template) }

// makeClaim starts a SandboxClaim of warm pool "pool".
func makeClaim(name, ns string) *claimWrapper { return testutil.MakeClaim(name, ns).WarmPool("pool") }
