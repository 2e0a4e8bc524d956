// Package sandboxsnapshot implements the SandboxSnapshot controller (a kubox addition): it has
// kubox-node checkpoint a running sandbox into a snapshot, and deletes the snapshot's files with it.
//
// A SandboxSnapshot names a running Sandbox; the controller asks kubox-node on the Sandbox's node
// to checkpoint its Pod without stopping it (runsc checkpoint --leave-running), under the
// snapshot's UID, and records what kubox-node verified — the image folder, size, SHA-256, how
// long the sandbox was paused — in status.snapshot with Ready=True/Taken. A snapshot is taken once:
// the spec is immutable, and a checkpoint kubox-node refuses (the Pod is not gVisor's, the node
// has no kubox-node) ends in Ready=False/CheckpointFailed, which the controller does not retry.
// While the Sandbox or its running Pod is missing it says so (SandboxNotRunning) and looks again.
//
// It records where the snapshot is from kubox-node's answer: status.store (the snapshot store's
// kind and location, no credentials) and status.nodes (the node that took it). It adds to
// status.nodes every node that fetched a copy from the store for a restore, seen on the Pods of
// the Sandboxes that start from the snapshot, and drops a node once it is gone (nodes.go).
//
// A finalizer deletes the snapshot's files from its node, and from kubox-node's snapshot store,
// when the SandboxSnapshot is deleted. When that node is gone its own files went with it, but the
// store's copy (memory with secrets) did not: any other Ready snapshot node's kubox-node deletes
// it, and every node that fetched a copy removes it once the store no longer holds it. While a
// copy cannot be deleted, FilesDeleted=False says which, where and why, and the controller tries
// again every deletionRetry; with no node to ask, the finalizer goes after deletionGiveUp with a
// Warning event (FilesNotDeleted) naming the copy left (deletion.go).
//
// spec.retention (retention.go) deletes a snapshot once it is older than maxAge or not among the
// maxCount newest Ready snapshots of its Sandbox in its namespace (extv1beta1.RetentionCheck);
// a snapshot's retention deletes that snapshot only. The storage the snapshots use is exported
// per namespace (metrics.go: kubox_snapshot_storage_bytes, kubox_snapshots).
//
// kubox-node retries are idempotent: asked again for the same snapshot name and Pod UID after
// a crash between the checkpoint and the status write, it answers with the snapshot it took.
//
// Sandboxes start from a Ready snapshot through spec.snapshotRef (package sandbox).
package sandboxsnapshot
