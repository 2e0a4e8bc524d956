package usage

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

func day(d, h int) time.Time { return time.Date(2026, 12, d, h, 0, 0, 0, time.UTC) }

// TestQueryMatches: a query selects by namespace, template, principal and claim, and by a time
// range a record's life overlaps.
func TestQueryMatches(t *testing.T) {
	rec := Record{Namespace: "team-a", Template: "python", Principal: "alice", Claim: "c1", Start: day(7, 8), End: day(7, 10)}
	for name, tc := range map[string]struct {
		q    Query
		want bool
	}{
		"everything in a range it lies in":    {q: Query{Since: day(7, 0), Until: day(8, 0)}, want: true},
		"a range inside its life overlaps":    {q: Query{Since: day(7, 9), Until: day(7, 9).Add(time.Minute)}, want: true},
		"a range that starts at its end":      {q: Query{Since: day(7, 10), Until: day(7, 11)}, want: true},
		"a range that ends at its start":      {q: Query{Since: day(7, 7), Until: day(7, 8)}},
		"a range after its end":               {q: Query{Since: day(7, 11), Until: day(7, 12)}},
		"a range before its start":            {q: Query{Since: day(6, 0), Until: day(7, 0)}},
		"its namespace":                       {q: Query{Namespace: "team-a", Since: day(7, 0), Until: day(8, 0)}, want: true},
		"another namespace":                   {q: Query{Namespace: "team-b", Since: day(7, 0), Until: day(8, 0)}},
		"its template, principal and claim":   {q: Query{Template: "python", Principal: "alice", Claim: "c1", Since: day(7, 0), Until: day(8, 0)}, want: true},
		"another template":                    {q: Query{Template: "node", Since: day(7, 0), Until: day(8, 0)}},
		"another principal":                   {q: Query{Principal: "bob", Since: day(7, 0), Until: day(8, 0)}},
		"another claim":                       {q: Query{Claim: "c2", Since: day(7, 0), Until: day(8, 0)}},
		"a principal prefix is not a match":   {q: Query{Principal: "ali", Since: day(7, 0), Until: day(8, 0)}},
		"a namespace prefix is not a match":   {q: Query{Namespace: "team", Since: day(7, 0), Until: day(8, 0)}},
		"a claim in a range it does not hit":  {q: Query{Claim: "c1", Since: day(8, 0), Until: day(9, 0)}},
		"ended in the range":                  {q: Query{Ended: true, Since: day(7, 10), Until: day(7, 11)}, want: true},
		"ended at the range's end, so not in": {q: Query{Ended: true, Since: day(7, 9), Until: day(7, 10)}},
		"overlapping but ended later":         {q: Query{Ended: true, Since: day(7, 8), Until: day(7, 9)}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.q.Matches(&rec); got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDayFolders: the reader lists the sink's day folders from the day of since to the day of
// the last end a record can have, and refuses a range longer than MaxReadDays.
func TestDayFolders(t *testing.T) {
	for name, tc := range map[string]struct {
		since, last time.Time
		want        []string
		wantErr     string
	}{
		"one day":             {since: day(7, 1), last: day(7, 23), want: []string{"2026/12/07"}},
		"across a month":      {since: time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC), last: day(1, 1), want: []string{"2026/11/30", "2026/12/01"}},
		"in UTC, not locally": {since: time.Date(2026, 12, 7, 23, 30, 0, 0, time.FixedZone("x", -2*3600)), last: day(8, 2), want: []string{"2026/12/08"}},
		"too long":            {since: day(7, 0).AddDate(-2, 0, 0), last: day(7, 0), wantErr: "more than 400 days"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := dayFolders(tc.since, tc.last)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("dayFolders: %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("dayFolders (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeObject: an object is accepted only in the exact form the S3 sink writes: one
// kubox.dev/usage/v1 record whose own object name is the object's name. Anything else, an
// object put under a folder it does not belong to included, is rejected with the reason.
func TestDecodeObject(t *testing.T) {
	good := `{"schema":"kubox.dev/usage/v1","namespace":"team-a","name":"sb","uid":"u-1","start":"2026-12-07T08:00:00Z","end":"2026-12-07T10:00:00Z","runningSeconds":7200,"measured":null}`
	want := Record{Schema: SchemaVersion, Namespace: "team-a", Name: "sb", UID: "u-1", Start: day(7, 8), End: day(7, 10),
		Figures: Figures{RunningSeconds: 7200}}
	for name, tc := range map[string]struct {
		key, body string
		wantErr   string
	}{
		"the sink's object":         {key: "usage/2026/12/07/team-a/u-1.ndjson", body: good + "\n"},
		"not JSON":                  {key: "usage/2026/12/07/team-a/u-1.ndjson", body: "not json\n", wantErr: "not a usage record"},
		"empty":                     {key: "usage/2026/12/07/team-a/u-1.ndjson", body: "", wantErr: "empty"},
		"two records":               {key: "usage/2026/12/07/team-a/u-1.ndjson", body: good + "\n" + good + "\n", wantErr: "more than one line"},
		"another schema":            {key: "usage/2026/12/07/team-a/u-1.ndjson", body: strings.Replace(good, "usage/v1", "usage/v9", 1), wantErr: `schema "kubox.dev/usage/v9"`},
		"under another namespace":   {key: "usage/2026/12/07/team-b/u-1.ndjson", body: good, wantErr: "usage/2026/12/07/team-a/u-1.ndjson"},
		"under another UID":         {key: "usage/2026/12/07/team-a/u-2.ndjson", body: good, wantErr: "is not this object's name"},
		"under another day":         {key: "usage/2026/12/06/team-a/u-1.ndjson", body: good, wantErr: "is not this object's name"},
		"a field of the wrong type": {key: "usage/2026/12/07/team-a/u-1.ndjson", body: strings.Replace(good, "7200", `"7200"`, 1), wantErr: "not a usage record"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := decodeObject("usage", tc.key, []byte(tc.body))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("decodeObject: %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("decodeObject (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAggregate: rows add up the records of a group, every group but the namespace's within
// its namespace (a principal, template or claim is a tenant's name: the same name in another
// namespace is another tenant's), and measured figures are kept apart from requested ones.
func TestAggregate(t *testing.T) {
	rec := func(ns, name, uid, tmpl, principal, claim string, running float64, m *Measured) Record {
		return Record{Schema: SchemaVersion, Namespace: ns, Name: name, UID: uid, Template: tmpl, Principal: principal, Claim: claim,
			Figures: Figures{RunningSeconds: running, SuspendedSeconds: 1, Wakes: 1, RequestedCPUCoreSeconds: running / 2,
				RequestedMemoryGiBSeconds: running / 4}, Measured: m}
	}
	a1 := rec("team-a", "a1", "u1", "python", "alice", "c1", 100, &Measured{CPUSeconds: 10, MemoryGiBSeconds: 5, Samples: 3})
	a2 := rec("team-a", "a2", "u2", "python", "alice", "c2", 200, nil)
	a3 := rec("team-a", "a3", "u3", "node", "bob", "c3", 40, nil)
	evil := rec("evil", "e1", "u4", "python", "alice", "c1", 1000, nil)
	all := []Record{a1, a2, a3, evil}
	row := func(ns, value, uid string, n int, running, suspended float64, wakes int64, m *RowMeasured) Row {
		return Row{Namespace: ns, Value: value, UID: uid, Sandboxes: n, Figures: Figures{RunningSeconds: running, SuspendedSeconds: suspended,
			Wakes: wakes, RequestedCPUCoreSeconds: running / 2, RequestedMemoryGiBSeconds: running / 4}, Measured: m}
	}
	partial := &RowMeasured{Sandboxes: 1, CPUSeconds: 10, MemoryGiBSeconds: 5}
	for name, tc := range map[string]struct {
		records []Record
		by      By
		want    []Row
		wantErr string
	}{
		"by namespace": {records: all, by: ByNamespace, want: []Row{
			row("evil", "", "", 1, 1000, 1, 1, nil), row("team-a", "", "", 3, 340, 3, 3, partial)}},
		"by principal: another namespace's alice is not team-a's": {records: all, by: ByPrincipal, want: []Row{
			row("evil", "alice", "", 1, 1000, 1, 1, nil), row("team-a", "alice", "", 2, 300, 2, 2, partial), row("team-a", "bob", "", 1, 40, 1, 1, nil)}},
		"by template": {records: all, by: ByTemplate, want: []Row{
			row("evil", "python", "", 1, 1000, 1, 1, nil), row("team-a", "node", "", 1, 40, 1, 1, nil), row("team-a", "python", "", 2, 300, 2, 2, partial)}},
		"by claim": {records: []Record{a1, evil}, by: ByClaim, want: []Row{
			row("evil", "c1", "", 1, 1000, 1, 1, nil), row("team-a", "c1", "", 1, 100, 1, 1, partial)}},
		"by sandbox: one row per UID": {records: []Record{a1, rec("team-a", "a1", "u9", "", "", "", 1, nil)}, by: BySandbox, want: []Row{
			row("team-a", "a1", "u1", 1, 100, 1, 1, partial), row("team-a", "a1", "u9", 1, 1, 1, 1, nil)}},
		"every record measured": {records: []Record{a1, a1}, by: ByNamespace, want: []Row{
			row("team-a", "", "", 2, 200, 2, 2, &RowMeasured{Sandboxes: 2, CPUSeconds: 20, MemoryGiBSeconds: 10})}},
		"no records":    {by: ByNamespace, want: []Row{}},
		"an unknown by": {records: all, by: "pool", wantErr: `"pool" is not one of namespace, template, principal, claim, sandbox`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Aggregate(tc.records, tc.by)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Aggregate: %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Aggregate (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReaderReadsWhatTheSinkWrote writes records with the S3 sink on a real S3 server
// (SeaweedFS, only with $KUBOX_SEAWEEDFS) and reads them back with Reader: it selects by
// namespace, principal and an overlapping range, finds a record that ended after the range
// (in a later day's folder), counts a sandbox whose record was written on two days once (the
// later), skips a damaged object and one put in a folder it does not belong to, naming them,
// and stops past the limit.
func TestReaderReadsWhatTheSinkWrote(t *testing.T) {
	srv := s3server.Start(t)
	cfg := objstore.Config{Endpoint: srv.Endpoint, Bucket: srv.Bucket, Prefix: "usage", Insecure: true,
		AccessKeyIDFile: srv.AccessKeyIDFile, SecretAccessKeyFile: srv.SecretAccessKeyFile}
	sink, err := NewS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(ns, uid, principal string, start, end time.Time, running float64) Record {
		return Record{Schema: SchemaVersion, Namespace: ns, Name: "sb-" + uid, UID: uid, Principal: principal, Start: start, End: end,
			Figures: Figures{RunningSeconds: running}}
	}
	a1 := rec("team-a", "u1", "alice", day(7, 8), day(7, 9), 3600)
	a2 := rec("team-a", "u2", "bob", day(7, 10), day(9, 10), 7200) // ended two days later
	a3early := rec("team-a", "u3", "alice", day(7, 11), day(7, 12), 60)
	a3 := rec("team-a", "u3", "alice", day(7, 11), day(8, 1), 600) // the same sandbox, written again later
	old := rec("team-a", "u5", "alice", day(1, 0), day(1, 1), 1)
	other := rec("team-b", "u4", "alice", day(7, 8), day(7, 9), 5)
	if err := sink.Write(t.Context(), []Record{a1, a2, a3early, a3, old, other}); err != nil {
		t.Fatal(err)
	}
	put := func(key, body string) {
		t.Helper()
		if _, err := srv.Client.PutObject(t.Context(), srv.Bucket, key, bytes.NewReader([]byte(body)), int64(len(body)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	damaged := "usage/2026/12/07/team-a/u7.ndjson"
	put(damaged, "not json\n")
	misplaced := "usage/2026/12/07/team-a/u8.ndjson" // team-b's record under team-a's folder
	put(misplaced, `{"schema":"kubox.dev/usage/v1","namespace":"team-b","uid":"u8","end":"2026-12-07T09:00:00Z"}`+"\n")

	r, err := NewReader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.Now = func() time.Time { return day(10, 0) }
	for name, tc := range map[string]struct {
		q           Query
		want        []Record
		truncated   bool
		wantDamaged []string
	}{
		"a namespace's day, a later end and a later write included": {
			q: Query{Namespace: "team-a", Since: day(7, 0), Until: day(8, 0)}, want: []Record{a1, a3, a2},
			wantDamaged: []string{damaged, misplaced}},
		"a principal": {q: Query{Namespace: "team-a", Principal: "alice", Since: day(7, 0), Until: day(8, 0)}, want: []Record{a1, a3},
			wantDamaged: []string{damaged, misplaced}},
		"every namespace": {q: Query{Principal: "alice", Since: day(7, 0), Until: day(7, 10)}, want: []Record{a1, other},
			wantDamaged: []string{damaged, misplaced}},
		"another namespace's records are not a's": {q: Query{Namespace: "team-b", Since: day(7, 0), Until: day(8, 0)}, want: []Record{other}},
		"ended in a day: each sandbox in one day only": {q: Query{Namespace: "team-a", Ended: true, Since: day(7, 0), Until: day(8, 0)},
			want: []Record{a1}, wantDamaged: []string{damaged, misplaced}},
		"past the limit": {q: Query{Namespace: "team-a", Since: day(7, 0), Until: day(8, 0), Limit: 1}, truncated: true},
		"nothing after":  {q: Query{Namespace: "team-a", Since: day(9, 11), Until: day(9, 12)}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := r.Read(t.Context(), tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if tc.truncated {
				if !got.Truncated || len(got.Records) > tc.q.Limit {
					t.Errorf("Read past a limit of %d: truncated %v, %d records; want truncated and at most the limit", tc.q.Limit, got.Truncated, len(got.Records))
				}
				return
			}
			if diff := cmp.Diff(tc.want, got.Records); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			var damagedKeys []string
			for _, d := range got.Damaged {
				damagedKeys = append(damagedKeys, strings.SplitN(d, ": ", 2)[0])
			}
			if diff := cmp.Diff(tc.wantDamaged, damagedKeys); diff != "" {
				t.Errorf("damaged objects (-want +got):\n%s\n%q", diff, got.Damaged)
			}
		})
	}
}
