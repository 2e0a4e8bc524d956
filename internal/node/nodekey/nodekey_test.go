package nodekey

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubox-dev/kubox/internal/node/checkpoint"
)

func TestFromSecret(t *testing.T) {
	winner, err := checkpoint.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		existing *corev1.Secret
		// race makes the first Create fail as if another node had created the Secret with winner.
		race    bool
		want    checkpoint.Key
		wantErr bool
	}{
		"absent: created":               {},
		"present: used":                 {existing: secret(winner.Encode()), want: winner},
		"created by another node first": {race: true, want: winner},
		"present but not a key":         {existing: secret([]byte("short")), wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.existing != nil {
				objs = append(objs, tc.existing)
			}
			c := fake.NewClientset(objs...)
			if tc.race {
				c.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
					_ = c.Tracker().Add(secret(winner.Encode()))
					return false, nil, nil // the tracker now answers AlreadyExists
				})
			}
			file := filepath.Join(t.TempDir(), "kubox", "manifest.key")
			got, err := FromSecret(context.Background(), c.CoreV1().Secrets("kubox-node"), "kubox-node-manifest-key", file)
			if (err != nil) != tc.wantErr {
				t.Fatalf("FromSecret: %v; want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("key (-want +got):\n%s", diff)
				}
			}
			s, err := c.CoreV1().Secrets("kubox-node").Get(context.Background(), "kubox-node-manifest-key", metav1.GetOptions{})
			if err != nil || string(s.Data[SecretKey]) != string(got.Encode()) {
				t.Errorf("the Secret: %v, %v; want it to hold the key returned", s, err)
			}
			onHost, err := checkpoint.ReadKeyFile(file)
			if err != nil || !cmp.Equal(onHost, got) {
				t.Errorf("the shim's key file: %v, %v; want the key, readable by root only", onHost, err)
			}
		})
	}
}

func TestFromFileKeepsItsKey(t *testing.T) {
	file := filepath.Join(t.TempDir(), "manifest.key")
	first, err := FromFile(file)
	if err != nil {
		t.Fatal(err)
	}
	again, err := FromFile(file)
	if err != nil || !cmp.Equal(first, again) {
		t.Errorf("second FromFile: %v, %v; want the key written first", again, err)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, %v; want mode 0600", st, err)
	}
}

func secret(key []byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubox-node-manifest-key", Namespace: "kubox-node"},
		Data: map[string][]byte{SecretKey: key}}
}
