package devenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// StorageClassName is the default StorageClass; its PVs are host directories made by
// kube-controller-manager's hostPath provisioner (under /tmp/hostpath_pv on this machine).
const StorageClassName = "standard"

// NewClient returns a clientset for the environment's admin kubeconfig.
func NewClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.Timeout = 5 * time.Second
	return kubernetes.NewForConfig(cfg)
}

// Poll calls check until it reports done, returns an error, or timeout passes.
func Poll(ctx context.Context, timeout time.Duration, check func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		done, err := check(ctx)
		if done {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("not ready after %s: %w", timeout, last)
			}
			return fmt.Errorf("not ready after %s", timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

var loopbackHTTP = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
	// loopback health endpoints of components that serve a self-signed certificate
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // 127.0.0.1 health checks only
}}

// HTTPOK reports whether url answers 200.
func HTTPOK(url string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := loopbackHTTP.Do(req)
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("%s: %s", url, resp.Status)
	}
}

// APIServerReady reports whether /readyz answers ok.
func APIServerReady(cs kubernetes.Interface) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && strings.TrimSpace(string(body)) == "ok", err
	}
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(cs kubernetes.Interface, name string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, fmt.Errorf("node %s: %s", c.Reason, c.Message)
			}
		}
		return false, nil
	}
}

// DefaultServiceAccount reports whether kube-controller-manager created SA default/default
// (pods cannot be admitted before).
func DefaultServiceAccount(cs kubernetes.Interface) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	}
}

// ClusterObjects creates the RuntimeClasses and the default StorageClass when they are missing.
func ClusterObjects(ctx context.Context, cs kubernetes.Interface) error {
	for name, handler := range map[string]string{"runc": "runc", "gvisor": "runsc"} {
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}
		if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); ignoreExists(err) != nil {
			return fmt.Errorf("create RuntimeClass %s: %w", name, err)
		}
	}
	_, err := cs.StorageV1().StorageClasses().Create(ctx, storageClass(), metav1.CreateOptions{})
	if ignoreExists(err) != nil {
		return fmt.Errorf("create StorageClass %s: %w", StorageClassName, err)
	}
	return nil
}

func storageClass() *storagev1.StorageClass {
	del, immediate := corev1.PersistentVolumeReclaimDelete, storagev1.VolumeBindingImmediate
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: StorageClassName, Annotations: map[string]string{
			"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner: "kubernetes.io/host-path", ReclaimPolicy: &del, VolumeBindingMode: &immediate,
	}
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// ApplyCRDs applies every YAML file in dir with kubectl and waits until the CRDs are established.
// It returns the number of files applied (0 when dir has none yet).
func ApplyCRDs(kubectl, kubeconfig, dir string) (int, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) == 0 {
		return 0, nil
	}
	if err := kubectlRun(kubectl, kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", dir); err != nil {
		return 0, err
	}
	// a CRD just created may have no status yet, which fails `kubectl wait` at once: retry
	err := Poll(context.Background(), 60*time.Second, func(context.Context) (bool, error) {
		err := kubectlRun(kubectl, kubeconfig, "wait", "--for=condition=Established", "crd", "--all", "--timeout=10s")
		return err == nil, err
	})
	return len(files), err
}

// ApplyAdmissionPolicies applies the admission policies of dir (config/admission, a kustomization):
// in process mode nothing else installs them, and without them the local node would accept forged
// warm-pool members that a real install refuses.
func ApplyAdmissionPolicies(kubectl, kubeconfig, dir string) error {
	return kubectlRun(kubectl, kubeconfig, "apply", "--server-side", "--force-conflicts", "-k", dir)
}

func kubectlRun(kubectl, kubeconfig string, args ...string) error {
	cmd := exec.Command(kubectl, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
