package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestAuditFlags: --audit-sink builds the sinks it names, and refuses a sink it does not know or
// one without its settings, saying which flag to give.
func TestAuditFlags(t *testing.T) {
	dir := t.TempDir()
	id, secret := filepath.Join(dir, "id"), filepath.Join(dir, "secret")
	for _, f := range []string{id, secret} {
		if err := os.WriteFile(f, []byte("value\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, tc := range map[string]struct {
		args      []string
		wantSinks []string
		wantErr   string
	}{
		"none":    {args: nil},
		"stdout":  {args: []string{"--audit-sink=stdout"}, wantSinks: []string{"stdout"}},
		"unknown": {args: []string{"--audit-sink=syslog"}, wantErr: `--audit-sink "syslog" is not a sink: use s3, otlp or stdout`},
		"s3 without bucket": {args: []string{"--audit-sink=s3", "--audit-s3-endpoint=s3.example.com"},
			wantErr: "--audit-s3-bucket"},
		"otlp without endpoint": {args: []string{"--audit-sink=otlp"}, wantErr: "--audit-otlp-endpoint"},
		"s3 and otlp": {args: []string{"--audit-sink=s3,otlp", "--audit-s3-endpoint=s3.example.com", "--audit-s3-bucket=audit",
			"--audit-s3-access-key-id-file=" + id, "--audit-s3-secret-access-key-file=" + secret, "--audit-otlp-endpoint=127.0.0.1:4317"},
			wantSinks: []string{"otlp", "s3"}},
	} {
		t.Run(name, func(t *testing.T) {
			o := &options{}
			f := pflag.NewFlagSet("kubox-router", pflag.ContinueOnError)
			o.addAuditFlags(f)
			if err := f.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			sinks, err := o.auditSinks(t.Context())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("auditSinks: %v; want an error naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range sinks {
				got = append(got, s.Name())
				_ = s.Close(t.Context())
			}
			if strings.Join(got, ",") != strings.Join(tc.wantSinks, ",") {
				t.Errorf("sinks %v, want %v", got, tc.wantSinks)
			}
		})
	}
}
