package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/minio/minio-go/v7"

	"github.com/kubox-dev/kubox/internal/objstore"
	"github.com/kubox-dev/kubox/internal/testutil/s3server"
)

// TestS3SinkWritesEveryRecord runs a queue into the S3 sink on a real S3 server (SeaweedFS,
// only with $KUBOX_SEAWEEDFS) configured as kubox-router configures it, credentials from files:
// the objects under the prefix hold every record, once, as JSON lines, after Close.
func TestS3SinkWritesEveryRecord(t *testing.T) {
	srv := s3server.Start(t)
	sink, err := NewS3(S3Config{Config: objstore.Config{Endpoint: srv.Endpoint, Bucket: srv.Bucket, Prefix: "audit/cluster-a", Insecure: true,
		AccessKeyIDFile: srv.AccessKeyIDFile, SecretAccessKeyFile: srv.SecretAccessKeyFile}, Instance: "router-0"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewQueue(QueueConfig{BatchSize: 40, FlushInterval: time.Hour}, slog.New(slog.DiscardHandler), sink)
	if err != nil {
		t.Fatal(err)
	}
	want := records(100)
	for i := range want {
		want[i].Time = time.Date(2026, 12, 7, 8, 0, 0, i, time.UTC)
		want[i].Principal = "system:serviceaccount:team-a:alice"
		q.Add(want[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := q.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var got []Record
	objects := 0
	for obj := range srv.Client.ListObjects(ctx, srv.Bucket, minio.ListObjectsOptions{Prefix: "audit/cluster-a/", Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		if !strings.HasSuffix(obj.Key, ".ndjson") || !strings.Contains(obj.Key, "-router-0-") {
			t.Errorf("object %s is not named {prefix}/{yyyy}/{mm}/{dd}/{hh}/{time}-{instance}-{seq}.ndjson", obj.Key)
		}
		objects++
		got = append(got, readLines(t, srv.Client, srv.Bucket, obj.Key)...)
	}
	if objects != 3 {
		t.Errorf("%d objects for 100 records in batches of 40, want 3", objects)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records in the bucket (-want +got):\n%s", diff)
	}
}

func readLines(t *testing.T, c *minio.Client, bucket, key string) []Record {
	t.Helper()
	obj, err := c.GetObject(t.Context(), bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = obj.Close() }()
	var rs []Record
	sc := bufio.NewScanner(obj)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("object %s: a line is not a record: %v", key, err)
		}
		rs = append(rs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestNewS3Names: a sink's errors name the audit sink (package objstore checks the settings).
func TestNewS3Names(t *testing.T) {
	_, err := NewS3(S3Config{Config: objstore.Config{Endpoint: "s3.example.com"}})
	if err == nil || !strings.Contains(err.Error(), "the S3 audit sink needs an endpoint and a bucket") {
		t.Errorf("NewS3 without a bucket: %v, want an error naming the S3 audit sink", err)
	}
}
