package checkpoint

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/atomicfile"
)

// SignatureFile is the signature of a checkpoint directory's manifest, beside it: kubox-node's
// HMAC-SHA256 (Key.Sign) of the manifest, bound to the snapshot's namespace and name. kubox's
// patched gVisor shim restores a Pod only from a snapshot whose signature matches, and kubox-node
// uses a snapshot from the snapshot store only when it does (docs/security.md, "Node and
// snapshots"): the manifest lists every file of the snapshot with its SHA-256, so the signature
// authenticates the whole snapshot.
const SignatureFile = ManifestFile + ".sig"

// keySize is the size of a new key; a key of a file is at least this long.
const keySize = 32

// ErrUnsigned marks a checkpoint directory whose manifest has no valid signature.
var ErrUnsigned = errors.New("snapshot not signed by kubox-node")

// Key signs and checks manifests. Every node that shares a snapshot store has the same key
// (kubox-node --manifest-key-secret), and the gVisor shim reads it from the file
// kubox_manifest_key, which only root may read.
type Key []byte

// NewKey returns a new random key.
func NewKey() (Key, error) {
	k := make(Key, keySize)
	_, err := rand.Read(k)
	return k, err
}

// ParseKey reads a key as the key file and the Secret hold it: hex, at least 32 bytes.
func ParseKey(b []byte) (Key, error) {
	k, err := hex.DecodeString(string(bytes.TrimSpace(b)))
	if err != nil || len(k) < keySize {
		return nil, fmt.Errorf("a manifest key is at least %d bytes in hex", keySize)
	}
	return k, nil
}

// Encode is the key as the key file and the Secret hold it.
func (k Key) Encode() []byte { return []byte(hex.EncodeToString(k) + "\n") }

// WriteKeyFile writes k to path atomically, readable by its owner only, in a folder only its
// owner may enter: the file the gVisor shim's kubox_manifest_key names.
func WriteKeyFile(path string, k Key) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, bytes.NewReader(k.Encode()), 0o600)
}

// ReadKeyFile reads the key file path, which must be a regular file (not a link) that only its
// owner may read.
func ReadKeyFile(path string) (Key, error) {
	b, err := readNoFollow(path, 1024)
	if err != nil {
		return nil, fmt.Errorf("manifest key %s: %w", path, err)
	}
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("manifest key %s is readable by others (%v): chmod 600 it", path, st.Mode().Perm())
	}
	k, err := ParseKey(b)
	if err != nil {
		return nil, fmt.Errorf("manifest key %s: %w", path, err)
	}
	return k, nil
}

// signature is the HMAC-SHA256 of a manifest: a version line, the namespace and the name of the
// snapshot, then the manifest's bytes. The gVisor shim computes the same (kuboxSign in
// hack/tools/gvisor/patches/restore-into-pod.patch; both tests check one vector).
func (k Key) signature(namespace, name string, manifest []byte) []byte {
	h := hmac.New(sha256.New, k)
	fmt.Fprintf(h, "%s\n%s\n%s\n", contract.SnapshotManifestDomain, namespace, name)
	h.Write(manifest)
	return h.Sum(nil)
}

// Sign writes the signature of the manifest of dir, the snapshot namespace/name.
func (k Key) Sign(dir, namespace, name string) error {
	if len(k) < keySize {
		return errors.New("kubox-node has no manifest key to sign the snapshot with (--manifest-key-file)")
	}
	b, err := readNoFollow(filepath.Join(dir, ManifestFile), maxManifest)
	if err != nil {
		return err
	}
	sig := hex.EncodeToString(k.signature(namespace, name, b)) + "\n"
	return atomicfile.Write(filepath.Join(dir, SignatureFile), bytes.NewReader([]byte(sig)), 0o644)
}

// CheckSignature checks the signature of the manifest of dir, the snapshot namespace/name, and
// returns the manifest; ErrUnsigned when it is missing or does not match. It reads the manifest
// only: Verify reads the files back against it.
func (k Key) CheckSignature(dir, namespace, name string) (*Manifest, error) {
	if len(k) < keySize {
		return nil, fmt.Errorf("%w: kubox-node has no manifest key to check snapshot %s/%s with", ErrUnsigned, namespace, name)
	}
	b, err := readNoFollow(filepath.Join(dir, ManifestFile), maxManifest)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIncomplete, err)
	}
	sig, err := readNoFollow(filepath.Join(dir, SignatureFile), 1024)
	if err != nil {
		return nil, fmt.Errorf("%w: snapshot %s/%s has no signature (%v): it was not written by a kubox-node with "+
			"this cluster's manifest key; delete it and take it again", ErrUnsigned, namespace, name, err)
	}
	got, err := hex.DecodeString(string(bytes.TrimSpace(sig)))
	if err != nil || !hmac.Equal(got, k.signature(namespace, name, b)) {
		return nil, fmt.Errorf("%w: the signature of snapshot %s/%s does not match its manifest and this cluster's "+
			"manifest key: it was altered, moved from another name, or written with another key; delete it and take it again",
			ErrUnsigned, namespace, name)
	}
	return parseManifest(b)
}

// Verify is CheckSignature, then the package's Verify: the snapshot namespace/name in dir is
// kubox-node's and complete.
func (k Key) Verify(dir, namespace, name string) (*Manifest, error) {
	if _, err := k.CheckSignature(dir, namespace, name); err != nil {
		return nil, err
	}
	return Verify(dir)
}

// maxManifest bounds what is read of a manifest.
const maxManifest = 64 << 20

// readNoFollow reads the regular file path, at most limit bytes, without following a link.
func readNoFollow(path string, limit int64) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, err
}

// signCheckpoint signs the manifest Checkpoint just wrote in dir, <root>/<namespace>/<snapshot>,
// with k (none: unsigned, in tests) and verifies the directory.
func signCheckpoint(dir string, k Key) (*Manifest, error) {
	if k == nil {
		return Verify(dir)
	}
	ns, name := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
	if err := k.Sign(dir, ns, name); err != nil {
		return nil, err
	}
	return k.Verify(dir, ns, name)
}
