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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// TestReconcileWaitsForAnAdoptionToShow checks that a pass whose cache still shows a member the
// previous pass adopted as an orphan (so its adoption now conflicts) creates no replacement: the
// adoption is expected until the cache shows it.
func TestReconcileWaitsForAnAdoptionToShow(t *testing.T) {
	ctx := context.Background()
	pool := makePool(1).Obj()
	tpl := testTemplate()
	obs := observedTemplate(tpl)
	orphan := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "pool-marked", UID: "orphan-uid", Generation: 1, CreationTimestamp: metav1.NewTime(testNow),
		Labels: map[string]string{sandboxv1beta1.WarmPoolSandboxLabel: sandboxv1beta1.NameHash(pool.Name),
			sandboxv1beta1.SandboxTemplateRefHashLabel: sandboxv1beta1.NameHash(tpl.Name), sandboxv1beta1.SandboxTemplateHashLabel: obs.hash}},
		Spec: sandboxv1beta1.SandboxSpec{SandboxBlueprint: obs.blueprint}}
	build := func() *fake.ClientBuilder {
		return fake.NewClientBuilder().WithScheme(testScheme()).
			WithObjects(pool.DeepCopy(), tpl.DeepCopy(), orphan.DeepCopy()).
			WithStatusSubresource(&extv1beta1.SandboxWarmPool{}).
			WithIndex(&sandboxv1beta1.Sandbox{}, indexer.ControllerUIDKey, indexer.ControllerUID).
			WithIndex(&sandboxv1beta1.Sandbox{}, indexer.WarmPoolOrphanKey, indexer.WarmPoolOrphan)
	}
	stale := build().Build() // the cache as it was before the adoption
	var lagging atomic.Bool
	var creates atomic.Int32
	c := build().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			creates.Add(1)
			obj.SetUID(types.UID(fmt.Sprintf("uid-%d", creates.Load())))
			return c.Create(ctx, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*sandboxv1beta1.SandboxList); ok && lagging.Load() {
				return stale.List(ctx, list, opts...)
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
	r := newTestReconciler(c)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pool)}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatalf("First pass: %v", err)
	}
	adopted := &sandboxv1beta1.Sandbox{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(orphan), adopted); err != nil || metav1.GetControllerOf(adopted) == nil {
		t.Fatalf("after the first pass: %v, owner %v; want the orphan adopted", err, adopted.OwnerReferences)
	}
	lagging.Store(true)
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatalf("Second pass: %v", err)
	}
	if n := creates.Load(); n != 0 {
		t.Errorf("%d members created for a pool of 1 that adopted one; want 0: the second pass acted on a cache that missed the adoption", n)
	}
}
