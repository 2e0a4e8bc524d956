package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The CRI annotations containerd puts on every container's OCI spec; they tie a container to its
// Pod and name it, and runsc reads them too (container type, sandbox ID, container name).
const (
	annContainerType = "io.kubernetes.cri.container-type"
	annSandboxID     = "io.kubernetes.cri.sandbox-id"
	annSandboxName   = "io.kubernetes.cri.sandbox-name"
	annSandboxNS     = "io.kubernetes.cri.sandbox-namespace"
	annSandboxUID    = "io.kubernetes.cri.sandbox-uid"
	annContainerName = "io.kubernetes.cri.container-name"
	annImageName     = "io.kubernetes.cri.image-name"
	annSandboxImage  = "io.kubernetes.cri.podsandbox.image-name"
	typeSandbox      = "sandbox"
)

// spec is an OCI runtime spec kept as JSON so that fields this package does not know survive.
type spec map[string]any

// bundle is one container's bundle in containerd's task directory.
type bundle struct {
	id   string
	spec spec
}

func (s spec) annotation(key string) string {
	a, _ := s["annotations"].(map[string]any)
	v, _ := a[key].(string)
	return v
}

func (s spec) setAnnotation(key, value string) {
	a, _ := s["annotations"].(map[string]any)
	if a == nil {
		a = map[string]any{}
		s["annotations"] = a
	}
	a[key] = value
}

func (s spec) mounts() []map[string]any {
	list, _ := s["mounts"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, m := range list {
		if mm, ok := m.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

func readSpec(path string) (spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ErrNotFound is returned when no sandbox on this node matches.
var ErrNotFound = errors.New("sandbox not found")

// podBundles returns the bundles of the Pod whose sandbox container is sandboxID, read from
// containerd's task directory for the CRI namespace (<containerd state>/io.containerd.runtime.v2.task/k8s.io);
// the sandbox container comes first, the others by name.
func podBundles(taskDir, sandboxID string) ([]bundle, error) {
	all, err := readBundles(taskDir)
	if err != nil {
		return nil, err
	}
	var out []bundle
	for _, b := range all {
		if b.spec.annotation(annSandboxID) == sandboxID {
			out = append(out, b)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		si, sj := out[i].spec.annotation(annContainerType) == typeSandbox, out[j].spec.annotation(annContainerType) == typeSandbox
		if si != sj {
			return si
		}
		return out[i].spec.annotation(annContainerName) < out[j].spec.annotation(annContainerName)
	})
	if len(out) == 0 || out[0].id != sandboxID {
		return nil, fmt.Errorf("%w: no sandbox container %s in %s", ErrNotFound, sandboxID, taskDir)
	}
	return out, nil
}

func readBundles(taskDir string) ([]bundle, error) {
	entries, err := os.ReadDir(taskDir)
	if err != nil {
		return nil, err
	}
	var out []bundle
	for _, e := range entries {
		s, err := readSpec(filepath.Join(taskDir, e.Name(), "config.json"))
		if errors.Is(err, os.ErrNotExist) {
			continue // a task being created or deleted
		}
		if err != nil {
			return nil, err
		}
		out = append(out, bundle{id: e.Name(), spec: s})
	}
	return out, nil
}

// FindSandbox returns the sandbox container ID of the Pod namespace/name running on this node;
// with uid set, only of the Pod with that UID (not another Pod of the same name).
func FindSandbox(taskDir, namespace, name, uid string) (string, error) {
	all, err := readBundles(taskDir)
	if err != nil {
		return "", err
	}
	for _, b := range all {
		s := b.spec
		if s.annotation(annContainerType) == typeSandbox && s.annotation(annSandboxNS) == namespace && s.annotation(annSandboxName) == name &&
			(uid == "" || s.annotation(annSandboxUID) == uid) {
			return b.id, nil
		}
	}
	if uid != "" {
		return "", fmt.Errorf("%w: pod %s/%s with UID %s in %s", ErrNotFound, namespace, name, uid, taskDir)
	}
	return "", fmt.Errorf("%w: pod %s/%s in %s", ErrNotFound, namespace, name, taskDir)
}

// describe returns the manifest's entry for a bundle.
func describe(b bundle, n int) Container {
	s := b.spec
	c := Container{ID: b.id, Name: s.annotation(annContainerName), Image: s.annotation(annImageName), Spec: fmt.Sprintf("%s/%d.json", specDir, n)}
	if s.annotation(annContainerType) == typeSandbox {
		c.Sandbox, c.Image = true, s.annotation(annSandboxImage)
	}
	return c
}

// podVolumes are the kubelet volume plugins whose content belongs to the Pod alone. Others
// (CSI, local, NFS, ...) hold data that outlives the Pod: a restore mounts them again, never a copy.
var podVolumes = map[string]bool{
	"kubernetes.io~projected": true, "kubernetes.io~secret": true, "kubernetes.io~configmap": true,
	"kubernetes.io~downward-api": true, "kubernetes.io~empty-dir": true,
}

// kubeletVolumes are the Pod volume plugins whose content only the kubelet writes, mounted
// read-only into the sandbox: the only content whose symbolic links a copy follows (within the
// volume). Everything else below a Pod's folders the sandbox can write: an emptyDir, a subPath
// mount (.../volume-subpaths/..., a bind mount of a folder of any volume, which the sandbox can
// fill with links), /dev/shm, the termination log.
var kubeletVolumes = map[string]bool{
	"kubernetes.io~projected": true, "kubernetes.io~secret": true, "kubernetes.io~configmap": true,
	"kubernetes.io~downward-api": true,
}

// A privateMount is a bind mount whose source belongs to the Pod alone and so must be copied.
type privateMount struct {
	source string
	// kubelets is true for a volume of kubeletVolumes, whose links the copy follows (within the
	// volume). Any other source's links are copied as links, never followed, or a link the
	// sandbox made to a node file would copy that file into the snapshot.
	kubelets bool
}

// privateMountOf returns the bind mount m's source when it belongs to the Pod alone (under one of
// the node's per-Pod directories, and not a persistent volume): it is gone once the Pod is.
// Only the exact layout of the kubelet's own volumes, <pod dir>/<pod UID>/volumes/<plugin>/<name>,
// counts as kubelets.
func privateMountOf(m map[string]any, podDirs []string) (privateMount, bool) {
	if m["type"] != "bind" {
		return privateMount{}, false
	}
	src, _ := m["source"].(string)
	if filepath.Clean(src) != src || !filepath.IsAbs(src) {
		return privateMount{}, false
	}
	for _, d := range podDirs {
		rest, ok := strings.CutPrefix(src, strings.TrimSuffix(d, "/")+"/")
		if !ok {
			continue
		}
		if parts := strings.Split(rest, "/"); len(parts) >= 3 && parts[1] == "volumes" {
			return privateMount{source: src, kubelets: kubeletVolumes[parts[2]] && len(parts) == 4}, podVolumes[parts[2]]
		}
		return privateMount{source: src}, true
	}
	return privateMount{}, false
}
