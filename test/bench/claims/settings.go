package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/agent/auth"
	"github.com/kubox-dev/kubox/test/bench/harness"
)

// The settings scenario (issue #16) measures what a claim's env vars and secret files add to a
// warm claim. The controller delivers them by calling the sandbox's kubox-agent, so the pool's
// Pods run on a kwok node whose Pod CIDR is in 127.0.0.0/8 and every member gets a real agent
// (internal/agent, in this process) listening on its Pod IP, with the token the controller derives
// for the member's UID: the agent call on the claim's path is the real one, over loopback.
var settingsClaims = flag.Int("settings-claims", 30, "warm claims of the settings scenario, of each kind (plain, with settings)")

const (
	// agentsNode is the kwok node of the settings pool; agentsCIDR its Pod CIDR, where kwok picks
	// the Pods' IPs.
	agentsNode = "kwok-agents"
	agentsCIDR = "127.1.0.0/16"
	// agentsPool names the settings scenario's template, pool and Secret.
	agentsPool = "agents"
	// settingsPath is where the template allows claims' secret files.
	settingsPath = "/etc/claim"
	// agentImage is the agent image the controller puts in the Pods; kwok runs none of them.
	agentImage = "kubox.local/kubox-agent:dev"
)

func (b *bench) settingsScenario() scenario {
	return scenario{name: "settings", about: fmt.Sprintf("%d warm claims one after another without settings, then %d with 2 env vars and 1 secret file, "+
		"each pool member served by a real kubox-agent on its loopback Pod IP", *settingsClaims, *settingsClaims),
		load: func(ctx context.Context, b *bench) ([]string, map[string]time.Time, error) {
			s := &settingsRun{b: b}
			b.check = s.check
			return s.run(ctx)
		}}
}

// settingsRun is one run of the settings scenario.
type settingsRun struct {
	b      *bench
	agents *agentFleet
	// plain and withSettings are the claims of each kind, in the order they were made.
	plain, withSettings []string
	created             map[string]time.Time
}

func (s *settingsRun) run(ctx context.Context) ([]string, map[string]time.Time, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, nil, err
	}
	port, err := harness.FreePort()
	if err != nil {
		return nil, nil, err
	}
	if err := s.restartWithAgentKey(ctx, key); err != nil {
		return nil, nil, err
	}
	if s.agents, err = startAgentFleet(ctx, s.b.w, key, port); err != nil {
		return nil, nil, err
	}
	if err := s.b.cl.AddNode(ctx, agentsNode, 4*(*settingsClaims)+10, agentsCIDR, agentsTaint); err != nil {
		return nil, nil, err
	}
	if err := s.createPool(ctx, port); err != nil {
		return nil, nil, err
	}
	s.created = map[string]time.Time{}
	for i := range *settingsClaims {
		if err := s.claim(ctx, fmt.Sprintf("plain-%03d", i), false); err != nil {
			return nil, nil, err
		}
	}
	for i := range *settingsClaims {
		if err := s.claim(ctx, fmt.Sprintf("settings-%03d", i), true); err != nil {
			return nil, nil, err
		}
	}
	return append(append([]string(nil), s.plain...), s.withSettings...), s.created, nil
}

// agentsTaint keeps the other scenarios' Pods off the agents' node.
var agentsTaint = corev1.Taint{Key: "kubox.dev/bench", Value: agentsPool, Effect: corev1.TaintEffectNoSchedule}

// restartWithAgentKey replaces the controller with one configured for kubox-agent: an image
// and a token key. Only sandboxes that ask for the agent (spec.agent) are affected by it.
func (s *settingsRun) restartWithAgentKey(ctx context.Context, key []byte) error {
	dir, err := os.MkdirTemp("", "kubox-bench-settings-")
	if err != nil {
		return err
	}
	keyFile := filepath.Join(dir, "agent-token-key")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		return err
	}
	s.b.stopKubox()
	stop, _, err := startKubox(ctx, s.b.cl, s.b.writes, s.b.o, func(cfg *configv1alpha1.ControllerConfiguration, o *ctrl.Options) {
		cfg.Agent.Image = agentImage
		cfg.Agent.TokenKeyFile = keyFile
		o.Controller.SkipNameValidation = ptr.To(true) // the stopped controller's names stay registered
	})
	s.b.stopKubox = stop
	if err != nil {
		s.b.stopKubox = func() {}
	}
	return err
}

// createPool creates the Secret, the template (agent on port, env and secret files allowed) and
// a pool of two members per claim, and waits until it is full and every member has its agent.
func (s *settingsRun) createPool(ctx context.Context, port int) error {
	c := s.b.c
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: agentsPool, Namespace: ns}, Data: map[string][]byte{"token": []byte("s3cr3t")}}
	if err := c.Create(ctx, secret); err != nil {
		return err
	}
	tpl := &extv1beta1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Name: agentsPool, Namespace: ns}}
	spec := &tpl.Spec.PodTemplate.Spec
	spec.Containers = []corev1.Container{{Name: "main", Image: "kubox.local/busybox:dev", Command: []string{"sleep", "infinity"}}}
	spec.NodeSelector = map[string]string{"kubernetes.io/hostname": agentsNode}
	spec.Tolerations = []corev1.Toleration{{Key: agentsTaint.Key, Operator: corev1.TolerationOpEqual, Value: agentsTaint.Value, Effect: agentsTaint.Effect}}
	tpl.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(port)), CompatibilityPort: ptr.To[int32](0)}
	tpl.Spec.EnvVarsInjectionPolicy = extv1beta1.EnvVarsInjectionPolicyAllowed
	tpl.Spec.ClaimPolicy = &extv1beta1.ClaimPolicy{AllowedSecretFilePaths: []string{settingsPath}}
	if err := c.Create(ctx, tpl); err != nil {
		return err
	}
	size := 2 * *settingsClaims
	pool := &extv1beta1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Name: agentsPool, Namespace: ns}}
	pool.Spec.Replicas = ptr.To(int32(size))
	pool.Spec.SandboxTemplateRef.Name = agentsPool
	if err := c.Create(ctx, pool); err != nil {
		return err
	}
	deadline := time.Now().Add(s.b.o.readyTimeout)
	for {
		got := &extv1beta1.SandboxWarmPool{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pool), got); err != nil {
			return err
		}
		if got.Status.ReadyReplicas >= int32(size) && s.agents.served() >= size {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("settings pool: %d of %d members ready, %d agents, after %v", got.Status.ReadyReplicas, size, s.agents.served(), s.b.o.readyTimeout)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// claim creates one warm claim of the agents pool, with 2 env vars and the Secret's file when
// settings, and waits until it is Ready. Before, it waits until every Sandbox with a Pod IP has
// its agent, so that no claim can take a member whose agent is not listening yet.
func (s *settingsRun) claim(ctx context.Context, name string, settings bool) error {
	if err := s.agents.waitAllServed(ctx, s.b.o.readyTimeout); err != nil {
		return err
	}
	claim := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	claim.Spec.WarmPoolRef = &extv1beta1.SandboxWarmPoolReference{Name: agentsPool}
	if settings {
		claim.Spec.Env = []extv1beta1.EnvVar{{Name: "TOKEN", Value: name}, {Name: "SECOND", Value: "2"}}
		claim.Spec.SecretFiles = []extv1beta1.SecretFile{{SecretName: agentsPool, MountPath: settingsPath}}
		s.withSettings = append(s.withSettings, name)
	} else {
		s.plain = append(s.plain, name)
	}
	start := time.Now()
	if err := s.b.c.Create(ctx, claim); err != nil {
		return err
	}
	s.created[name] = start
	s.b.storedMu.Lock()
	s.b.stored[name] = time.Now()
	s.b.storedMu.Unlock()
	_, err := s.b.w.waitReady(ctx, []string{name}, s.b.o.readyTimeout)
	return err
}

// check prints p50 and p99 of each kind, checks that every claim with settings got its secret
// file from its own member's agent, then removes the pool and stops the agents.
func (s *settingsRun) check(ctx context.Context, _ []string) (string, error) {
	defer s.agents.stop()
	plain, withSettings := s.latencies(s.plain), s.latencies(s.withSettings)
	delivered, err := s.delivered(ctx)
	if err != nil {
		return "", err
	}
	var r strings.Builder
	fmt.Fprintf(&r, "| warm claim, Create called → Ready, ms | claims | p50 | p99 | max |\n|---|---|---|---|---|\n")
	fmt.Fprintf(&r, "| plain | %d | %s | %s | %s |\n", len(plain), ms(pct(plain, 50)), ms(pct(plain, 99)), ms(pct(plain, 100)))
	fmt.Fprintf(&r, "| 2 env vars + 1 secret file | %d | %s | %s | %s |\n\n", len(withSettings), ms(pct(withSettings, 50)), ms(pct(withSettings, 99)), ms(pct(withSettings, 100)))
	fmt.Fprintf(&r, "secret file written by the claimed member's own agent: %d of %d claims with settings\n\n", delivered, len(s.withSettings))
	if delivered != len(s.withSettings) {
		return "", fmt.Errorf("only %d of %d claims with settings had their secret file written by their sandbox's agent:\n%s", delivered, len(s.withSettings), r.String())
	}
	return r.String(), s.deletePool(ctx)
}

func (s *settingsRun) latencies(names []string) []time.Duration {
	readyAt, _ := s.b.w.waitReady(context.Background(), names, time.Second)
	out := make([]time.Duration, 0, len(names))
	for _, n := range names {
		out = append(out, readyAt[n].Sub(s.created[n]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// delivered counts the claims with settings whose Sandbox's agent root holds the secret file.
func (s *settingsRun) delivered(ctx context.Context) (int, error) {
	n := 0
	for _, name := range s.withSettings {
		claim := &extv1beta1.SandboxClaim{}
		if err := s.b.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, claim); err != nil {
			return 0, err
		}
		sb := &sandboxv1beta1.Sandbox{}
		if err := s.b.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim.Status.Sandbox.Name}, sb); err != nil {
			return 0, err
		}
		root := s.agents.rootOf(sb.UID)
		if root == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, settingsPath, "token")); err == nil {
			n++
		}
	}
	return n, nil
}

// deletePool deletes the pool, its template and Secret; the garbage collector deletes the rest.
func (s *settingsRun) deletePool(ctx context.Context) error {
	meta := metav1.ObjectMeta{Name: agentsPool, Namespace: ns}
	return errors.Join(
		client.IgnoreNotFound(s.b.c.Delete(ctx, &extv1beta1.SandboxWarmPool{ObjectMeta: meta})),
		client.IgnoreNotFound(s.b.c.Delete(ctx, &extv1beta1.SandboxTemplate{ObjectMeta: meta})),
		client.IgnoreNotFound(s.b.c.Delete(ctx, &corev1.Secret{ObjectMeta: meta})))
}

// agentFleet runs a kubox-agent for every Sandbox of the namespace whose Pod IP is a loopback
// address, started from the benchmark's Sandbox informer, each with its own root directory.
type agentFleet struct {
	key  []byte
	port int
	dir  string
	log  *slog.Logger

	mu     sync.Mutex
	agents map[types.UID]*fleetAgent
	// pending is the Sandboxes with a loopback Pod IP seen but not served yet.
	pending map[types.UID]bool
	remove  func()
}

type fleetAgent struct {
	agent *agent.Agent
	root  string
}

func startAgentFleet(ctx context.Context, w *watcher, key []byte, port int) (*agentFleet, error) {
	dir, err := os.MkdirTemp("", "kubox-bench-agents-")
	if err != nil {
		return nil, err
	}
	f := &agentFleet{key: key, port: port, dir: dir, agents: map[types.UID]*fleetAgent{}, pending: map[types.UID]bool{},
		log: slog.New(slog.DiscardHandler)}
	inf, err := w.cache.GetInformer(ctx, &sandboxv1beta1.Sandbox{})
	if err != nil {
		return nil, err
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: f.observe, UpdateFunc: func(_, n any) { f.observe(n) },
	})
	if err != nil {
		return nil, err
	}
	f.remove = func() { _ = inf.RemoveEventHandler(reg) }
	if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return nil, errors.New("the benchmark's Sandbox informer did not sync")
	}
	return f, nil
}

// observe starts the agent of a Sandbox that has a loopback Pod IP and none yet.
func (f *agentFleet) observe(obj any) {
	sb, ok := obj.(*sandboxv1beta1.Sandbox)
	if !ok || len(sb.Status.PodIPs) == 0 {
		return
	}
	ip, err := netip.ParseAddr(sb.Status.PodIPs[0])
	if err != nil || !ip.IsLoopback() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.agents[sb.UID] != nil {
		return
	}
	f.pending[sb.UID] = true
	root, err := os.MkdirTemp(f.dir, sb.Name+"-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "agent of %s: %v\n", sb.Name, err)
		return
	}
	a, err := agent.New(agent.Config{Host: ip.String(), Port: f.port, Token: auth.Fixed([]byte(contract.DeriveAgentToken(f.key, sb.UID))),
		Root: root, WorkDir: root, ShutdownGrace: time.Second, Log: f.log})
	if err == nil {
		err = a.Listen()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "agent of %s on %s: %v\n", sb.Name, ip, err)
		return
	}
	delete(f.pending, sb.UID)
	f.agents[sb.UID] = &fleetAgent{agent: a, root: root}
}

func (f *agentFleet) served() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.agents)
}

func (f *agentFleet) rootOf(uid types.UID) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a := f.agents[uid]; a != nil {
		return a.root
	}
	return ""
}

// waitAllServed waits until every Sandbox seen with a loopback Pod IP has its agent.
func (f *agentFleet) waitAllServed(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		f.mu.Lock()
		n := len(f.pending)
		f.mu.Unlock()
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d Sandboxes still without an agent after %v", n, timeout)
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stop stops following the Sandboxes and shuts every agent down.
func (f *agentFleet) stop() {
	f.remove()
	f.mu.Lock()
	defer f.mu.Unlock()
	for uid, a := range f.agents {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := a.agent.Shutdown(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "stopping an agent: %v\n", err)
		}
		cancel()
		delete(f.agents, uid)
	}
	_ = os.RemoveAll(f.dir)
}
