package usage

import (
	"bufio"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/minio/minio-go/v7"

	"github.com/kubox-dev/kubox/internal/objstore"
	"github.com/kubox-dev/kubox/internal/testutil/s3server"
)

func TestS3ObjectName(t *testing.T) {
	cases := map[string]struct {
		prefix string
		r      Record
		want   string
	}{
		"named for the end day, namespace and UID": {prefix: "usage/c1",
			r:    Record{Namespace: "team-a", UID: "u-1", End: time.Date(2026, 12, 7, 23, 59, 0, 0, time.UTC)},
			want: "usage/c1/2026/12/07/team-a/u-1.ndjson"},
		"no prefix": {r: Record{Namespace: "n", UID: "u", End: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)},
			want: "2026/01/02/n/u.ndjson"},
		"a hostile UID or namespace cannot climb out of its folder": {prefix: "usage",
			r:    Record{Namespace: "../x", UID: "../../y", End: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)},
			want: "usage/2026/01/02/..%2Fx/..%2F..%2Fy.ndjson"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := &S3{prefix: tc.prefix}
			if diff := cmp.Diff(tc.want, s.ObjectName(&tc.r)); diff != "" {
				t.Errorf("ObjectName (-want +got):\n%s", diff)
			}
		})
	}
}

// TestS3SinkWritesRecord writes records to a real S3 server (SeaweedFS, only with
// $KUBOX_SEAWEEDFS): each is one NDJSON object; writing one again (a retry) overwrites it.
func TestS3SinkWritesRecord(t *testing.T) {
	srv := s3server.Start(t)
	sink, err := NewS3(objstore.Config{Endpoint: srv.Endpoint, Bucket: srv.Bucket, Prefix: "usage/c1", Insecure: true,
		AccessKeyIDFile: srv.AccessKeyIDFile, SecretAccessKeyFile: srv.SecretAccessKeyFile})
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{Schema: SchemaVersion, Namespace: "team-a", Name: "a", UID: "u-a", End: time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC), Figures: Figures{RunningSeconds: 10}},
		{Schema: SchemaVersion, Namespace: "team-b", Name: "b", UID: "u-b", End: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC), Figures: Figures{Wakes: 2}},
	}
	for range 2 {
		if err := sink.Write(t.Context(), want); err != nil {
			t.Fatal(err)
		}
	}
	var got []Record
	for obj := range srv.Client.ListObjects(t.Context(), srv.Bucket, minio.ListObjectsOptions{Prefix: "usage/c1/", Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		o, err := srv.Client.GetObject(t.Context(), srv.Bucket, obj.Key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(o)
		for sc.Scan() {
			var r Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("object %s: %v", obj.Key, err)
			}
			got = append(got, r)
		}
		_ = o.Close()
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records in the bucket (-want +got):\n%s", diff)
	}
}
