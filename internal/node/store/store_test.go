package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubox-dev/kubox/internal/node/checkpoint"
)

// testKey is the manifest key of the tests' nodes.
var testKey = checkpoint.Key("0123456789abcdef0123456789abcdef")

// snapshotDir writes a complete full snapshot folder team-a/snap below t's temporary folder,
// signed with testKey.
func snapshotDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "team-a", "snap")
	for path, data := range map[string]string{
		"image/checkpoint.img": "memory of the sandbox",
		"specs/0.json":         `{"ociVersion":"1.0.2"}`,
		"files/1/0/token":      "secret",
	} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, path), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// An emptyDir's copy keeps the sandbox's links as links, and its scripts executable.
	if err := os.WriteFile(filepath.Join(dir, "files/1/0/run.sh"), []byte("#!/bin/sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/shadow", filepath.Join(dir, "files/1/0/link")); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.WriteManifest(dir, &checkpoint.Manifest{Version: 1, Kind: checkpoint.Full}); err != nil {
		t.Fatal(err)
	}
	if err := testKey.Sign(dir, "team-a", "snap"); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDirStoresAVerifiedFolder: Dir's copy is a folder beside the others that verifies against
// its manifest. Put, Has, Get and Delete themselves are TestStoreContract's, for Dir and S3.
func TestDirStoresAVerifiedFolder(t *testing.T) {
	src := snapshotDir(t)
	s := Dir{Root: filepath.Join(t.TempDir(), "store"), Key: testKey}
	if err := s.Put(t.Context(), "team-a", "snap", src); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Verify(filepath.Join(s.Root, "team-a", "snap")); err != nil {
		t.Errorf("the stored copy: %v", err)
	}
}

// TestDirGetRefusesADamagedCopy: a stored copy that no longer matches its manifest is not fetched,
// and nothing is left where the restore would look.
func TestDirGetRefusesADamagedCopy(t *testing.T) {
	s := Dir{Root: t.TempDir(), Key: testKey}
	if err := s.Put(t.Context(), "team-a", "snap", snapshotDir(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Root, "team-a", "snap", "image", "checkpoint.img"), []byte("bit rot"), 0o600); err != nil {
		t.Fatal(err)
	}
	node := t.TempDir()
	dst := filepath.Join(node, "snap")
	if err := s.Get(t.Context(), "team-a", "snap", dst); !errors.Is(err, checkpoint.ErrIncomplete) {
		t.Fatalf("Get of a damaged copy: %v, want ErrIncomplete", err)
	}
	if left, _ := os.ReadDir(node); len(left) != 0 {
		t.Errorf("after a refused Get the node's folder holds %v, want nothing", left)
	}
}

// TestDirPutWithoutAManifestStoresNothing: an incomplete folder (no manifest: the checkpoint did
// not finish) fails and leaves no snapshot in the store.
func TestDirPutWithoutAManifestStoresNothing(t *testing.T) {
	src := snapshotDir(t)
	if err := os.Remove(filepath.Join(src, checkpoint.ManifestFile)); err != nil {
		t.Fatal(err)
	}
	s := Dir{Root: t.TempDir(), Key: testKey}
	if err := s.Put(t.Context(), "team-a", "snap", src); err == nil {
		t.Fatal("Put of a folder without a manifest succeeded")
	}
	if left, _ := os.ReadDir(filepath.Join(s.Root, "team-a")); len(left) != 0 {
		t.Errorf("the store holds %v after a failed Put, want nothing", left)
	}
}

// TestDirGetRefusesAnUnsignedSnapshot: a snapshot someone planted in the shared store (a node, or
// anyone who can write the volume, without this cluster's manifest key) is not fetched, and
// nothing is left where the restore would look.
func TestDirGetRefusesAnUnsignedSnapshot(t *testing.T) {
	for name, plant := range map[string]func(t *testing.T, s Dir){
		"written without a signature": func(t *testing.T, s Dir) {
			src := snapshotDir(t)
			must(t, os.Remove(filepath.Join(src, checkpoint.SignatureFile)))
			must(t, os.MkdirAll(filepath.Join(s.Root, "team-a"), 0o700))
			must(t, os.Rename(src, filepath.Join(s.Root, "team-a", "snap")))
		},
		"files and manifest replaced": func(t *testing.T, s Dir) {
			must(t, s.Put(t.Context(), "team-a", "snap", snapshotDir(t)))
			dir := filepath.Join(s.Root, "team-a", "snap")
			must(t, os.WriteFile(filepath.Join(dir, "image", "checkpoint.img"), []byte("planted memory"), 0o600))
			must(t, checkpoint.WriteManifest(dir, &checkpoint.Manifest{Version: 1, Kind: checkpoint.Full}))
		},
		"another namespace's snapshot copied in": func(t *testing.T, s Dir) {
			must(t, s.Put(t.Context(), "team-a", "snap", snapshotDir(t)))
			must(t, os.MkdirAll(filepath.Join(s.Root, "team-b"), 0o700))
			must(t, os.Rename(filepath.Join(s.Root, "team-a", "snap"), filepath.Join(s.Root, "team-b", "snap")))
		},
		"signed with another key": func(t *testing.T, s Dir) {
			src := snapshotDir(t)
			must(t, checkpoint.Key("another key of thirty-two bytes!").Sign(src, "team-a", "snap"))
			must(t, os.MkdirAll(filepath.Join(s.Root, "team-a"), 0o700))
			must(t, os.Rename(src, filepath.Join(s.Root, "team-a", "snap")))
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := Dir{Root: t.TempDir(), Key: testKey}
			plant(t, s)
			ns := "team-a"
			if _, err := os.Stat(filepath.Join(s.Root, "team-b")); err == nil {
				ns = "team-b"
			}
			node := t.TempDir()
			if err := s.Get(t.Context(), ns, "snap", filepath.Join(node, "snap")); !errors.Is(err, checkpoint.ErrUnsigned) {
				t.Errorf("Get of a snapshot kubox-node did not sign: %v, want ErrUnsigned", err)
			}
			if left, _ := os.ReadDir(node); len(left) != 0 {
				t.Errorf("after a refused Get the node's folder holds %v, want nothing", left)
			}
		})
	}
}

// TestDirPutRefusesAnUnsignedSnapshot: Put stores only what this node signed.
func TestDirPutRefusesAnUnsignedSnapshot(t *testing.T) {
	src := snapshotDir(t)
	must(t, os.Remove(filepath.Join(src, checkpoint.SignatureFile)))
	s := Dir{Root: t.TempDir(), Key: testKey}
	if err := s.Put(t.Context(), "team-a", "snap", src); !errors.Is(err, checkpoint.ErrUnsigned) {
		t.Fatalf("Put of an unsigned snapshot: %v, want ErrUnsigned", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
