package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubox-dev/kubox/internal/usage"
)

// TestUsageQuery: kubox usage's flags give the query: --since is a duration before --until or
// an RFC 3339 time, the namespace is -n's unless -A, and bad values are errors naming the flag
// and the form it takes.
func TestUsageQuery(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return time.Date(2026, 12, 7, h, 0, 0, 0, time.UTC) }
	for name, tc := range map[string]struct {
		args    []string
		want    usage.Query
		wantErr string
	}{
		"defaults: the namespace's last day": {want: usage.Query{Namespace: "team-a", Since: now.Add(-24 * time.Hour), Until: now, Limit: 10000}},
		"every namespace":                    {args: []string{"-A"}, want: usage.Query{Since: now.Add(-24 * time.Hour), Until: now, Limit: 10000}},
		"since a duration before until": {args: []string{"--since", "2h", "--until", "2026-12-07T09:00:00Z"},
			want: usage.Query{Namespace: "team-a", Since: at(7), Until: at(9), Limit: 10000}},
		"since a time": {args: []string{"--since", "2026-12-07T08:00:00Z", "--limit", "0"},
			want: usage.Query{Namespace: "team-a", Since: at(8), Until: now}},
		"selectors": {args: []string{"--principal", "alice", "--template", "python", "--claim", "c1"},
			want: usage.Query{Namespace: "team-a", Principal: "alice", Template: "python", Claim: "c1", Since: now.Add(-24 * time.Hour), Until: now, Limit: 10000}},
		"ended": {args: []string{"--ended", "--since", "2026-12-07T08:00:00Z", "--until", "2026-12-07T09:00:00Z"},
			want: usage.Query{Namespace: "team-a", Ended: true, Since: at(8), Until: at(9), Limit: 10000}},
		"a bad since":       {args: []string{"--since", "yesterday"}, wantErr: `--since "yesterday" is neither a duration such as 24h nor an RFC 3339 time`},
		"a negative since":  {args: []string{"--since", "-1h"}, wantErr: `--since "-1h" is negative`},
		"a bad until":       {args: []string{"--until", "9:00"}, wantErr: `--until "9:00" is not an RFC 3339 time`},
		"since after until": {args: []string{"--since", "2026-12-07T10:00:00Z", "--until", "2026-12-07T09:00:00Z"}, wantErr: "is not before --until"},
		"a negative limit":  {args: []string{"--limit", "-1"}, wantErr: "--limit -1 is negative"},
		"an unknown by":     {args: []string{"--by", "pool"}, wantErr: `--by "pool" is not one of namespace, template, principal, claim, sandbox`},
		"yaml":              {args: []string{"-o", "yaml"}, wantErr: `-o "yaml" is not one of table, json`},
	} {
		t.Run(name, func(t *testing.T) {
			o := &usageOptions{}
			if err := usageCommand(newGlobalOptions(), o).ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := o.query(now, "team-a")
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

// TestPrintUsageTable: the table has a column for the group, requested figures always, and
// measured figures only where records had them: "-" for none, and how many of the row's
// sandboxes when only some were measured, so that a part is never shown as the whole.
func TestPrintUsageTable(t *testing.T) {
	rows := []usage.Row{
		{Namespace: "team-a", Value: "alice", Sandboxes: 2, Figures: usage.Figures{RunningSeconds: 300, SuspendedSeconds: 20, Wakes: 3,
			RequestedCPUCoreSeconds: 150, RequestedMemoryGiBSeconds: 75.5}, Measured: &usage.RowMeasured{Sandboxes: 1, CPUSeconds: 10, MemoryGiBSeconds: 5}},
		{Namespace: "team-a", Value: "", Sandboxes: 1, Figures: usage.Figures{RunningSeconds: 40}},
		{Namespace: "team-b", Value: "bob", Sandboxes: 1, Figures: usage.Figures{RunningSeconds: 1}, Measured: &usage.RowMeasured{Sandboxes: 1, CPUSeconds: 0.5, MemoryGiBSeconds: 0.25}},
		{Namespace: "team-b", Value: "\x1b[2Jx", Sandboxes: 1},
	}
	var buf bytes.Buffer
	if err := printUsageTable(&buf, usage.ByPrincipal, rows); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"NAMESPACE  PRINCIPAL   SANDBOXES  RUNNING-S  SUSPENDED-S  WAKES  REQUESTED-CPU-CORE-S  REQUESTED-MEM-GIB-S  MEASURED-CPU-CORE-S  MEASURED-MEM-GIB-S",
		"team-a     alice       2          300.0      20.0         3      150.00                75.50                10.00 (1 of 2)       5.00 (1 of 2)",
		"team-a     <none>      1          40.0       0.0          0      0.00                  0.00                 -                    -",
		"team-b     bob         1          1.0        0.0          0      0.00                  0.00                 0.50                 0.25",
		`team-b     "\x1b[2Jx"  1          0.0        0.0          0      0.00                  0.00                 -                    -`,
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}
