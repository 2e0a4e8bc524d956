package devenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestKuboxModeOf(t *testing.T) {
	cases := map[string]struct {
		flag, marker bool
		want         kuboxMode
	}{
		"default: host processes":            {want: processMode{}},
		"up --in-cluster":                    {flag: true, want: inClusterMode{}},
		"status or down of an in-cluster up": {marker: true, want: inClusterMode{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := NewLayout(t.TempDir())
			if tc.marker {
				if err := os.WriteFile(l.InClusterMarker(), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := kuboxModeOf(Config{InCluster: tc.flag}, l); got != tc.want {
				t.Errorf("mode %T, want %T", got, tc.want)
			}
		})
	}
}

func TestRolledOut(t *testing.T) {
	cases := map[string]struct {
		status appsv1.DeploymentStatus
		want   bool
	}{
		"every replica updated and available": {status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}, want: true},
		"the new spec not yet observed":       {status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}},
		"an old replica still running":        {status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 2, AvailableReplicas: 2}},
		"one replica not available":           {status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2},
				Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}, Status: tc.status}
			if got := RolledOut(d); got != tc.want {
				t.Errorf("RolledOut = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEnsureKeySecret(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	keyFile := filepath.Join(t.TempDir(), "key")
	secretKey := func() string {
		t.Helper()
		s, err := cs.CoreV1().Secrets(KuboxNamespace).Get(ctx, AgentTokenKeySecret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(s.Data["key"])
	}
	for _, key := range []string{"first-key", "first-key", "second-key"} {
		if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := ensureFileSecret(ctx, cs, KuboxNamespace, AgentTokenKeySecret, "key", keyFile); err != nil {
			t.Fatalf("with key %s: %v", key, err)
		}
		if got := secretKey(); got != key {
			t.Errorf("the Secret holds %q, want the key file's %q", got, key)
		}
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, KuboxNamespace, metav1.GetOptions{}); err != nil {
		t.Errorf("namespace %s: %v", KuboxNamespace, err)
	}
}
