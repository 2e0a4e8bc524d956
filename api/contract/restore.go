package contract

// The contract between kubox-controller, kubox-node and kubox's patched gVisor shim
// (hack/tools/gvisor/patches/restore-into-pod.patch) about restoring a Pod from a snapshot. The
// shim's patch carries the same values in Go of its own (it is built from gVisor's module, not
// kubox's); restore_test.go fails when the two disagree.
const (
	// RestoreImageAnnotation on a gVisor Pod makes the patched shim restore each of the Pod's
	// containers from this checkpoint image in place of starting it; containerd hands it to the
	// shim through the runtime's pod_annotations. The shim accepts only an image below its
	// kubox_snapshot_root/<the Pod's namespace>/, so a Pod restores only its namespace's
	// snapshots. Written by kubox-controller (the Pods of resumes, forks and pools of restores);
	// read by the shim. No one else may set it: admission refuses every kubox.dev/restore-
	// annotation from others (config/admission/restore_annotations.yaml).
	RestoreImageAnnotation = "kubox.dev/restore-image"

	// RestoreAnnotationPrefix starts every annotation that tells the node's runtime to restore
	// a Pod (RestoreImageAnnotation); admission and the controller treat the prefix as reserved.
	RestoreAnnotationPrefix = "kubox.dev/restore-"

	// SnapshotManifestDomain separates the MAC of a snapshot's manifest (kubox-node signs it,
	// the shim checks it before a restore) from every other use of the node's key; the MAC is
	// over "<domain>\n<namespace>\n<snapshot>\n" and the manifest.
	SnapshotManifestDomain = "kubox.dev/snapshot-manifest/v1"
)
