package framework

import (
	"testing"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/internal/controller/indexer"
	"github.com/kubox-dev/kubox/internal/controller/manager"
)

// StartKubox starts every kubox reconciler watching ns, which already exists, set up as
// kubox-controller sets them up: the field indexes, the production caches (label-scoped and
// trimmed) and the default configuration, changed by configure when it is not nil. The
// reconcilers stop when t ends.
func (e *Env) StartKubox(t *testing.T, ns string, configure func(*configv1alpha1.ControllerConfiguration), opts ...ManagerOption) {
	t.Helper()
	e.StartManager(t, ns, kuboxSetup(t, configure), append([]ManagerOption{productionCaches}, opts...)...)
}

// kuboxSetup registers the field indexes and every kubox reconciler, with the default
// configuration changed by configure when it is not nil.
func kuboxSetup(t *testing.T, configure func(*configv1alpha1.ControllerConfiguration)) func(ctrl.Manager) error {
	return func(mgr ctrl.Manager) error {
		if err := indexer.Setup(t.Context(), mgr.GetFieldIndexer()); err != nil {
			return err
		}
		cfg := &configv1alpha1.ControllerConfiguration{}
		configv1alpha1.SetDefaults(cfg)
		if configure != nil {
			configure(cfg)
		}
		return manager.SetupReconcilers(mgr, cfg, controller.Options{SkipNameValidation: ptr.To(true)})
	}
}

// productionCaches gives a manager kubox-controller's cache options, kept to the test's namespace.
func productionCaches(o *ctrl.Options) {
	c := manager.CacheOptions()
	c.DefaultNamespaces = o.Cache.DefaultNamespaces
	o.Cache = c
}
