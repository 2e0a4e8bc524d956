package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubox-dev/kubox/internal/audit"
)

// TestAuditQuery: kubox audit's time flags give the query's range, and bad values are errors
// naming the flag and the form it takes.
func TestAuditQuery(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	day := audit.Query{From: now.Add(-24 * time.Hour), To: now, Limit: 1000}
	for name, tc := range map[string]struct {
		args    []string
		want    audit.Query
		wantErr string
	}{
		"defaults: the last day, 1000 records": {want: day},
		"since":                                {args: []string{"--since", "90m"}, want: audit.Query{From: now.Add(-90 * time.Minute), To: now, Limit: 1000}},
		"from and until": {args: []string{"--from", "2026-12-07T08:00:00Z", "--until", "2026-12-07T09:00:00Z", "--limit", "0"},
			want: audit.Query{From: time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC), To: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)}},
		"since before until": {args: []string{"--until", "2026-12-07T09:00:00Z", "--since", "1h"},
			want: audit.Query{From: time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC), To: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC), Limit: 1000}},
		"a bad from":       {args: []string{"--from", "yesterday"}, wantErr: `--from "yesterday" is not an RFC 3339 time`},
		"a bad until":      {args: []string{"--until", "9:00"}, wantErr: `--until "9:00" is not an RFC 3339 time`},
		"from after until": {args: []string{"--from", "2026-12-07T10:00:00Z", "--until", "2026-12-07T09:00:00Z"}, wantErr: "is not before --until"},
		"a negative limit": {args: []string{"--limit", "-1"}, wantErr: "--limit -1 is negative"},
		"yaml":             {args: []string{"-o", "yaml"}, wantErr: `-o "yaml" is not one of table, json`},
	} {
		t.Run(name, func(t *testing.T) {
			o := &auditOptions{}
			if err := auditCommand(newGlobalOptions(), o).ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := o.query(now)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("query: %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("query (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAuditWhat: the WHAT column says what a record's request did, on one line.
func TestAuditWhat(t *testing.T) {
	for name, tc := range map[string]struct {
		r    audit.Record
		want string
	}{
		"exec": {r: audit.Record{Method: "POST", Path: "/p", Operation: &audit.Operation{Kind: audit.OpExec, Command: []string{"/bin/sh", "-c", "echo a\nrm -rf /"}}},
			want: "exec /bin/sh -c echo a rm -rf /"},
		"a file move": {r: audit.Record{Operation: &audit.Operation{Kind: audit.OpFile, Action: "move", Path: "/a", Destination: "/b"}}, want: "file move /a -> /b"},
		"rpc":         {r: audit.Record{Operation: &audit.Operation{Kind: audit.OpRPC, Procedure: "/x.Y/Z"}}, want: "rpc /x.Y/Z"},
		"unread":      {r: audit.Record{Operation: &audit.Operation{Kind: audit.OpExec, Unread: "too large"}}, want: "exec (unread: too large)"},
		"a port":      {r: audit.Record{Method: "GET", Path: "/index.html"}, want: "GET /index.html"},
		"long":        {r: audit.Record{Method: "GET", Path: "/" + strings.Repeat("é", 200)}, want: "GET /" + strings.Repeat("é", 92) + "..."},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, auditWhat(&tc.r)); diff != "" {
				t.Error(diff)
			}
		})
	}
}
