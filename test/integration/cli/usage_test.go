package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/minio/minio-go/v7"

	"github.com/kubox-dev/kubox/internal/cli"
	"github.com/kubox-dev/kubox/internal/objstore"
	"github.com/kubox-dev/kubox/internal/testutil/s3server"
	"github.com/kubox-dev/kubox/internal/usage"
)

// usageOutput is kubox usage -o json.
type usageOutput struct {
	By    string      `json:"by"`
	Since time.Time   `json:"since"`
	Until time.Time   `json:"until"`
	Rows  []usage.Row `json:"rows"`
}

// TestKuboxUsageAddsUpTheSinksRecords writes usage records through the controller's S3 sink to
// a real bucket (SeaweedFS, only with $KUBOX_SEAWEEDFS) and runs `kubox usage` with the
// bucket's --usage-s3-* flags: it adds up a namespace's records per principal, leaves out a
// record that ended before the range, keeps measured figures apart from requested ones, names
// a damaged object and carries on, never adds another namespace's "alice" to team-a's, with
// --ended counts a sandbox only in the range it ended in, and without a bucket says which flags
// to give.
func TestKuboxUsageAddsUpTheSinksRecords(t *testing.T) {
	bucket := s3server.Start(t)
	cfg := objstore.Config{Endpoint: bucket.Endpoint, Bucket: bucket.Bucket, Prefix: "usage", Insecure: true,
		AccessKeyIDFile: bucket.AccessKeyIDFile, SecretAccessKeyFile: bucket.SecretAccessKeyFile}
	sink, err := usage.NewS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	rec := func(ns, uid, principal string, ago time.Duration, running, cpu float64, m *usage.Measured) usage.Record {
		return usage.Record{Schema: usage.SchemaVersion, Namespace: ns, Name: "sb-" + uid, UID: uid, Principal: principal, Template: "python",
			Start: now.Add(-ago - time.Hour), End: now.Add(-ago), Figures: usage.Figures{RunningSeconds: running, SuspendedSeconds: 10,
				Wakes: 1, RequestedCPUCoreSeconds: cpu, RequestedMemoryGiBSeconds: running / 4}, Measured: m}
	}
	records := []usage.Record{
		rec("team-a", "u1", "alice", time.Hour, 3000, 1500, &usage.Measured{CPUSeconds: 120, MemoryGiBSeconds: 60, Samples: 10}),
		rec("team-a", "u2", "alice", 2*time.Hour, 600, 300, nil),
		rec("team-a", "u3", "bob", time.Hour, 100, 50, nil),
		rec("team-a", "u4", "alice", 72*time.Hour, 99999, 99999, nil), // ended before the last day
		rec("evil", "u5", "alice", time.Hour, 77777, 77777, nil),      // another namespace's "alice"
	}
	if err := sink.Write(t.Context(), records); err != nil {
		t.Fatal(err)
	}
	damaged := "usage/" + now.Format("2006/01/02") + "/team-a/u6.ndjson"
	if _, err := bucket.Client.PutObject(t.Context(), bucket.Bucket, damaged, strings.NewReader("not json\n"), 9, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--kubeconfig", "/dev/null", "--usage-s3-endpoint", bucket.Endpoint, "--usage-s3-bucket", bucket.Bucket,
		"--usage-s3-prefix", "usage", "--usage-s3-insecure", "--usage-s3-access-key-id-file", bucket.AccessKeyIDFile,
		"--usage-s3-secret-access-key-file", bucket.SecretAccessKeyFile}

	out, errOut := mustKubox(t, append([]string{"usage", "-n", "team-a", "--by", "principal", "-o", "json"}, flags...)...)
	var got usageOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("kubox usage -o json printed %q, not its JSON: %v", out, err)
	}
	alice := usage.Row{Namespace: "team-a", Value: "alice", Sandboxes: 2, Figures: usage.Figures{RunningSeconds: 3600, SuspendedSeconds: 20,
		Wakes: 2, RequestedCPUCoreSeconds: 1800, RequestedMemoryGiBSeconds: 900}, Measured: &usage.RowMeasured{Sandboxes: 1, CPUSeconds: 120, MemoryGiBSeconds: 60}}
	bob := usage.Row{Namespace: "team-a", Value: "bob", Sandboxes: 1, Figures: usage.Figures{RunningSeconds: 100, SuspendedSeconds: 10,
		Wakes: 1, RequestedCPUCoreSeconds: 50, RequestedMemoryGiBSeconds: 25}}
	if diff := cmp.Diff([]usage.Row{alice, bob}, got.Rows); diff != "" {
		t.Errorf("kubox usage -n team-a --by principal -o json rows (-want +got):\n%s", diff)
	}
	if got.By != "principal" || !got.Until.After(now.Add(-time.Minute)) || got.Until.Sub(got.Since) != 24*time.Hour {
		t.Errorf("kubox usage -o json says by %q from %s until %s; want principal, the last 24h", got.By, got.Since, got.Until)
	}
	if !strings.Contains(errOut, damaged) {
		t.Errorf("kubox usage did not name the damaged object %s on stderr:\n%s", damaged, errOut)
	}

	table, _ := mustKubox(t, append([]string{"usage", "-n", "team-a", "--by", "principal"}, flags...)...)
	for _, want := range []string{
		"NAMESPACE  PRINCIPAL  SANDBOXES  RUNNING-S  SUSPENDED-S  WAKES  REQUESTED-CPU-CORE-S  REQUESTED-MEM-GIB-S  MEASURED-CPU-CORE-S  MEASURED-MEM-GIB-S",
		"team-a     alice      2          3600.0     20.0         2      1800.00               900.00               120.00 (1 of 2)      60.00 (1 of 2)",
		"team-a     bob        1          100.0      10.0         1      50.00                 25.00                -                    -",
	} {
		if !strings.Contains(table, want+"\n") {
			t.Errorf("kubox usage's table has no line %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "77777") || strings.Contains(table, "99999") {
		t.Errorf("kubox usage -n team-a counted another namespace's or an older record:\n%s", table)
	}

	// Every namespace, one principal: evil's "alice" is its own row, never added to team-a's.
	out, _ = mustKubox(t, append([]string{"usage", "-A", "--by", "principal", "--principal", "alice", "-o", "json"}, flags...)...)
	got = usageOutput{}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("kubox usage -A -o json printed %q, not its JSON: %v", out, err)
	}
	evil := usage.Row{Namespace: "evil", Value: "alice", Sandboxes: 1, Figures: usage.Figures{RunningSeconds: 77777, SuspendedSeconds: 10,
		Wakes: 1, RequestedCPUCoreSeconds: 77777, RequestedMemoryGiBSeconds: 77777.0 / 4}}
	if diff := cmp.Diff([]usage.Row{evil, alice}, got.Rows); diff != "" {
		t.Errorf("kubox usage -A --principal alice rows (-want +got):\n%s", diff)
	}

	// A billing period: --ended counts a sandbox in the range it ended in, and only there.
	period := []string{"--since", now.Add(-150 * time.Minute).Format(time.RFC3339), "--until", now.Add(-90 * time.Minute).Format(time.RFC3339)}
	for name, tc := range map[string]struct {
		args []string
		want []string
	}{
		"overlapping the range": {want: []string{"u1", "u2", "u3"}},
		"ended in the range":    {args: []string{"--ended"}, want: []string{"u2"}},
	} {
		out, _ = mustKubox(t, append(append(append([]string{"usage", "-n", "team-a", "--by", "sandbox", "-o", "json"}, period...), tc.args...), flags...)...)
		got = usageOutput{}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: kubox usage -o json printed %q, not its JSON: %v", name, out, err)
		}
		var uids []string
		for _, r := range got.Rows {
			uids = append(uids, r.UID)
		}
		if diff := cmp.Diff(tc.want, uids); diff != "" {
			t.Errorf("%s: kubox usage --by sandbox %s printed the sandboxes (-want +got):\n%s", name, strings.Join(tc.args, " "), diff)
		}
	}

	// No bucket: the error names the flags.
	var stdout, stderr bytes.Buffer
	if code := cli.Execute(t.Context(), []string{"--kubeconfig", "/dev/null", "usage", "-n", "team-a"}, strings.NewReader(""), &stdout, &stderr); code == 0 ||
		!strings.Contains(stderr.String(), "--usage-s3-endpoint, --usage-s3-bucket") {
		t.Errorf("kubox usage without a bucket exited %d and printed %q; want an error naming --usage-s3-endpoint, --usage-s3-bucket", code, stderr.String())
	}
}

// mustKubox runs the kubox command line in-process with args and returns what it printed,
// failing t unless it exits 0.
func mustKubox(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := cli.Execute(t.Context(), args, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("kubox %s exited %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}
