package sandboxclaim

import "github.com/kubox-dev/kubox/internal/testutil"

// The extension kinds' builders are internal/testutil's; these start them the way this
// package's tests use them.

type (
	templateWrapper = testutil.TemplateWrapper
	poolWrapper     = testutil.PoolWrapper
	claimWrapper    = testutil.ClaimWrapper
)

// makeTemplate starts a SandboxTemplate with its NetworkPolicy unmanaged (these tests are about
// claims).
func makeTemplate(name, ns string) *templateWrapper {
	return testutil.MakeTemplate(name, ns).Unmanaged()
}

// makePool starts a SandboxWarmPool of template with replicas members.
func makePool(name, ns, template string, replicas int32) *poolWrapper {
	return testutil.MakePool(name, ns, template).Replicas(replicas)
}

// makeClaim starts a SandboxClaim of warm pool pool.
func makeClaim(name, ns, pool string) *claimWrapper {
	return testutil.MakeClaim(name, ns).WarmPool(pool)
}
