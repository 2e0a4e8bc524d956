package sandbox

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubox-dev/kubox/internal/controller/inflight"
	"github.com/kubox-dev/kubox/internal/testutil"
)

// TestCreatePodMeetsATakenName: the Pod name a Sandbox gives its Pod is taken, as when a Sandbox
// is deleted and created again under its name (a claim created again does it) before the garbage
// collector deleted the earlier one's Pod. Each case is what the Sandbox then reads under that
// name; none of those Pods is ever written.
func TestCreatePodMeetsATakenName(t *testing.T) {
	sandboxRef := func(name string, uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{*metav1.NewControllerRef(&metav1.ObjectMeta{Name: name, UID: uid}, testutil.SandboxKind)}
	}
	cases := map[string]struct {
		// existing is the Pod read under the name after the create failed; nil: none (it was
		// deleted between the two calls).
		existing    []metav1.OwnerReference
		none        bool
		wantErr     string
		wantRequeue bool
	}{
		"deleted between the create and the read": {none: true, wantRequeue: true},
		"the Pod of an earlier Sandbox of this name": {existing: sandboxRef(testName, "earlier-uid"),
			wantErr: "belongs to an earlier Sandbox " + testName + " (uid earlier-uid)"},
		"the Pod of another Sandbox": {existing: sandboxRef("other", "other-uid"),
			wantErr: "is controlled by Sandbox other, not by this Sandbox"},
		"a Pod of another kind's object of this name": {existing: []metav1.OwnerReference{*metav1.NewControllerRef(
			&metav1.ObjectMeta{Name: testName, UID: "earlier-uid"}, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Sandbox"})},
			wantErr: "is controlled by Sandbox " + testName + ", not by this Sandbox"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			sb := withMeta(testSandbox().Obj())
			taken := fake.NewClientBuilder().WithScheme(testScheme(t)).WithInterceptorFuncs(interceptor.Funcs{
				Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
					return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, testName)
				},
			}).Build()
			reader := fake.NewClientBuilder().WithScheme(testScheme(t))
			if !tc.none {
				pod := testPod().Obj()
				pod.OwnerReferences = tc.existing
				reader = reader.WithObjects(pod)
			}
			r := &Reconciler{client: taken, apiReader: reader.Build(), scheme: taken.Scheme(), pods: inflight.NewVersions(clock.RealClock{})}
			obs := &observed{}
			err := r.createPod(ctx, sb, obs)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("createPod() = %v; want no error", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("createPod() = %v; want an error containing %q", err, tc.wantErr)
			}
			if got := obs.requeueAfter > 0; got != tc.wantRequeue {
				t.Errorf("requeueAfter = %v; want a retry: %t", obs.requeueAfter, tc.wantRequeue)
			}
			if obs.pod != nil {
				t.Errorf("observed Pod %s; want none: the Sandbox controls no Pod", obs.pod.Name)
			}
		})
	}
}
