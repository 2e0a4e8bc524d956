package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NewNamespace creates a namespace for one test, named after it with a random suffix, and deletes
// it when the test ends. There is no namespace controller in the test environment, so the deleted
// namespace stays Terminating with its objects in it; tests only ever look inside their own.
func (e *Env) NewNamespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(t.Name())}}
	ctx, cancel := e.ctx()
	defer cancel()
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatalf("Creating a namespace for %s: %v", t.Name(), err)
	}
	t.Cleanup(func() {
		ctx, cancel := e.ctx()
		defer cancel()
		if err := e.Client.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("Deleting namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}
