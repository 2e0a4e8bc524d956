package framework

import (
	"context"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// followWatch hands every event of w whose object is a T to handle, until the watch ends, ctx
// ends or stop (may be nil) receives. An Error event (the watch's resource version expired)
// carries no T: the server ends the watch after it, and the caller's next pass lists again.
func followWatch[T client.Object](ctx context.Context, w watch.Interface, stop <-chan struct{}, handle func(watch.EventType, T)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case ev, open := <-w.ResultChan():
			if !open {
				return
			}
			if obj, ok := ev.Object.(T); ok {
				handle(ev.Type, obj)
			}
		}
	}
}
