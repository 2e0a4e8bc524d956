package audit

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/minio/minio-go/v7"

	"github.com/kubox-dev/kubox/internal/objstore"
	"github.com/kubox-dev/kubox/internal/testutil/s3server"
)

// TestReaderReadsWhatTheSinkWrote writes batches with the S3 sink at known times on a real S3
// server (SeaweedFS, only with $KUBOX_SEAWEEDFS) and reads them back with Reader: it selects by
// sandbox, claim and time, finds a record whose batch was written in the next hour's folder,
// keeps the latest records under a limit, and skips a damaged line, naming it.
func TestReaderReadsWhatTheSinkWrote(t *testing.T) {
	srv := s3server.Start(t)
	cfg := objstore.Config{Endpoint: srv.Endpoint, Bucket: srv.Bucket, Prefix: "audit", Insecure: true,
		AccessKeyIDFile: srv.AccessKeyIDFile, SecretAccessKeyFile: srv.SecretAccessKeyFile}
	sink, err := NewS3(S3Config{Config: cfg, Instance: "router-0"})
	if err != nil {
		t.Fatal(err)
	}
	at := func(h, m, s int) time.Time { return time.Date(2026, 12, 7, h, m, s, 0, time.UTC) }
	rec := func(t time.Time, ns, sandbox, claim, path string) Record {
		return Record{Time: t, Source: SourceRouter, Phase: PhaseClose, Principal: "alice", Namespace: ns, Sandbox: sandbox,
			Claim: claim, Route: RouteAgent, Method: "POST", Path: path, Status: 200}
	}
	a1 := rec(at(10, 59, 58), "team-a", "a", "c1", "/one")
	a2 := rec(at(10, 59, 59), "team-a", "a", "c1", "/two") // its batch is written after 11:00
	b1 := rec(at(11, 0, 0), "team-a", "b", "c2", "/three")
	a3 := rec(at(13, 30, 0), "team-a", "a", "c1", "/four")
	other := rec(at(10, 30, 0), "team-b", "a", "c1", "/other-namespace")
	write := func(now time.Time, rs ...Record) {
		t.Helper()
		sink.now = func() time.Time { return now }
		if err := sink.Write(t.Context(), rs); err != nil {
			t.Fatal(err)
		}
	}
	write(at(10, 59, 59), a1, other)
	write(at(11, 0, 1), a2, b1)
	write(at(13, 30, 1), a3)
	damaged := "audit/2026/12/07/13/20261207T133002.000000000Z-router-9-000001.ndjson"
	line := `{"time":"2026-12-07T13:30:02Z","namespace":"team-a","sandbox":"a","path":"/five"}` + "\n"
	body := []byte(line + "not json\n")
	if _, err := srv.Client.PutObject(t.Context(), srv.Bucket, damaged, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	five := Record{Time: at(13, 30, 2), Namespace: "team-a", Sandbox: "a", Path: "/five"}

	r, err := NewReader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		q             Query
		want          []Record
		truncated     bool
		damagedPrefix string
	}{
		"a sandbox in an hour, its last batch in the next hour's folder": {
			q: Query{Namespace: "team-a", Sandbox: "a", From: at(10, 0, 0), To: at(11, 0, 0)}, want: []Record{a1, a2}},
		"a claim all day": {
			q: Query{Namespace: "team-a", Claim: "c1", From: at(0, 0, 0), To: at(23, 0, 0)}, want: []Record{a1, a2, a3},
			damagedPrefix: damaged + ":2: "},
		"the latest under a limit": {
			q: Query{Namespace: "team-a", From: at(0, 0, 0), To: at(23, 0, 0), Limit: 2}, want: []Record{a3, five}, truncated: true,
			damagedPrefix: damaged + ":2: "},
		"another namespace's records are not a's": {
			q: Query{Namespace: "team-b", From: at(10, 0, 0), To: at(11, 30, 0)}, want: []Record{other}},
		"nothing before": {
			q: Query{Namespace: "team-a", From: at(8, 0, 0), To: at(9, 0, 0)}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := r.Read(t.Context(), tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Records); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			if got.Truncated != tc.truncated {
				t.Errorf("Truncated = %v, want %v", got.Truncated, tc.truncated)
			}
			if tc.damagedPrefix == "" && len(got.Damaged) > 0 || tc.damagedPrefix != "" && (len(got.Damaged) != 1 || !strings.HasPrefix(got.Damaged[0], tc.damagedPrefix)) {
				t.Errorf("Damaged = %q, want one line starting %q", got.Damaged, tc.damagedPrefix)
			}
		})
	}
}

// TestReadRefusesBadRanges: an empty or reversed range and one longer than MaxReadHours are
// errors saying so, before anything is listed.
func TestReadRefusesBadRanges(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		from, to time.Time
		want     string
	}{
		"empty":    {from: now, to: now, want: "the time range is empty"},
		"reversed": {from: now, to: now.Add(-time.Hour), want: "the time range is empty"},
		"too long": {from: now.Add(-40 * 24 * time.Hour), to: now, want: "is more than 31 days: read it in parts"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Reader{}.Read(t.Context(), Query{From: tc.from, To: tc.to})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestHourFolders: one folder per hour, from the hour of from to that of to.
func TestHourFolders(t *testing.T) {
	from := time.Date(2026, 12, 31, 22, 59, 0, 0, time.UTC)
	got := hourFolders(from, from.Add(2*time.Hour))
	if diff := cmp.Diff([]string{"2026/12/31/22", "2026/12/31/23", "2027/01/01/00"}, got); diff != "" {
		t.Error(diff)
	}
}
