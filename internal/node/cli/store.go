package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/kubox-dev/kubox/internal/node/checkpoint"
	"github.com/kubox-dev/kubox/internal/node/store"
)

// addS3Flags adds the flags of the S3 snapshot store (--snapshot-store=s3). The credentials are
// read from files (a mounted Secret), never from a flag's value.
func (o *options) addS3Flags(f *pflag.FlagSet) {
	f.StringVar(&o.s3.Endpoint, "snapshot-store-s3-endpoint", "", "with --snapshot-store=s3, host:port of the S3 API (AWS S3, MinIO, SeaweedFS, Ceph RGW, ...)")
	f.StringVar(&o.s3.Bucket, "snapshot-store-s3-bucket", "", "with --snapshot-store=s3, the bucket every node sharing the store uses")
	f.StringVar(&o.s3.Prefix, "snapshot-store-s3-prefix", "", "with --snapshot-store=s3, the folder of the bucket the store uses (chunks/ and snapshots/ below it); empty: the whole bucket")
	f.StringVar(&o.s3.Region, "snapshot-store-s3-region", "", "with --snapshot-store=s3, the bucket's region; empty: asked of the endpoint")
	f.BoolVar(&o.s3.Insecure, "snapshot-store-s3-insecure", false, "with --snapshot-store=s3, talk plain HTTP to the endpoint instead of TLS (a store on the node's own network only: the snapshots are still verified)")
	f.StringVar(&o.s3.AccessKeyIDFile, "snapshot-store-s3-access-key-id-file", "", "with --snapshot-store=s3, file holding the access key id (a mounted Secret's key)")
	f.StringVar(&o.s3.SecretAccessKeyFile, "snapshot-store-s3-secret-access-key-file", "", "with --snapshot-store=s3, file holding the secret access key (a mounted Secret's key)")
}

// storeOf returns the snapshot store --snapshot-store selects: none, s3, or a shared folder.
func (o *options) storeOf(key checkpoint.Key) (store.Store, error) {
	switch {
	case o.snapshotStore == "":
		return nil, nil
	case o.snapshotStore == "s3":
		s, err := store.NewS3(o.s3, key)
		if err != nil {
			return nil, fmt.Errorf("--snapshot-store=s3: %w", err)
		}
		return s, nil
	case !filepath.IsAbs(o.snapshotStore):
		return nil, fmt.Errorf("--snapshot-store %q must be an absolute path, where the shared volume is mounted, or s3", o.snapshotStore)
	}
	return store.Dir{Root: o.snapshotStore, Key: key}, nil
}
