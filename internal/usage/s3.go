package usage

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/kubox-dev/kubox/internal/ndjson"
	"github.com/kubox-dev/kubox/internal/objstore"
)

// S3 writes each Record as one NDJSON object,
// {prefix}/{yyyy}/{mm}/{dd}/{namespace}/{uid}.ndjson, dated by the record's End. The name
// depends only on the sandbox, so a retried or repeated write replaces the object: no
// duplicates, and a reader sums objects without de-duplicating.
type S3 struct {
	client         *minio.Client
	bucket, prefix string
}

// NewS3 returns the S3 sink cfg configures, its credentials read from their files.
func NewS3(cfg objstore.Config) (*S3, error) {
	c, err := cfg.Client("the S3 usage sink")
	if err != nil {
		return nil, err
	}
	return &S3{client: c, bucket: cfg.Bucket, prefix: strings.Trim(cfg.Prefix, "/")}, nil
}

// Name names the sink in logs and metrics.
func (*S3) Name() string { return "s3" }

// ObjectName is the name of r's object. Namespace and UID are path-escaped, so no value can
// name an object outside its own folder.
func (s *S3) ObjectName(r *Record) string {
	name := fmt.Sprintf("%s/%s/%s.ndjson", r.End.UTC().Format("2006/01/02"),
		url.PathEscape(r.Namespace), url.PathEscape(r.UID))
	if s.prefix == "" {
		return name
	}
	return path.Join(s.prefix, name)
}

// Write writes each record to its object.
func (s *S3) Write(ctx context.Context, records []Record) error {
	for i := range records {
		var buf bytes.Buffer
		if err := ndjson.Encode(&buf, records[i:i+1], "usage record"); err != nil {
			return err
		}
		name := s.ObjectName(&records[i])
		_, err := s.client.PutObject(ctx, s.bucket, name, bytes.NewReader(buf.Bytes()), int64(buf.Len()),
			minio.PutObjectOptions{ContentType: "application/x-ndjson"})
		if err != nil {
			return fmt.Errorf("writing the usage record of sandbox %s/%s to object %s in bucket %s: %w",
				records[i].Namespace, records[i].Name, name, s.bucket, err)
		}
	}
	return nil
}

// Close does nothing.
func (*S3) Close(context.Context) error { return nil }
