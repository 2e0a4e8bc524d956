// Package nodekey gives kubox-node the key it signs snapshot manifests with (checkpoint.Key) and
// writes it where kubox's patched gVisor shim reads it (its option kubox_manifest_key).
//
// Every node that shares a snapshot store must sign and check with one key, so the key lives in a
// Secret of kubox-node's namespace that kubox-node creates when it is absent: the first node to
// start creates it with a random key, and one that loses that race reads the winner's. Each node
// then writes the key to a file on the host that only root may read, outside every folder a Pod
// mounts and outside the snapshot root and store: the shim, a host process, reads it there.
// Without a Secret (one node, `kubox dev up` in process mode), the key already in the file is
// kept, or a random one written.
package nodekey

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubox-dev/kubox/internal/node/checkpoint"
)

// SecretKey is the key of the Secret's data that holds the manifest key (hex).
const SecretKey = "key"

// FromSecret returns the key of the Secret name, creating it with a random key when it is absent,
// and writes it to file for the shim.
func FromSecret(ctx context.Context, secrets corev1client.SecretInterface, name, file string) (checkpoint.Key, error) {
	key, err := secretKey(ctx, secrets, name)
	if apierrors.IsNotFound(err) {
		key, err = createSecret(ctx, secrets, name)
	}
	if err != nil {
		return nil, err
	}
	if err := checkpoint.WriteKeyFile(file, key); err != nil {
		return nil, fmt.Errorf("writing the manifest key for the gVisor shim to %s: %w", file, err)
	}
	return key, nil
}

func secretKey(ctx context.Context, secrets corev1client.SecretInterface, name string) (checkpoint.Key, error) {
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	key, err := checkpoint.ParseKey(s.Data[SecretKey])
	if err != nil {
		return nil, fmt.Errorf("the Secret %s/%s, key %q: %w: delete the Secret and restart kubox-node to make a new one "+
			"(snapshots signed with the old key are then refused)", s.Namespace, name, SecretKey, err)
	}
	return key, nil
}

// createSecret creates the Secret name with a random key; when another node created it first,
// the other node's key is the one.
func createSecret(ctx context.Context, secrets corev1client.SecretInterface, name string) (checkpoint.Key, error) {
	key, err := checkpoint.NewKey()
	if err != nil {
		return nil, err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/name": "kubox-node", "app.kubernetes.io/part-of": "kubox"}},
		Immutable:  ptrTo(true),
		Data:       map[string][]byte{SecretKey: key.Encode()},
	}
	_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return secretKey(ctx, secrets, name)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the Secret %s of the manifest key: %w", name, err)
	}
	return key, nil
}

// FromFile returns the key in file, writing a random one there first when there is none: for a
// single node, whose snapshots no other node reads.
func FromFile(file string) (checkpoint.Key, error) {
	key, err := checkpoint.ReadKeyFile(file)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if key, err = checkpoint.NewKey(); err != nil {
		return nil, err
	}
	return key, checkpoint.WriteKeyFile(file, key)
}

func ptrTo[T any](v T) *T { return &v }
