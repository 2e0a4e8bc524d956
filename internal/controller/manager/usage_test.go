package manager

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
)

func TestUsageSinks(t *testing.T) {
	dir := t.TempDir()
	id, secret := filepath.Join(dir, "id"), filepath.Join(dir, "secret")
	for _, f := range []string{id, secret} {
		if err := os.WriteFile(f, []byte("value\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s3 := func(idFile string) *configv1alpha1.ObjectStore {
		return &configv1alpha1.ObjectStore{Endpoint: "127.0.0.1:9000", Bucket: "b", Insecure: true,
			AccessKeyIDFile: idFile, SecretAccessKeyFile: secret}
	}
	cases := map[string]struct {
		sinks   configv1alpha1.UsageSinks
		want    []string
		wantErr []string // each in the error
	}{
		"stdout":        {sinks: configv1alpha1.UsageSinks{Stdout: ptr.To(true)}, want: []string{"stdout"}},
		"s3":            {sinks: configv1alpha1.UsageSinks{Stdout: ptr.To(false), S3: s3(id)}, want: []string{"s3"}},
		"stdout and s3": {sinks: configv1alpha1.UsageSinks{Stdout: ptr.To(true), S3: s3(id)}, want: []string{"stdout", "s3"}},
		"a missing credential file names the field and the file": {sinks: configv1alpha1.UsageSinks{S3: s3(filepath.Join(dir, "nope"))},
			wantErr: []string{"usage.sinks.s3", "access key id", "nope"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sinks, err := usageSinks(&tc.sinks)
			if len(tc.wantErr) > 0 {
				for _, w := range tc.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("error %v, want one containing %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range sinks {
				got = append(got, s.Name())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("sinks (-want +got):\n%s", diff)
			}
		})
	}
}
