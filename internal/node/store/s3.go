package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync/atomic"

	"github.com/minio/minio-go/v7"

	"github.com/kubox-dev/kubox/internal/node/checkpoint"
	"github.com/kubox-dev/kubox/internal/objstore"
)

// ChunkSize is the size of the chunks S3 splits files into (the last chunk of a file is shorter).
const ChunkSize = 4 << 20

// indexObject is the name, below a snapshot's prefix, of its file list: which chunks make up
// each file.
const indexObject = "files.json"

// maxIndex bounds what is read of a snapshot's file list.
const maxIndex = 64 << 20

// S3 is a Store in a bucket of an S3-compatible object store (AWS S3, MinIO, SeaweedFS, Ceph RGW,
// a cloud's S3 API). Files are split into ChunkSize chunks stored once by content,
// <Prefix>/chunks/<sha256>, so a snapshot shares every unchanged chunk with the snapshots before
// it; each snapshot is <Prefix>/snapshots/<namespace>/<name>/: files.json (each file's chunks),
// manifest.json.sig and, last, manifest.json (docs/snapshot-store.md).
//
// Nothing in the bucket is trusted: Get checks the manifest's signature (Key) before it reads a
// chunk, each chunk against its SHA-256, and the whole folder against the manifest.
type S3 struct {
	Client *minio.Client
	Bucket string
	// Prefix is the folder of the bucket the store uses ("" for all of it).
	Prefix string
	// Key signs and checks the manifests, as Dir's.
	Key checkpoint.Key
	// Parallel is how many chunks Get downloads and Put uploads at once (4 when 0).
	Parallel int

	stats *S3Stats
}

// S3Stats counts what an S3 store moved; it is shared by the copies of the store.
type S3Stats struct {
	BytesUploaded   atomic.Int64 // chunk, file list and manifest bytes written to the bucket
	ChunksUploaded  atomic.Int64 // chunks written (absent from the bucket before)
	ChunksReused    atomic.Int64 // chunks Put found already in the bucket
	BytesDownloaded atomic.Int64 // chunk bytes Get read
}

// NewS3 returns the S3 store cfg configures, its credentials read from their files.
func NewS3(cfg objstore.Config, key checkpoint.Key) (*S3, error) {
	c, err := cfg.Client("the S3 snapshot store")
	if err != nil {
		return nil, err
	}
	return &S3{Client: c, Bucket: cfg.Bucket, Prefix: cfg.Prefix, Key: key}, nil
}

var _ Store = (*S3)(nil)

// Location implements Locator: s3://<endpoint>/<bucket>/<prefix>/snapshots/<namespace>/<name>,
// the endpoint's host only (the client's credentials are not part of it).
func (s *S3) Location(namespace, name string) (kind, location string) {
	return KindS3, "s3://" + path.Join(s.Client.EndpointURL().Host, s.Bucket, s.snapshotObject(namespace, name, ""))
}

// Stats returns the store's counters.
func (s *S3) Stats() *S3Stats {
	if s.stats == nil {
		s.stats = &S3Stats{}
	}
	return s.stats
}

func (s *S3) parallel() int {
	if s.Parallel > 0 {
		return s.Parallel
	}
	return 4
}

func (s *S3) object(parts ...string) string {
	return path.Join(append([]string{s.Prefix}, parts...)...)
}

func (s *S3) snapshotObject(namespace, name, file string) string {
	return s.object("snapshots", namespace, name, file)
}

func (s *S3) chunkObject(sum string) string { return s.object("chunks", sum) }

// indexEntry is one file of a snapshot's file list: a folder, a link, or a regular file made of
// Chunks (SHA-256s, in order).
type indexEntry struct {
	Path   string   `json:"path"`
	Mode   uint32   `json:"mode"`
	Dir    bool     `json:"dir,omitempty"`
	Link   string   `json:"link,omitempty"`
	Size   int64    `json:"size,omitempty"`
	Chunks []string `json:"chunks,omitempty"`
}

type index struct {
	Version int          `json:"version"`
	Files   []indexEntry `json:"files"`
}

// Has implements Store: a snapshot is there when its manifest, written last, is.
func (s *S3) Has(ctx context.Context, namespace, name string) (bool, error) {
	if err := checkName(namespace, name); err != nil {
		return false, err
	}
	return s.exists(ctx, s.snapshotObject(namespace, name, checkpoint.ManifestFile))
}

func (s *S3) exists(ctx context.Context, key string) (bool, error) {
	_, err := s.Client.StatObject(ctx, s.Bucket, key, minio.StatObjectOptions{})
	if err == nil {
		return true, nil
	}
	if r := minio.ToErrorResponse(err); r.Code == minio.NoSuchKey || r.StatusCode == 404 {
		return false, nil
	}
	return false, fmt.Errorf("S3 snapshot store bucket %s, object %s: %w", s.Bucket, key, err)
}

// Put implements Store: the folder is verified, its new chunks uploaded, then its file list,
// signature and manifest, the manifest last.
func (s *S3) Put(ctx context.Context, namespace, name, dir string) error {
	if has, err := s.Has(ctx, namespace, name); err != nil || has {
		return err
	}
	if _, err := s.Key.Verify(dir, namespace, name); err != nil {
		return fmt.Errorf("snapshot %s/%s: %w", namespace, name, err)
	}
	idx, err := s.putFiles(ctx, dir)
	if err != nil {
		return fmt.Errorf("storing snapshot %s/%s: %w", namespace, name, err)
	}
	b, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	if err := s.putBytes(ctx, s.snapshotObject(namespace, name, indexObject), b); err != nil {
		return fmt.Errorf("storing snapshot %s/%s: %w", namespace, name, err)
	}
	for _, f := range []string{checkpoint.SignatureFile, checkpoint.ManifestFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err == nil {
			err = s.putBytes(ctx, s.snapshotObject(namespace, name, f), b)
		}
		if err != nil {
			return fmt.Errorf("storing snapshot %s/%s: %w", namespace, name, err)
		}
	}
	return nil
}

func (s *S3) putBytes(ctx context.Context, key string, b []byte) error {
	_, err := s.Client.PutObject(ctx, s.Bucket, key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{})
	if err != nil {
		return fmt.Errorf("bucket %s, object %s: %w", s.Bucket, key, err)
	}
	s.Stats().BytesUploaded.Add(int64(len(b)))
	return nil
}

// putFiles uploads the chunks of the files below dir the bucket lacks and returns the folder's
// file list (its manifest and signature excepted).
func (s *S3) putFiles(ctx context.Context, dir string) (*index, error) {
	idx := &index{Version: 1}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." || rel == checkpoint.ManifestFile || rel == checkpoint.SignatureFile {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		ent := indexEntry{Path: filepath.ToSlash(rel), Mode: uint32(info.Mode().Perm())}
		switch {
		case e.IsDir():
			ent.Dir = true
		case e.Type()&fs.ModeSymlink != 0:
			if ent.Link, err = os.Readlink(p); err != nil {
				return err
			}
		case !e.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file or a link: a snapshot folder holds files only", rel)
		default:
			ent.Size = info.Size()
			if ent.Chunks, err = s.putChunks(ctx, p); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
		}
		idx.Files = append(idx.Files, ent)
		return nil
	})
	return idx, err
}

// putChunks uploads the chunks of the file at p the bucket lacks (HEAD first) and returns them.
func (s *S3) putChunks(ctx context.Context, p string) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var sums []string
	buf := make([]byte, ChunkSize)
	for {
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			sum := sha256.Sum256(buf[:n])
			h := hex.EncodeToString(sum[:])
			if err := s.putChunk(ctx, h, buf[:n]); err != nil {
				return nil, err
			}
			sums = append(sums, h)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return sums, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (s *S3) putChunk(ctx context.Context, sum string, b []byte) error {
	key := s.chunkObject(sum)
	has, err := s.exists(ctx, key)
	if err != nil {
		return err
	}
	if has {
		s.Stats().ChunksReused.Add(1)
		return nil
	}
	if err := s.putBytes(ctx, key, b); err != nil {
		return err
	}
	s.Stats().ChunksUploaded.Add(1)
	return nil
}

// Get implements Store: the manifest's signature is checked first, then the chunks are
// downloaded (Parallel at once) and each checked against its SHA-256 into a folder beside dir,
// the folder verified against the manifest and renamed to dir.
func (s *S3) Get(ctx context.Context, namespace, name, dir string) error {
	switch has, err := s.Has(ctx, namespace, name); {
	case err != nil:
		return err
	case !has:
		return fmt.Errorf("snapshot %s/%s: %w", namespace, name, ErrNotFound)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	tmp := dir + ".partial-" + hex.EncodeToString(suffix)
	err := s.getInto(ctx, namespace, name, tmp)
	if err == nil {
		_, err = s.Key.Verify(tmp, namespace, name)
	}
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("fetching snapshot %s/%s from the S3 snapshot store: %w", namespace, name, err)
	}
	return nil
}

// getInto writes the snapshot's manifest and signature into tmp, checks the signature, then
// writes its files.
func (s *S3) getInto(ctx context.Context, namespace, name, tmp string) error {
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return err
	}
	for _, f := range []string{checkpoint.ManifestFile, checkpoint.SignatureFile} {
		b, err := s.getBytes(ctx, s.snapshotObject(namespace, name, f), 64<<20)
		if err != nil && f == checkpoint.SignatureFile && errors.Is(err, fs.ErrNotExist) {
			continue // CheckSignature says it is unsigned
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			return err
		}
	}
	m, err := s.Key.CheckSignature(tmp, namespace, name)
	if err != nil {
		return err
	}
	b, err := s.getBytes(ctx, s.snapshotObject(namespace, name, indexObject), maxIndex)
	if err != nil {
		return err
	}
	var idx index
	if err := json.Unmarshal(b, &idx); err != nil {
		return fmt.Errorf("%w: its file list: %v", checkpoint.ErrIncomplete, err)
	}
	if err := checkIndex(m, idx.Files); err != nil {
		return fmt.Errorf("%w: %v", checkpoint.ErrIncomplete, err)
	}
	return s.writeFiles(ctx, tmp, idx.Files)
}

// getBytes reads the object key, at most limit bytes; fs.ErrNotExist when it is absent.
func (s *S3) getBytes(ctx context.Context, key string, limit int64) ([]byte, error) {
	o, err := s.Client.GetObject(ctx, s.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("bucket %s, object %s: %w", s.Bucket, key, err)
	}
	defer func() { _ = o.Close() }()
	b, err := io.ReadAll(io.LimitReader(o, limit+1))
	if err != nil {
		if r := minio.ToErrorResponse(err); r.Code == minio.NoSuchKey || r.StatusCode == 404 {
			return nil, fmt.Errorf("bucket %s, object %s: %w", s.Bucket, key, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("bucket %s, object %s: %w", s.Bucket, key, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("bucket %s, object %s is larger than %d bytes", s.Bucket, key, limit)
	}
	return b, nil
}
