package sandboxsnapshot

import (
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	nodev1 "github.com/kubox-dev/kubox/proto/kubox/node/v1"
)

// storeOf is status.store for kubox-node's answer s: where its snapshot store keeps the copy, nil
// when the snapshot is not stored or kubox-node did not say (an older kubox-node), or said a kind
// the API does not know.
func storeOf(s *nodev1.Snapshot) *extv1beta1.SnapshotStore {
	kind := extv1beta1.SnapshotStoreKind(s.GetStoreKind())
	if !s.GetStored() || s.GetStoreLocation() == "" || (kind != extv1beta1.SnapshotStoreS3 && kind != extv1beta1.SnapshotStoreFilesystem) {
		return nil
	}
	return &extv1beta1.SnapshotStore{Kind: kind, Location: s.GetStoreLocation()}
}
