// Package store keeps verified snapshot folders (package checkpoint) off the node that took them,
// so that a restore can run on another node, or on the same node after it lost its disk:
// kubox-node puts each snapshot it takes into the store and fetches from it the snapshots a
// restore needs that its node does not have (docs/checkpoint.md, "Where snapshots live").
package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubox-dev/kubox/internal/node/checkpoint"
)

// ErrNotFound is what Get returns for a snapshot the store does not hold (complete).
var ErrNotFound = errors.New("not in the snapshot store")

// ErrBadName is what every call of a Store returns for a namespace or snapshot name that is not a
// DNS label: a name with a separator or a dot could lead out of the snapshot's folder or prefix.
var ErrBadName = errors.New("not a DNS label (lowercase letters, digits and '-'), so not a snapshot name")

// checkName refuses namespace/name unless both are DNS labels, before either is made into a path
// or an object key: the names come from a caller (kubox-node, which checks them too), and the
// store does not rely on it.
func checkName(namespace, name string) error {
	for _, n := range []string{namespace, name} {
		if validation.IsDNS1123Label(n) != nil {
			return fmt.Errorf("snapshot %q: %q is %w", namespace+"/"+name, n, ErrBadName)
		}
	}
	return nil
}

// Store holds snapshot folders by namespace and name. Implementations copy a folder's manifest
// last and make it visible whole, so a snapshot the store shows is complete.
type Store interface {
	// Put copies the verified snapshot folder dir into the store as namespace/name; a snapshot
	// the store already holds under that name is left as it is. The copy must carry kubox-node's
	// signature for namespace/name (checkpoint.Key).
	Put(ctx context.Context, namespace, name, dir string) error
	// Get copies namespace/name into dir, which must not exist, and verifies it against its
	// manifest and the manifest's signature for namespace/name (checkpoint.ErrUnsigned when it
	// has none that matches); ErrNotFound when the store does not hold it.
	Get(ctx context.Context, namespace, name, dir string) error
	// Delete removes namespace/name; removing one that is not there succeeds.
	Delete(ctx context.Context, namespace, name string) error
	// Has reports whether the store holds namespace/name (complete).
	Has(ctx context.Context, namespace, name string) (bool, error)
}

// Store kinds, as Describe reports them (the API's SnapshotStoreKind).
const (
	KindS3         = "S3"
	KindFilesystem = "Filesystem"
)

// Locator is a Store that says where it keeps a snapshot: its kind and the snapshot's location,
// without credentials, for status.store of a SandboxSnapshot.
type Locator interface {
	Location(namespace, name string) (kind, location string)
}

// Describe is st's kind and the location of namespace/name in it; empty when st does not say
// (a Store that is not a Locator) or the name is not a DNS label.
func Describe(st Store, namespace, name string) (kind, location string) {
	l, ok := st.(Locator)
	if !ok || checkName(namespace, name) != nil {
		return "", ""
	}
	return l.Location(namespace, name)
}

// Dir is a Store on a filesystem every node mounts at Root: a ReadWriteMany PersistentVolume
// (NFS, CephFS, a cloud file share) mounted into each kubox-node, or, on one node, a folder of
// another disk.
type Dir struct {
	Root string
	// Key checks the signature of every snapshot Put stores and Get fetches
	// (checkpoint.Key.Verify): the nodes that share the store share the key, and a snapshot
	// someone else wrote there is refused.
	Key checkpoint.Key
}

var _ Store = Dir{}

// path is the folder of namespace/name below Root; ErrBadName when either is not a DNS label.
func (d Dir) path(namespace, name string) (string, error) {
	if err := checkName(namespace, name); err != nil {
		return "", err
	}
	return filepath.Join(d.Root, namespace, name), nil
}

// Location implements Locator: the snapshot's folder.
func (d Dir) Location(namespace, name string) (kind, location string) {
	return KindFilesystem, filepath.Join(d.Root, namespace, name)
}

// Put implements Store: the folder is copied beside its final name, manifest last, read back
// against the manifest, then renamed.
func (d Dir) Put(ctx context.Context, namespace, name, dir string) error {
	dst, err := d.path(namespace, name)
	if err != nil {
		return err
	}
	if has, err := d.Has(ctx, namespace, name); err != nil || has {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	return copyIn(ctx, dir, dst, d.verify(namespace, name))
}

// verify checks a copied folder of the snapshot namespace/name: its manifest signed with the
// store's key for that name (checkpoint.ErrUnsigned otherwise), its files read back against it.
func (d Dir) verify(namespace, name string) func(dir string) error {
	return func(dir string) error {
		_, err := d.Key.Verify(dir, namespace, name)
		return err
	}
}

// Get implements Store: the folder is copied beside dir, verified, then renamed to dir.
func (d Dir) Get(ctx context.Context, namespace, name, dir string) error {
	switch has, err := d.Has(ctx, namespace, name); {
	case err != nil:
		return err
	case !has:
		return fmt.Errorf("snapshot %s/%s: %w", namespace, name, ErrNotFound)
	}
	src, err := d.path(namespace, name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	return copyIn(ctx, src, dir, d.verify(namespace, name))
}

// Delete implements Store.
func (d Dir) Delete(_ context.Context, namespace, name string) error {
	p, err := d.path(namespace, name)
	if err != nil {
		return err
	}
	return os.RemoveAll(p)
}

// Has implements Store.
func (d Dir) Has(_ context.Context, namespace, name string) (bool, error) {
	p, err := d.path(namespace, name)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(filepath.Join(p, checkpoint.ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// copyIn copies the snapshot folder src to a temporary folder beside dst, the manifest last,
// runs check on it and renames it to dst; on any failure nothing is left at dst or beside it.
func copyIn(ctx context.Context, src, dst string, check func(tmp string) error) error {
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	tmp := dst + ".partial-" + hex.EncodeToString(suffix)
	err := copyTree(ctx, src, tmp)
	if err == nil {
		err = copyFile(filepath.Join(src, checkpoint.ManifestFile), filepath.Join(tmp, checkpoint.ManifestFile), 0o644)
	}
	if err == nil {
		err = check(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
	}
	return err
}

// copyTree copies the folders, regular files and symbolic links below src, except its manifest,
// to dst, with their permissions (a script the sandbox had in an emptyDir stays executable). A
// link is copied as the link it is, never followed: it is the sandbox's (checkpoint.File).
func copyTree(ctx context.Context, src, dst string) error {
	return filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		info, err := e.Info()
		switch {
		case err != nil:
			return err
		case e.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), info.Mode().Perm()|0o700)
		case rel == checkpoint.ManifestFile:
			return nil
		case e.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, filepath.Join(dst, rel))
		case !e.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file or a link: a snapshot folder holds files only", rel)
		}
		return copyFile(path, filepath.Join(dst, rel), info.Mode().Perm())
	})
}

// copyFile copies the regular file src to dst with the permissions mode, synced to disk.
func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
