package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/kubox-dev/kubox/internal/node/checkpoint"
)

// checkIndex checks a snapshot's file list against its signed manifest before any chunk is
// downloaded: every file and link is one the manifest lists, with its size and as many chunks as
// that size needs, so a forged list can neither add files nor make Get write more than the
// manifest's bytes; and every chunk is named by a SHA-256 in lowercase hex, the only names Put
// writes, before any name is made into an object key. (The chunks' content is checked as they
// arrive, the files' after.)
func checkIndex(m *checkpoint.Manifest, files []indexEntry) error {
	want := make(map[string]checkpoint.File, len(m.Files))
	for _, f := range m.Files {
		want[f.Path] = f
	}
	seen := make(map[string]bool, len(files))
	for _, e := range files {
		if !filepath.IsLocal(e.Path) || e.Path != path.Clean(e.Path) || seen[e.Path] ||
			e.Path == checkpoint.ManifestFile || e.Path == checkpoint.SignatureFile {
			return fmt.Errorf("its file list names %q twice or outside the snapshot folder: the list was altered", e.Path)
		}
		seen[e.Path] = true
		if e.Dir {
			continue
		}
		f, ok := want[e.Path]
		chunks := int((f.Size + ChunkSize - 1) / ChunkSize)
		if !ok || f.Link != e.Link || f.Size != e.Size || (e.Link == "" && len(e.Chunks) != chunks) || (e.Link != "" && len(e.Chunks) != 0) {
			return fmt.Errorf("its file list does not match its signed manifest at %q: the list was altered", e.Path)
		}
		for _, c := range e.Chunks {
			if !chunkName(c) {
				return fmt.Errorf("its file list names chunk %q of %q, not a SHA-256 in lowercase hex: the list was altered", c, e.Path)
			}
		}
		delete(want, e.Path)
	}
	for p := range want {
		return fmt.Errorf("its file list lacks %q, which its signed manifest lists: the list was altered", p)
	}
	return nil
}

// chunkName reports whether c is a chunk's name: 64 lowercase hex digits, a SHA-256.
func chunkName(c string) bool {
	if len(c) != 2*sha256.Size {
		return false
	}
	for _, r := range c {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// chunkJob is one chunk to download into a file at an offset.
type chunkJob struct {
	file   string
	offset int64
	sum    string
}

// writeFiles writes files into the folder tmp: folders first, then the regular files' chunks
// (Parallel at once, each checked against its SHA-256), links last, so that no file is written
// through a link of the list.
func (s *S3) writeFiles(ctx context.Context, tmp string, files []indexEntry) error {
	var jobs []chunkJob
	for _, e := range files {
		if e.Dir {
			if err := os.MkdirAll(filepath.Join(tmp, e.Path), os.FileMode(e.Mode).Perm()|0o700); err != nil {
				return err
			}
		}
	}
	for _, e := range files {
		if e.Dir || e.Link != "" {
			continue
		}
		p := filepath.Join(tmp, e.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, os.FileMode(e.Mode).Perm())
		if err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		for i, sum := range e.Chunks {
			jobs = append(jobs, chunkJob{file: p, offset: int64(i) * ChunkSize, sum: sum})
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.parallel())
	for _, j := range jobs {
		g.Go(func() error { return s.getChunk(gctx, j) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, e := range files {
		if e.Link != "" {
			if err := os.Symlink(e.Link, filepath.Join(tmp, e.Path)); err != nil {
				return err
			}
		}
	}
	return nil
}

// getChunk downloads one chunk, checks it against its SHA-256 and writes it at its offset.
func (s *S3) getChunk(ctx context.Context, j chunkJob) error {
	if len(j.sum) != sha256.Size*2 || strings.Trim(j.sum, "0123456789abcdef") != "" {
		return fmt.Errorf("its file list names the chunk %q, not a SHA-256: the list was altered", j.sum)
	}
	b, err := s.getBytes(ctx, s.chunkObject(j.sum), ChunkSize)
	if err != nil {
		return fmt.Errorf("%w: chunk %s: %v", checkpoint.ErrIncomplete, j.sum, err)
	}
	if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != j.sum {
		return fmt.Errorf("%w: chunk %s in bucket %s does not match its SHA-256: it was altered or damaged",
			checkpoint.ErrIncomplete, j.sum, s.Bucket)
	}
	s.Stats().BytesDownloaded.Add(int64(len(b)))
	f, err := os.OpenFile(j.file, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, j.offset); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// Delete implements Store: the manifest goes first (the snapshot is no longer shown), then its
// signature and file list, then every chunk no remaining file list names (collectGarbage).
func (s *S3) Delete(ctx context.Context, namespace, name string) error {
	if err := checkName(namespace, name); err != nil {
		return err
	}
	for _, f := range []string{checkpoint.ManifestFile, checkpoint.SignatureFile, indexObject} {
		key := s.snapshotObject(namespace, name, f)
		if err := s.Client.RemoveObject(ctx, s.Bucket, key, minio.RemoveObjectOptions{}); err != nil {
			return fmt.Errorf("deleting snapshot %s/%s: bucket %s, object %s: %w", namespace, name, s.Bucket, key, err)
		}
	}
	if err := s.collectGarbage(ctx); err != nil {
		return fmt.Errorf("deleting snapshot %s/%s: removing its unshared chunks: %w", namespace, name, err)
	}
	return nil
}

// collectGarbage removes the chunks under the prefix that no snapshot's file list names: a scan
// of every files.json under <prefix>/snapshots/, then of <prefix>/chunks/. A file list of a
// snapshot whose Put has not finished counts too. A Put that found a chunk present just before a
// concurrent Delete's scan removed it stores a snapshot missing that chunk: Get then refuses it
// (never restores it wrong) and it must be taken again (docs/snapshot-store.md, "Deleting").
func (s *S3) collectGarbage(ctx context.Context) error {
	used := map[string]bool{}
	for o := range s.Client.ListObjects(ctx, s.Bucket, minio.ListObjectsOptions{Prefix: s.object("snapshots") + "/", Recursive: true}) {
		if o.Err != nil {
			return o.Err
		}
		if path.Base(o.Key) != indexObject {
			continue
		}
		b, err := s.getBytes(ctx, o.Key, maxIndex)
		if err != nil {
			return err
		}
		var idx index
		if err := json.Unmarshal(b, &idx); err != nil {
			return fmt.Errorf("object %s: %w: delete it by hand or keep every chunk", o.Key, err)
		}
		for _, f := range idx.Files {
			for _, c := range f.Chunks {
				used[c] = true
			}
		}
	}
	chunks := s.object("chunks") + "/"
	for o := range s.Client.ListObjects(ctx, s.Bucket, minio.ListObjectsOptions{Prefix: chunks, Recursive: true}) {
		if o.Err != nil {
			return o.Err
		}
		if used[strings.TrimPrefix(o.Key, chunks)] {
			continue
		}
		if err := s.Client.RemoveObject(ctx, s.Bucket, o.Key, minio.RemoveObjectOptions{}); err != nil {
			return fmt.Errorf("bucket %s, object %s: %w", s.Bucket, o.Key, err)
		}
	}
	return nil
}
