// Package checkpoint is the node side of memory-preserving pause, snapshots and fork:
// it checkpoints a gVisor Pod sandbox running on this node into a directory and restores such a
// directory into a new gVisor sandbox.
//
// It drives runsc itself, with the runsc root containerd's gVisor shim uses, because the open
// shim offers no checkpoint or restore over the wire (docs/checkpoint.md has the measurements
// behind that choice). A checkpoint continues in a new Pod through kubox's patch to the shim: a
// Pod annotated contract.RestoreImageAnnotation with ImagePath(dir) is restored from the checkpoint in
// place of started, with its own IP, cgroup and lifecycle (ShapeForRestore), or, from a
// Filesystem checkpoint, started afresh on the checkpoint's files (ShapeForFilesystemRestore). Restore instead restores a directory
// into a bare sandbox outside containerd (no network beyond loopback), for inspection and tests.
// A checkpoint directory holds:
//
//	image/             runsc's image files (checkpoint.img, pages*.img or the fscheckpoint set)
//	specs/<n>.json     the OCI spec of each container of the Pod, the sandbox container first
//	files/<n>/<m>      copies of the Pod's private bind mounts (hosts, hostname, resolv.conf,
//	                   service-account token, termination log), which die with the Pod
//	manifest.json      written last: size, duration, and a SHA-256 per file and over them all
//
// Checkpoint returns only once Verify has read every file back against the manifest, so a
// directory with a manifest that verifies is a complete snapshot; Restore verifies it again
// before it uses it.
package checkpoint
