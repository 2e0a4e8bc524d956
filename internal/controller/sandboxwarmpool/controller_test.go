package sandboxwarmpool

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"k8s.io/apimachinery/pkg/types"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/indexer"
)

// TestReconcileReadsExpectationsBeforeTheCache checks that a pass whose cache read misses a
// member an earlier pass created does not create it again when the informer delivers that member
// right after the read: the expectations said "not observed yet" when the pass began.
func TestReconcileReadsExpectationsBeforeTheCache(t *testing.T) {
	ctx := context.Background()
	pool := makePool(1).Obj()
	var r *Reconciler
	var lagging atomic.Bool
	var uids atomic.Int32
	c := fake.NewClientBuilder().WithScheme(testScheme()).
		WithObjects(pool, testTemplate()).
		WithStatusSubresource(&extv1beta1.SandboxWarmPool{}).
		WithIndex(&sandboxv1beta1.Sandbox{}, indexer.ControllerUIDKey, indexer.ControllerUID).
		WithIndex(&sandboxv1beta1.Sandbox{}, indexer.WarmPoolOrphanKey, indexer.WarmPoolOrphan).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				obj.SetUID(types.UID(fmt.Sprintf("uid-%d", uids.Add(1)))) // the fake client sets none
				return c.Create(ctx, obj, opts...)
			},
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				sbs, ok := list.(*sandboxv1beta1.SandboxList)
				if !ok || !lagging.Load() {
					return c.List(ctx, list, opts...)
				}
				// The cache has not shown the member yet; its event reaches the handler just
				// after this read.
				sbs.Items = nil
				r.expectations.CreationObserved(poolKey(pool), "uid-1")
				return nil
			},
		}).Build()
	r = newTestReconciler(c)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pool)}

	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatalf("First pass: %v", err)
	}
	lagging.Store(true)
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatalf("Second pass: %v", err)
	}
	if n := uids.Load(); n != 1 {
		t.Errorf("%d members created for a pool of 1; want 1: the second pass acted on a cache that missed the first one's member", n)
	}
}
