package cli

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/kubox-dev/kubox/internal/node/checkpoint"
	"github.com/kubox-dev/kubox/internal/node/store"
)

func TestStoreOf(t *testing.T) {
	key := checkpoint.Key("0123456789abcdef0123456789abcdef")
	for name, tc := range map[string]struct {
		flags   []string
		want    string // the store's type, or the error's text
		wantErr bool
	}{
		"none":                   {want: "<nil>"},
		"a shared folder":        {flags: []string{"--snapshot-store=/mnt/store"}, want: "store.Dir"},
		"a relative folder":      {flags: []string{"--snapshot-store=mnt"}, want: "must be an absolute path", wantErr: true},
		"s3 without an endpoint": {flags: []string{"--snapshot-store=s3"}, want: "--snapshot-store=s3: the S3 snapshot store needs an endpoint", wantErr: true},
		"s3 without credentials": {flags: []string{"--snapshot-store=s3", "--snapshot-store-s3-endpoint=127.0.0.1:1", "--snapshot-store-s3-bucket=b"}, want: "a file holding its access key id", wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			o := &options{}
			f := pflag.NewFlagSet("kubox-node", pflag.ContinueOnError)
			f.StringVar(&o.snapshotStore, "snapshot-store", "", "")
			o.addS3Flags(f)
			if err := f.Parse(tc.flags); err != nil {
				t.Fatal(err)
			}
			s, err := o.storeOf(key)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("storeOf: %v, want an error saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := "<nil>"
			if _, ok := s.(store.Dir); ok {
				got = "store.Dir"
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Error(diff)
			}
		})
	}
}
