// Command router measures what kubox-router adds between a client and a sandbox's agent: the
// exec round trip of `true` straight to kubox-agent and through the router (with the router's
// shared token, and with a Kubernetes ServiceAccount token checked by TokenReview and
// SubjectAccessReview, cached), and the requests per second one router serves to 50 concurrent
// clients. Everything is real and on 127.0.0.1: the repo's kube-apiserver and etcd, and the
// static kubox-router and kubox-agent binaries built from the checkout. The Sandbox's status
// points at the agent (pod IP 127.0.0.1, so the router runs with --allow-loopback-pod-ip).
// `make bench-router` runs it; docs/benchmarks.md has the figures.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"connectrpc.com/connect"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
	"github.com/kubox-dev/kubox/test/bench/harness"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

const (
	ns      = "bench"
	sandbox = "bench-sandbox"
	user    = "bench-user"
)

type options struct {
	execs    int
	clients  int
	duration time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.execs, "execs", 1000, "sequential RunProcess calls of `true` per path")
	flag.IntVar(&o.clients, "clients", 50, "concurrent clients for the throughput figure")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "how long the throughput figure runs per path")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "router benchmark: %v\n", err)
		os.Exit(1)
	}
}

// bench is what run sets up: the API server, the two processes and their addresses.
type bench struct {
	env          *framework.Env
	dir          string
	agent        *harness.Process
	router       *harness.Process
	agentURL     string
	routerURL    string
	agentToken   string
	sharedToken  string
	kubeToken    string
	routerBinary string
}

func run(o options) error {
	b := &bench{}
	defer b.stop()
	if err := b.start(); err != nil {
		return err
	}
	ctx := context.Background()
	fmt.Printf("# kubox-router benchmark: %d CPUs, %s\n\n", runtime.NumCPU(), time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("| path | exec round trip p50 / p90 / p99 (ms) | %d clients: requests/s | p50 / p99 (ms) |\n|---|---|---|---|\n", o.clients)
	paths := []struct {
		name  string
		base  string
		token string
	}{
		{"straight to kubox-agent", b.agentURL, b.agentToken},
		{"through kubox-router, shared token", b.routerURL + "/sandboxes/" + ns + "/" + sandbox, b.sharedToken},
		{"through kubox-router, ServiceAccount token (TokenReview + SubjectAccessReview, cached)", b.routerURL + "/sandboxes/" + ns + "/" + sandbox, b.kubeToken},
	}
	procs := make([]agentv1connect.ProcessServiceClient, len(paths))
	files := make([]agentv1connect.FilesystemServiceClient, len(paths))
	for i, p := range paths {
		// Keep-alive connections for every client, as a real client's pool would keep them.
		httpc := &http.Client{Transport: &contract.BearerTransport{Token: p.token,
			Base: &http.Transport{MaxIdleConnsPerHost: o.clients, MaxConnsPerHost: o.clients}}}
		procs[i] = agentv1connect.NewProcessServiceClient(httpc, p.base)
		files[i] = agentv1connect.NewFilesystemServiceClient(httpc, p.base)
	}
	// Execs alternate between the paths, so a slower moment of the machine weighs on all alike;
	// the first round of each warms connections and caches and is not counted.
	lats, err := execLatencies(ctx, procs, o.execs)
	if err != nil {
		return err
	}
	for i, p := range paths {
		if _, _, err := throughput(ctx, files[i], o.clients, time.Second); err != nil { // warm-up
			return fmt.Errorf("%s: %w", p.name, err)
		}
		rps, rlat, err := throughput(ctx, files[i], o.clients, o.duration)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		lat := lats[i]
		fmt.Printf("| %s | %s / %s / %s | %.0f | %s / %s |\n", p.name,
			harness.Ms(lat.Pct(50)), harness.Ms(lat.Pct(90)), harness.Ms(lat.Pct(99)), rps, harness.Ms(rlat.Pct(50)), harness.Ms(rlat.Pct(99)))
	}
	rss, err := b.router.RSSKiB()
	if err != nil {
		return err
	}
	fmt.Printf("\nkubox-router: binary %.1f MiB (static, stripped), RSS after the run %.1f MiB; %d sequential execs per path, "+
		"throughput = Stat(\"/\") calls for %s per path.\n", harness.FileMiB(b.routerBinary), float64(rss)/1024, o.execs, o.duration)
	return nil
}

func (b *bench) start() error {
	var err error
	if b.dir, err = os.MkdirTemp("", "kubox-router-bench-"); err != nil {
		return err
	}
	if b.env, err = framework.Start(); err != nil {
		return err
	}
	key, err := b.secret("agent-token-key")
	if err != nil {
		return err
	}
	if b.sharedToken, err = b.secret("shared-token"); err != nil {
		return err
	}
	sb, err := b.sandbox()
	if err != nil {
		return err
	}
	b.agentToken = contract.DeriveAgentToken([]byte(key), sb.UID)
	if err := b.startAgent(sb); err != nil {
		return err
	}
	if b.kubeToken, err = b.serviceAccountToken(); err != nil {
		return err
	}
	return b.startRouter()
}

// secret writes 48 random bytes, base64url-encoded, to a file in the bench folder.
func (b *bench) secret(name string) (string, error) {
	raw := make([]byte, 48)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	s := base64.RawURLEncoding.EncodeToString(raw)
	return s, os.WriteFile(filepath.Join(b.dir, name), []byte(s), 0o600)
}

// sandbox creates the Sandbox and writes the status a kubelet and the controller would: Ready,
// pod IP 127.0.0.1, with spec.agent.port the agent's port.
func (b *bench) sandbox() (*sandboxv1beta1.Sandbox, error) {
	ctx := context.Background()
	if err := b.env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return nil, err
	}
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: sandbox, Namespace: ns}}
	sb.Spec.PodTemplate.Spec.Containers = []corev1.Container{{Name: "main", Image: "kubox.local/python:dev"}}
	sb.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(port))}
	if err := b.env.Client.Create(ctx, sb); err != nil {
		return nil, err
	}
	sb.Status.PodIPs = []string{"127.0.0.1"}
	meta.SetStatusCondition(&sb.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue,
		Reason: "DependenciesReady", Message: "benchmark", ObservedGeneration: sb.Generation})
	return sb, b.env.Client.Status().Update(ctx, sb)
}

func (b *bench) startAgent(sb *sandboxv1beta1.Sandbox) error {
	bin, err := harness.BuildStatic(b.dir, "kubox-agent")
	if err != nil {
		return err
	}
	tokenFile := filepath.Join(b.dir, "agent-token")
	if err := os.WriteFile(tokenFile, []byte(b.agentToken), 0o600); err != nil {
		return err
	}
	port := strconv.Itoa(int(*sb.Spec.Agent.Port))
	b.agentURL = "http://127.0.0.1:" + port
	b.agent, err = harness.StartProcess(bin, b.agentURL+"/healthz",
		"--host=127.0.0.1", "--port="+port, "--compat-port=0", "--token-file="+tokenFile, "--root="+b.dir)
	return err
}

func (b *bench) startRouter() error {
	var err error
	if b.routerBinary, err = harness.BuildStatic(b.dir, "kubox-router"); err != nil {
		return err
	}
	kubeconfig := filepath.Join(b.dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, b.env.KubeConfig, 0o600); err != nil {
		return err
	}
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = harness.FreePort(); err != nil {
			return err
		}
	}
	b.routerURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	b.router, err = harness.StartProcess(b.routerBinary, fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[2]),
		"--kubeconfig="+kubeconfig, "--http-bind-address="+b.routerURL[len("http://"):],
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[2]),
		"--agent-token-key-file="+filepath.Join(b.dir, "agent-token-key"),
		"--shared-token-file="+filepath.Join(b.dir, "shared-token"),
		"--allow-loopback-pod-ip", "--access-log=false")
	return err
}

// serviceAccountToken makes a ServiceAccount that RBAC lets connect to the sandbox, and a token.
func (b *bench) serviceAccountToken() (string, error) {
	ctx := context.Background()
	c := b.env.Client
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{sandboxv1beta1.GroupVersion.Group}, Resources: []string{"sandboxes/connect"},
			Verbs: []string{"create"}, ResourceNames: []string{sandbox}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: user, Namespace: ns}}},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return "", err
		}
	}
	cs, err := kubernetes.NewForConfig(b.env.Config)
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, user, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

func (b *bench) stop() {
	for _, p := range []*harness.Process{b.router, b.agent} {
		if p != nil {
			p.Stop()
		}
	}
	if b.env != nil {
		if err := b.env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the API server: %v\n", err)
		}
	}
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}

// execLatencies runs `true` n times through each client in turn, after one uncounted round, and
// returns each client's sorted latencies.
func execLatencies(ctx context.Context, clients []agentv1connect.ProcessServiceClient, n int) ([]harness.Latencies, error) {
	out := make([]harness.Latencies, len(clients))
	for round := range n + 1 {
		for i, c := range clients {
			d, err := harness.RunTrue(ctx, c)
			if err != nil {
				return nil, err
			}
			if round > 0 {
				out[i] = append(out[i], d)
			}
		}
	}
	for i := range out {
		out[i] = out[i].Sorted()
	}
	return out, nil
}

// throughput runs clients goroutines calling Stat("/") for d and returns calls per second and
// their latencies. Any failed call fails the measure.
func throughput(ctx context.Context, c agentv1connect.FilesystemServiceClient, clients int, d time.Duration) (float64, harness.Latencies, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu   sync.Mutex
		all  harness.Latencies
		errs []error
		wg   sync.WaitGroup
	)
	start := time.Now()
	for range clients {
		wg.Go(func() {
			var mine harness.Latencies
			for ctx.Err() == nil {
				t := time.Now()
				_, err := c.Stat(ctx, connect.NewRequest(&agentv1.StatRequest{Path: "/"}))
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
					break
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, nil, err
	}
	if len(all) == 0 {
		return 0, nil, errors.New("no call completed")
	}
	return float64(len(all)) / time.Since(start).Seconds(), all.Sorted(), nil
}
