// Package framework runs kubox's integration tests against a real kube-apiserver and etcd, the
// binaries the repo builds itself (hack/tools/install.sh envtest), with the CRDs from
// config/crd/bases installed.
//
// Each test package starts one API server in TestMain and shares it between its tests; every test
// works in a namespace of its own:
//
//	var env *framework.Env
//
//	func TestMain(m *testing.M) { framework.Main(m, &env) }
//
//	func TestSomething(t *testing.T) {
//		ns := env.NewNamespace(t)
//		env.StartManager(t, ns, func(mgr ctrl.Manager) error { ... })
//		...
//	}
//
// Run them with `make test-integration`, or with
// `KUBEBUILDER_ASSETS=$(hack/tools/install.sh envtest) go test ./test/integration/...`.
// Set KUBOX_TEST_LOG=1 to see controller-runtime's logs.
package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// AssetsEnv is the environment variable naming the folder that holds etcd, kube-apiserver and
// kubectl.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// Env is a running kube-apiserver and etcd with kubox's CRDs installed.
type Env struct {
	// Config connects to the API server as an administrator.
	Config *rest.Config
	// Client is an uncached client: every read goes to the API server.
	Client client.Client
	// Scheme knows client-go's types, apiextensions.k8s.io/v1 and agents.x-k8s.io/v1beta1.
	Scheme *k8sruntime.Scheme
	// AssetsDir is the folder holding etcd, kube-apiserver and kubectl.
	AssetsDir string
	// KubeConfig is a kubeconfig for the API server, for tools such as kubectl.
	KubeConfig []byte

	testEnv *envtest.Environment
}

// NewScheme returns a scheme with client-go's types, apiextensions.k8s.io/v1 and kubox's API.
func NewScheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(sandboxv1beta1.AddToScheme(s))
	utilruntime.Must(extv1beta1.AddToScheme(s))
	return s
}

// RepoRoot is the root of the kubox checkout this file belongs to.
func RepoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot find the repository root: runtime.Caller failed")
	}
	// file is <root>/test/integration/framework/env.go.
	return filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// Start starts etcd and kube-apiserver from $KUBEBUILDER_ASSETS and installs the CRDs in
// config/crd/bases and the admission policies in config/admission. Stop it with Stop.
func Start() (*Env, error) {
	assets := os.Getenv(AssetsEnv)
	if assets == "" {
		return nil, fmt.Errorf("%s is not set: run `make test-integration`, or "+
			"`export %s=$(hack/tools/install.sh envtest)` before `go test`", AssetsEnv, AssetsEnv)
	}
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("%s=%s has no %s (%w): run `hack/tools/install.sh envtest` and use the folder it prints",
				AssetsEnv, assets, bin, err)
		}
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	scheme := NewScheme()
	testEnv := &envtest.Environment{
		Scheme:                   scheme,
		CRDDirectoryPaths:        []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
		BinaryAssetsDirectory:    assets,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	// This host has no default route, so the API server cannot pick an address to advertise, and
	// nothing needs the kubernetes Service's endpoints.
	testEnv.ControlPlane.GetAPIServer().Configure().
		Set("advertise-address", "127.0.0.1").
		Set("endpoint-reconciler-type", "none")

	cfg, err := testEnv.Start()
	if err != nil {
		// Start may have left etcd or the API server running.
		stopErr := testEnv.Stop()
		return nil, errors.Join(fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err), stopErr)
	}
	// Tests create many objects quickly; client-go's default 5 QPS would make them wait.
	cfg.QPS, cfg.Burst = 1000, 2000

	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("creating a client: %w", err), testEnv.Stop())
	}
	if err := installAdmissionPolicies(cfg, c, root); err != nil {
		return nil, errors.Join(err, testEnv.Stop())
	}
	kubeconfig, err := kubeConfig(testEnv)
	if err != nil {
		return nil, errors.Join(err, testEnv.Stop())
	}
	return &Env{Config: cfg, Client: c, Scheme: scheme, AssetsDir: assets, KubeConfig: kubeconfig, testEnv: testEnv}, nil
}

func kubeConfig(testEnv *envtest.Environment) ([]byte, error) {
	user, err := testEnv.ControlPlane.AddUser(envtest.User{Name: "kubox-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding an admin user: %w", err)
	}
	b, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("writing a kubeconfig: %w", err)
	}
	return b, nil
}

// Stop stops the API server and etcd and removes their data.
func (e *Env) Stop() error {
	if e == nil || e.testEnv == nil {
		return nil
	}
	if err := e.testEnv.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver and etcd: %w", err)
	}
	return nil
}

// namespacePrefix turns a test name into the start of a namespace name: lowercase letters, digits
// and '-', at most 40 characters, so the generated name stays a DNS-1123 label.
func namespacePrefix(testName string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(testName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			if s := b.String(); s != "" && !strings.HasSuffix(s, "-") {
				b.WriteByte('-')
			}
		}
		if b.Len() >= 40 {
			break
		}
	}
	p := strings.Trim(b.String(), "-")
	if p == "" || p[0] < 'a' || p[0] > 'z' {
		p = "t-" + p
	}
	return strings.TrimSuffix(p, "-") + "-"
}

// timeout bounds every single API call the framework makes itself.
const apiTimeout = 30 * time.Second

func (e *Env) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), apiTimeout)
}
