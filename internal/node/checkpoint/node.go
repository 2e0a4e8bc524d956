package checkpoint

import "path/filepath"

// criNamespace is the containerd namespace of everything the kubelet runs through the CRI.
const criNamespace = "k8s.io"

// Node is where a containerd + gVisor node keeps what a checkpoint reads and a restore needs.
type Node struct {
	// Runsc and Ctr are the binaries; ContainerdSocket is containerd's gRPC socket.
	Runsc, Ctr, ContainerdSocket string
	// ContainerdRoot and ContainerdState are containerd's root and state folders.
	ContainerdRoot, ContainerdState string
	// ShimRunscRoot is the root in the gVisor shim's options (runsc.toml's root).
	ShimRunscRoot string
	// KubeletRoot is the kubelet's --root-dir.
	KubeletRoot string
}

// TaskDir is containerd's folder of the CRI's container bundles.
func (n Node) TaskDir() string {
	return filepath.Join(n.ContainerdState, "io.containerd.runtime.v2.task", criNamespace)
}

// PodRunsc runs runsc on the Pods' sandboxes, with the root the shim gives runsc.
func (n Node) PodRunsc() Runsc {
	return Runsc{Binary: n.Runsc, Root: filepath.Join(n.ShimRunscRoot, criNamespace)}
}

// PodDirs are the folders whose bind mounts belong to one Pod: the kubelet's per-Pod folders
// (hosts file, volumes, service-account token, termination log) and the CRI plugin's
// per-sandbox folders (hostname, resolv.conf).
func (n Node) PodDirs() []string {
	return []string{
		filepath.Join(n.KubeletRoot, "pods"),
		filepath.Join(n.ContainerdRoot, "io.containerd.grpc.v1.cri", "sandboxes"),
		filepath.Join(n.ContainerdState, "io.containerd.grpc.v1.cri", "sandboxes"),
	}
}

// Images mounts images from the node's containerd.
func (n Node) Images() CtrImages {
	return CtrImages{Ctr: n.Ctr, Address: n.ContainerdSocket, Namespace: criNamespace}
}

// ImagePath is the runsc image folder of the checkpoint directory dir: what
// contract.RestoreImageAnnotation names.
func ImagePath(dir string) string { return filepath.Join(dir, imageDir) }
