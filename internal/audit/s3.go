package audit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/kubox-dev/kubox/internal/ndjson"
	"github.com/kubox-dev/kubox/internal/objstore"
)

// S3Config configures the S3 sink.
type S3Config struct {
	objstore.Config
	// Instance names this writer in object names, so that router replicas never write the same
	// object; empty: the host name and a random suffix.
	Instance string
}

// hourLayout is the time layout of the sink's folders, one per hour (Reader lists them).
const hourLayout = "2006/01/02/15"

// S3 writes each batch as one newline-delimited JSON object,
// {prefix}/{yyyy}/{mm}/{dd}/{hh}/{yyyymmddThhmmss.nnnnnnnnnZ}-{instance}-{seq}.ndjson, named
// for the time the batch was written (its records are from the FlushInterval before).
type S3 struct {
	client         *minio.Client
	bucket, prefix string
	instance       string
	seq            atomic.Uint64
	now            func() time.Time
}

// NewS3 returns the S3 sink cfg configures, its credentials read from their files.
func NewS3(cfg S3Config) (*S3, error) {
	c, err := cfg.Client("the S3 audit sink")
	if err != nil {
		return nil, err
	}
	if cfg.Instance == "" {
		cfg.Instance = defaultInstance()
	}
	return &S3{client: c, bucket: cfg.Bucket, prefix: strings.Trim(cfg.Prefix, "/"), instance: cfg.Instance, now: time.Now}, nil
}

// defaultInstance is the host name (the router Pod's name) and 4 random bytes.
func defaultInstance() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return strings.Trim(strings.ReplaceAll(host, "/", "-")+"-"+hex.EncodeToString(b), "-")
}

// Name implements Sink.
func (*S3) Name() string { return "s3" }

// ObjectName is the name of the object of a batch written at t.
func (s *S3) ObjectName(t time.Time, seq uint64) string {
	t = t.UTC()
	name := fmt.Sprintf("%s/%s-%s-%06d.ndjson", t.Format(hourLayout), t.Format("20060102T150405.000000000Z"), s.instance, seq)
	if s.prefix == "" {
		return name
	}
	return path.Join(s.prefix, name)
}

// Write implements Sink: one object per batch. A retried batch gets a new name; a write that
// failed after the object was stored leaves a duplicate, never a gap.
func (s *S3) Write(ctx context.Context, records []Record) error {
	var buf bytes.Buffer
	if err := ndjson.Encode(&buf, records, "audit record"); err != nil {
		return err
	}
	name := s.ObjectName(s.now(), s.seq.Add(1))
	_, err := s.client.PutObject(ctx, s.bucket, name, bytes.NewReader(buf.Bytes()), int64(buf.Len()),
		minio.PutObjectOptions{ContentType: "application/x-ndjson"})
	if err != nil {
		return fmt.Errorf("writing audit object %s to bucket %s: %w", name, s.bucket, err)
	}
	return nil
}

// Close implements Sink.
func (*S3) Close(context.Context) error { return nil }
