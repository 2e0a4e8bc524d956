package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/kubox-dev/kubox/internal/node/checkpoint"
	"github.com/kubox-dev/kubox/internal/node/store"
	"github.com/kubox-dev/kubox/internal/objstore"
)

// addS3Flags adds the flags of the S3 snapshot store (--snapshot-store=s3). The credentials are
// read from files (a mounted Secret), never from a flag's value.
func (o *options) addS3Flags(f *pflag.FlagSet) {
	o.s3.AddFlags(f, objstore.Flags{Name: "snapshot-store-s3", When: "with --snapshot-store=s3",
		Bucket:   "the bucket every node sharing the store uses",
		Prefix:   "the folder of the bucket the store uses (chunks/ and snapshots/ below it); empty: the whole bucket",
		Insecure: " (a store on the node's own network only: the snapshots are still verified)"})
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
