package sandboxwarmpool

import "github.com/kubox-dev/kubox/internal/testutil"

// The extension kinds' builders are internal/testutil's; these start them the way this
// package's tests use them.

type (
	templateWrapper = testutil.TemplateWrapper
	poolWrapper     = testutil.PoolWrapper
)

// makeTemplate starts a SandboxTemplate with its NetworkPolicy left unmanaged (these tests are
// about pools).
func makeTemplate(name, ns string) *templateWrapper {
	return testutil.MakeTemplate(name, ns).Unmanaged()
}

// makePool starts a SandboxWarmPool of template.
func makePool(name, ns, template string) *poolWrapper { return testutil.MakePool(name, ns, template) }
