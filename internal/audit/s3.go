package audit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config configures the S3 sink, as kubox-node's --snapshot-store-s3-* flags configure its
// store: credentials come from files (a mounted Secret), never from a flag's value.
type S3Config struct {
	Endpoint string // host:port of the S3 API
	Bucket   string
	// Prefix is the folder of the bucket the records go under ("" : the bucket's root).
	Prefix string
	Region string
	// Insecure talks plain HTTP to the endpoint.
	Insecure bool
	// AccessKeyIDFile and SecretAccessKeyFile hold the credentials (a mounted Secret's keys).
	AccessKeyIDFile, SecretAccessKeyFile string
	// Instance names this writer in object names, so that router replicas never write the same
	// object; empty: the host name and a random suffix.
	Instance string
}

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
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, errors.New("the S3 audit sink needs an endpoint and a bucket (--audit-s3-endpoint, --audit-s3-bucket)")
	}
	id, err := readCredential(cfg.AccessKeyIDFile, "access key id", "--audit-s3-access-key-id-file")
	if err != nil {
		return nil, err
	}
	secret, err := readCredential(cfg.SecretAccessKeyFile, "secret access key", "--audit-s3-secret-access-key-file")
	if err != nil {
		return nil, err
	}
	c, err := minio.New(cfg.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(id, secret, ""), Secure: !cfg.Insecure, Region: cfg.Region})
	if err != nil {
		return nil, fmt.Errorf("the S3 audit sink's endpoint %q: %w", cfg.Endpoint, err)
	}
	if cfg.Instance == "" {
		cfg.Instance = defaultInstance()
	}
	return &S3{client: c, bucket: cfg.Bucket, prefix: strings.Trim(cfg.Prefix, "/"), instance: cfg.Instance, now: time.Now}, nil
}

func readCredential(file, what, flag string) (string, error) {
	if file == "" {
		return "", fmt.Errorf("the S3 audit sink needs a file holding its %s (%s, a mounted Secret's key)", what, flag)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("the S3 audit sink's %s (%s): %w", what, flag, err)
	}
	v := string(bytes.TrimSpace(b))
	if v == "" {
		return "", fmt.Errorf("the S3 audit sink's %s file %s is empty (%s)", what, file, flag)
	}
	return v, nil
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
	name := fmt.Sprintf("%s/%s-%s-%06d.ndjson", t.Format("2006/01/02/15"), t.Format("20060102T150405.000000000Z"), s.instance, seq)
	if s.prefix == "" {
		return name
	}
	return path.Join(s.prefix, name)
}

// Write implements Sink: one object per batch. A retried batch gets a new name; a write that
// failed after the object was stored leaves a duplicate, never a gap.
func (s *S3) Write(ctx context.Context, records []Record) error {
	var buf bytes.Buffer
	if err := encodeLines(&buf, records); err != nil {
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
