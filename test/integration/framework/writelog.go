package framework

import (
	"context"
	"fmt"
	"sync"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// WriteLog records the API writes a manager's client makes, as "VERB Kind/name[/subresource] by
// fieldManager": the tests that hold the controllers to a write budget count them. It is safe for
// concurrent use.
type WriteLog struct {
	scheme *k8sruntime.Scheme
	mu     sync.Mutex
	writes []string
}

// NewWriteLog returns an empty WriteLog naming kinds by the environment's scheme.
func (e *Env) NewWriteLog() *WriteLog { return &WriteLog{scheme: e.Scheme} }

// Counting is the ManagerOption that wraps the manager's client so every write lands in l.
func (l *WriteLog) Counting() ManagerOption {
	return func(o *ctrl.Options) { o.NewClient = l.newClient }
}

// Take returns the writes recorded since the last Take.
func (l *WriteLog) Take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.writes
	l.writes = nil
	return w
}

func (l *WriteLog) add(verb string, obj client.Object, sub, fieldManager string) {
	kind := fmt.Sprintf("%T", obj)
	if gvk, err := apiutil.GVKForObject(obj, l.scheme); err == nil {
		kind = gvk.Kind
	}
	w := fmt.Sprintf("%s %s/%s", verb, kind, obj.GetName())
	if sub != "" {
		w += "/" + sub
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes = append(l.writes, w+" by "+fieldManager)
}

func (l *WriteLog) newClient(config *rest.Config, options client.Options) (client.Client, error) {
	c, err := client.NewWithWatch(config, options)
	if err != nil {
		return nil, err
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			l.add("CREATE", obj, "", (&client.CreateOptions{}).ApplyOptions(opts).FieldManager)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			l.add("UPDATE", obj, "", (&client.UpdateOptions{}).ApplyOptions(opts).FieldManager)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			l.add("PATCH", obj, "", (&client.PatchOptions{}).ApplyOptions(opts).FieldManager)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			l.add("DELETE", obj, "", "")
			return c.Delete(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			l.add("UPDATE", obj, sub, (&client.SubResourceUpdateOptions{}).ApplyOptions(opts).FieldManager)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			l.add("PATCH", obj, sub, (&client.SubResourcePatchOptions{}).ApplyOptions(opts).FieldManager)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}), nil
}
