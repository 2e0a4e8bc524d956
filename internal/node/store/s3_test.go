package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/minio/minio-go/v7"

	"github.com/kubox-dev/kubox/internal/node/checkpoint"
	"github.com/kubox-dev/kubox/internal/objstore"
	"github.com/kubox-dev/kubox/internal/testutil/s3server"
)

// newS3 starts SeaweedFS (package s3server) and returns a store on it, configured as kubox-node
// configures it: credentials from files.
func newS3(t *testing.T) (*S3, *s3server.Server) {
	t.Helper()
	srv := s3server.Start(t)
	s, err := NewS3(objstore.Config{Endpoint: srv.Endpoint, Bucket: srv.Bucket, Prefix: "cluster-a", Insecure: true,
		AccessKeyIDFile: srv.AccessKeyIDFile, SecretAccessKeyFile: srv.SecretAccessKeyFile}, testKey)
	if err != nil {
		t.Fatal(err)
	}
	return s, srv
}

// signedDir writes a full snapshot folder namespace/name holding files, signed with key.
func signedDir(t *testing.T, key checkpoint.Key, namespace, name string, files map[string][]byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), namespace, name)
	for path, data := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, path), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := checkpoint.WriteManifest(dir, &checkpoint.Manifest{Version: 1, Kind: checkpoint.Full}); err != nil {
		t.Fatal(err)
	}
	if err := key.Sign(dir, namespace, name); err != nil {
		t.Fatal(err)
	}
	return dir
}

func random(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStoreContract runs the Store contract (Put, Has, Get and Delete) against Dir and S3.
func TestStoreContract(t *testing.T) {
	for name, tc := range map[string]struct{ store func(t *testing.T) Store }{
		"Dir": {store: func(t *testing.T) Store { return Dir{Root: t.TempDir(), Key: testKey} }},
		"S3":  {store: func(t *testing.T) Store { s, _ := newS3(t); return s }},
	} {
		t.Run(name, func(t *testing.T) {
			s := tc.store(t)
			src := snapshotDir(t)
			if has, err := s.Has(t.Context(), "team-a", "snap"); err != nil || has {
				t.Fatalf("Has before Put: %v, %v; want false", has, err)
			}
			for i := range 2 { // a second Put of a stored snapshot (a retried checkpoint) succeeds
				if err := s.Put(t.Context(), "team-a", "snap", src); err != nil {
					t.Fatalf("Put %d: %v", i, err)
				}
			}
			if has, err := s.Has(t.Context(), "team-a", "snap"); err != nil || !has {
				t.Fatalf("Has after Put: %v, %v; want true", has, err)
			}
			dst := filepath.Join(t.TempDir(), "node", "team-a", "snap")
			if err := s.Get(t.Context(), "team-a", "snap", dst); err != nil {
				t.Fatal(err)
			}
			got, err := testKey.Verify(dst, "team-a", "snap")
			if err != nil {
				t.Fatalf("the fetched copy: %v", err)
			}
			if want, _ := checkpoint.Verify(src); got.SHA256 != want.SHA256 {
				t.Errorf("fetched checksum %s, taken %s", got.SHA256, want.SHA256)
			}
			if target, err := os.Readlink(filepath.Join(dst, "files/1/0/link")); err != nil || target != "/etc/shadow" {
				t.Errorf("fetched link: %q, %v; want the link to /etc/shadow, not followed", target, err)
			}
			if st, err := os.Stat(filepath.Join(dst, "files/1/0/run.sh")); err != nil || st.Mode().Perm() != 0o755 {
				t.Errorf("fetched run.sh: %v, %v; want mode 0755", st, err)
			}
			if err := s.Delete(t.Context(), "team-a", "snap"); err != nil {
				t.Fatal(err)
			}
			if err := s.Get(t.Context(), "team-a", "snap", filepath.Join(t.TempDir(), "again")); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get after Delete: %v, want ErrNotFound", err)
			}
			if err := s.Delete(t.Context(), "team-a", "snap"); err != nil {
				t.Errorf("Delete of a deleted snapshot: %v, want success", err)
			}
		})
	}
}

// TestS3SecondSnapshotUploadsOnlyChangedChunks: a second snapshot of the same sandbox with 1 MiB
// changed uploads one chunk, and the parallel download of either is verified and whole.
func TestS3SecondSnapshotUploadsOnlyChangedChunks(t *testing.T) {
	s, _ := newS3(t)
	s.Parallel = 8
	mem := random(t, 5*ChunkSize+12345)
	first := signedDir(t, testKey, "team-a", "snap-1", map[string][]byte{"image/checkpoint.img": mem, "specs/0.json": []byte("{}")})
	if err := s.Put(t.Context(), "team-a", "snap-1", first); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().ChunksUploaded.Load(); got != 7 {
		t.Fatalf("first Put uploaded %d chunks, want 7 (6 of the image, 1 of the spec)", got)
	}
	before := s.Stats().BytesUploaded.Load()
	changed := bytes.Clone(mem)
	copy(changed[2*ChunkSize+100:], random(t, 1<<20))
	second := signedDir(t, testKey, "team-a", "snap-2", map[string][]byte{"image/checkpoint.img": changed, "specs/0.json": []byte("{}")})
	if err := s.Put(t.Context(), "team-a", "snap-2", second); err != nil {
		t.Fatal(err)
	}
	uploaded := s.Stats().BytesUploaded.Load() - before
	t.Logf("second snapshot: %d bytes uploaded of %d", uploaded, len(changed))
	if got := s.Stats().ChunksUploaded.Load(); got != 8 {
		t.Errorf("after the second Put %d chunks were uploaded in all, want 8 (the changed one only)", got)
	}
	if uploaded > ChunkSize+64<<10 {
		t.Errorf("second Put uploaded %d bytes, want at most one chunk and the lists (%d)", uploaded, ChunkSize+64<<10)
	}
	dst := filepath.Join(t.TempDir(), "snap-2")
	if err := s.Get(t.Context(), "team-a", "snap-2", dst); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "image/checkpoint.img")); !bytes.Equal(b, changed) {
		t.Error("the fetched image differs from the one stored")
	}
	// Deleting the first keeps the chunks the second shares, and removes the one it does not.
	if err := s.Delete(t.Context(), "team-a", "snap-1"); err != nil {
		t.Fatal(err)
	}
	if got := countObjects(t, s, "cluster-a/chunks/"); got != 7 {
		t.Errorf("after deleting snap-1 the bucket holds %d chunks, want snap-2's 7", got)
	}
	if err := s.Get(t.Context(), "team-a", "snap-2", filepath.Join(t.TempDir(), "again")); err != nil {
		t.Errorf("Get of snap-2 after deleting snap-1: %v", err)
	}
}

func countObjects(t *testing.T, s *S3, prefix string) int {
	t.Helper()
	n := 0
	for o := range s.Client.ListObjects(t.Context(), s.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		n++
	}
	return n
}

func getObject(t *testing.T, s *S3, key string) []byte {
	t.Helper()
	b, err := s.getBytes(t.Context(), key, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func putObject(t *testing.T, s *S3, key string, b []byte) {
	t.Helper()
	if _, err := s.Client.PutObject(t.Context(), s.Bucket, key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}

func readIndex(t *testing.T, s *S3, namespace, name string) index {
	t.Helper()
	var idx index
	if err := json.Unmarshal(getObject(t, s, s.snapshotObject(namespace, name, indexObject)), &idx); err != nil {
		t.Fatal(err)
	}
	return idx
}

func imageChunk(t *testing.T, idx index) (int, string) {
	t.Helper()
	for i, f := range idx.Files {
		if f.Path == "image/checkpoint.img" {
			return i, f.Chunks[0]
		}
	}
	t.Fatal("no image in the file list")
	return 0, ""
}

// TestS3GetRefusesAForgedSnapshot performs the attacks of someone who can write the bucket but
// has not the cluster's manifest key: each is refused naming the snapshot, and nothing is left
// where the restore would look.
func TestS3GetRefusesAForgedSnapshot(t *testing.T) {
	otherKey := checkpoint.Key("fedcba9876543210fedcba9876543210")
	for name, tc := range map[string]struct {
		attack func(t *testing.T, s *S3) (namespace string)
		want   error
	}{
		"a chunk's bytes flipped": {want: checkpoint.ErrIncomplete, attack: func(t *testing.T, s *S3) string {
			_, sum := imageChunk(t, readIndex(t, s, "team-a", "snap"))
			b := getObject(t, s, s.chunkObject(sum))
			b[0] ^= 1
			putObject(t, s, s.chunkObject(sum), b)
			return "team-a"
		}},
		"the chunk list pointing at another snapshot's chunks": {want: checkpoint.ErrIncomplete, attack: func(t *testing.T, s *S3) string {
			other := signedDir(t, testKey, "team-b", "theirs", map[string][]byte{"image/checkpoint.img": random(t, 3000), "specs/0.json": []byte("{}")})
			if err := s.Put(t.Context(), "team-b", "theirs", other); err != nil {
				t.Fatal(err)
			}
			_, theirs := imageChunk(t, readIndex(t, s, "team-b", "theirs"))
			idx := readIndex(t, s, "team-a", "snap")
			i, _ := imageChunk(t, idx)
			idx.Files[i].Chunks[0] = theirs
			b, _ := json.Marshal(idx)
			putObject(t, s, s.snapshotObject("team-a", "snap", indexObject), b)
			return "team-a"
		}},
		"the chunk list naming a file outside the folder": {want: checkpoint.ErrIncomplete, attack: func(t *testing.T, s *S3) string {
			idx := readIndex(t, s, "team-a", "snap")
			i, _ := imageChunk(t, idx)
			idx.Files[i].Path = "../../escaped"
			b, _ := json.Marshal(idx)
			putObject(t, s, s.snapshotObject("team-a", "snap", indexObject), b)
			return "team-a"
		}},
		"the manifest replaced and re-signed with another key": {want: checkpoint.ErrUnsigned, attack: func(t *testing.T, s *S3) string {
			forged := signedDir(t, otherKey, "team-a", "snap", map[string][]byte{"image/checkpoint.img": random(t, 3000), "specs/0.json": []byte("{}")})
			for _, f := range []string{checkpoint.ManifestFile, checkpoint.SignatureFile} {
				b, _ := os.ReadFile(filepath.Join(forged, f))
				putObject(t, s, s.snapshotObject("team-a", "snap", f), b)
			}
			return "team-a"
		}},
		"the signature removed": {want: checkpoint.ErrUnsigned, attack: func(t *testing.T, s *S3) string {
			if err := s.Client.RemoveObject(t.Context(), s.Bucket, s.snapshotObject("team-a", "snap", checkpoint.SignatureFile), minio.RemoveObjectOptions{}); err != nil {
				t.Fatal(err)
			}
			return "team-a"
		}},
		"the snapshot copied to another namespace": {want: checkpoint.ErrUnsigned, attack: func(t *testing.T, s *S3) string {
			for _, f := range []string{indexObject, checkpoint.SignatureFile, checkpoint.ManifestFile} {
				putObject(t, s, s.snapshotObject("team-b", "snap", f), getObject(t, s, s.snapshotObject("team-a", "snap", f)))
			}
			return "team-b"
		}},
	} {
		t.Run(name, func(t *testing.T) {
			s, _ := newS3(t)
			src := signedDir(t, testKey, "team-a", "snap", map[string][]byte{"image/checkpoint.img": random(t, 3000), "specs/0.json": []byte("{}")})
			if err := s.Put(t.Context(), "team-a", "snap", src); err != nil {
				t.Fatal(err)
			}
			ns := tc.attack(t, s)
			node := t.TempDir()
			err := s.Get(t.Context(), ns, "snap", filepath.Join(node, "snap"))
			if !errors.Is(err, tc.want) {
				t.Fatalf("Get of the forged snapshot: %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), ns+"/snap") {
				t.Errorf("the error %q does not name the snapshot %s/snap", err, ns)
			}
			if left, _ := os.ReadDir(node); len(left) != 0 {
				t.Errorf("after a refused Get the node's folder holds %v, want nothing", left)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(node), "escaped")); err == nil {
				t.Error("the forged list wrote a file outside the snapshot folder")
			}
		})
	}
}

// TestS3PutRefusesAnUnsignedFolder: Put stores only a snapshot signed for its name.
func TestS3PutRefusesAnUnsignedFolder(t *testing.T) {
	s, _ := newS3(t)
	src := signedDir(t, testKey, "team-a", "snap", map[string][]byte{"specs/0.json": []byte("{}"), "image/checkpoint.img": []byte("m")})
	if err := s.Put(t.Context(), "team-a", "other", src); !errors.Is(err, checkpoint.ErrUnsigned) {
		t.Fatalf("Put under another name: %v, want ErrUnsigned", err)
	}
	if has, _ := s.Has(t.Context(), "team-a", "other"); has {
		t.Error("the store shows the refused snapshot")
	}
}

// TestNewS3 builds the store from its configuration (package objstore checks the settings).
func TestNewS3(t *testing.T) {
	id := filepath.Join(t.TempDir(), "id")
	if err := os.WriteFile(id, []byte("AKID\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := NewS3(objstore.Config{Endpoint: "127.0.0.1:1", Bucket: "b", Prefix: "p", AccessKeyIDFile: id, SecretAccessKeyFile: id, Insecure: true}, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b", "p"}, []string{s.Bucket, s.Prefix}); diff != "" {
		t.Error(diff)
	}
	if _, err := NewS3(objstore.Config{Bucket: "b"}, testKey); err == nil || !strings.Contains(err.Error(), "the S3 snapshot store needs an endpoint") {
		t.Errorf("NewS3 without an endpoint: %v, want an error naming the snapshot store", err)
	}
}

// TestS3Figures measures storing a snapshot-sized folder (KUBOX_S3_FIGURES_MIB MiB of random
// memory and a few files), a second snapshot with 1 MiB changed, and the download. It only logs:
// run it with KUBOX_S3_FIGURES_MIB=100 go test ./internal/node/store/ -run TestS3Figures -v.
func TestS3Figures(t *testing.T) {
	mib := os.Getenv("KUBOX_S3_FIGURES_MIB")
	if mib == "" {
		t.Skip("set KUBOX_S3_FIGURES_MIB (e.g. 100) to measure")
	}
	n, err := strconv.Atoi(mib)
	if err != nil || n <= 1 {
		t.Fatalf("KUBOX_S3_FIGURES_MIB=%q: want a number of MiB above 1", mib)
	}
	s, _ := newS3(t)
	mem := random(t, n<<20)
	files := map[string][]byte{"image/checkpoint.img": mem, "specs/0.json": []byte("{}"), "files/1/0/a": random(t, 300<<10), "files/1/0/b": []byte("b")}
	first := signedDir(t, testKey, "team-a", "snap-1", files)
	start := time.Now()
	if err := s.Put(t.Context(), "team-a", "snap-1", first); err != nil {
		t.Fatal(err)
	}
	t.Logf("first snapshot (%d MiB): %d bytes uploaded in %s", n, s.Stats().BytesUploaded.Load(), time.Since(start))
	before := s.Stats().BytesUploaded.Load()
	files["image/checkpoint.img"] = bytes.Clone(mem)
	copy(files["image/checkpoint.img"][len(mem)/2:], random(t, 1<<20))
	second := signedDir(t, testKey, "team-a", "snap-2", files)
	start = time.Now()
	if err := s.Put(t.Context(), "team-a", "snap-2", second); err != nil {
		t.Fatal(err)
	}
	t.Logf("second snapshot (1 MiB changed): %d bytes uploaded in %s", s.Stats().BytesUploaded.Load()-before, time.Since(start))
	start = time.Now()
	if err := s.Get(context.Background(), "team-a", "snap-2", filepath.Join(t.TempDir(), "snap-2")); err != nil {
		t.Fatal(err)
	}
	t.Logf("download of the second, verified: %d bytes in %s", s.Stats().BytesDownloaded.Load(), time.Since(start))
}
