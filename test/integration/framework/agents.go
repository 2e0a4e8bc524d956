package framework

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent"
)

// sandboxAgents plays the kubox-agent of every Sandbox of one namespace that has a Pod IP: a real
// agent in the test process, listening on that IP.
type sandboxAgents struct {
	t    testing.TB
	ns   string
	key  []byte
	port int
	c    client.WithWatch
	// dir holds every agent's root, one directory each.
	dir string
	log *slog.Logger

	// configure changes each agent's configuration (ServeSandboxAgents' options).
	configure []func(*agent.Config)

	// served is the agent of each Sandbox, by name. Only run touches it while it runs.
	served map[string]*servedAgent
}

// servedAgent is the agent started for one Sandbox's UID and Pod IP.
type servedAgent struct {
	uid types.UID
	ip  string
	// agent is nil when it could not start; it is not tried again for the same UID and IP.
	agent *agent.Agent
}

// ServeSandboxAgents runs the kubox-agent of every Sandbox in ns, which exists already, until the
// test ends, as the Sandbox's Pod would. It follows the namespace's Sandboxes with a watch; for
// each whose status.podIPs[0] is set it starts a real agent on that IP and port, requiring the
// token kubox-controller derives with key for the Sandbox's UID (AgentToken), its files confined
// to a temporary root of its own. When the Sandbox is deleted, or loses its Pod IP, the agent
// stops; when its IP or UID changes, a new agent replaces it.
//
// Each Sandbox needs a loopback Pod IP of its own: start the Kubelet with WithLoopbackPodIPs.
// An agent that cannot start fails the test. configure, if any, changes each agent's
// configuration (E2BPort, say) before it starts.
func (e *Env) ServeSandboxAgents(t testing.TB, ns string, key []byte, port int, configure ...func(*agent.Config)) {
	t.Helper()
	c, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatalf("Creating a watching client: %v", err)
	}
	s := &sandboxAgents{t: t, ns: ns, key: key, port: port, c: c, dir: t.TempDir(),
		log: slog.New(slog.NewJSONHandler(TestWriter{t}, nil)), configure: configure, served: map[string]*servedAgent{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { wait.UntilWithContext(ctx, s.pass, PollInterval) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		for name := range s.served {
			s.stop(name)
		}
	})
}

// pass lists the namespace's Sandboxes and brings each one's agent up to date, stopping those of
// Sandboxes gone, then follows the changes the watch reports until it ends.
func (s *sandboxAgents) pass(ctx context.Context) {
	list := &sandboxv1beta1.SandboxList{}
	if err := s.c.List(ctx, list, client.InNamespace(s.ns)); err != nil {
		s.errorf(ctx, "listing Sandboxes: %v", err)
		return
	}
	listed := map[string]bool{}
	for i := range list.Items {
		listed[list.Items[i].Name] = true
		s.sync(ctx, &list.Items[i])
	}
	for name := range s.served {
		if !listed[name] {
			s.stop(name)
		}
	}
	w, err := s.c.Watch(ctx, &sandboxv1beta1.SandboxList{}, client.InNamespace(s.ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		s.errorf(ctx, "watching Sandboxes: %v", err)
		return
	}
	defer w.Stop()
	followWatch(ctx, w, nil, func(t watch.EventType, sb *sandboxv1beta1.Sandbox) {
		switch t {
		case watch.Added, watch.Modified:
			s.sync(ctx, sb)
		case watch.Deleted:
			if a := s.served[sb.Name]; a != nil && a.uid == sb.UID {
				s.stop(sb.Name)
			}
		}
	})
}

// sync makes sb's agent the one for its UID and first Pod IP, or stops it when sb has no Pod IP.
func (s *sandboxAgents) sync(ctx context.Context, sb *sandboxv1beta1.Sandbox) {
	ip := ""
	if len(sb.Status.PodIPs) > 0 {
		ip = sb.Status.PodIPs[0]
	}
	if a := s.served[sb.Name]; a != nil {
		if a.uid == sb.UID && a.ip == ip {
			return
		}
		s.stop(sb.Name)
	}
	if ip == "" {
		return
	}
	a := &servedAgent{uid: sb.UID, ip: ip}
	s.served[sb.Name] = a
	var err error
	if a.agent, err = s.start(sb, ip); err != nil {
		s.errorf(ctx, "starting the agent of Sandbox %s (uid %s) on %s: %v", sb.Name, sb.UID, ip, err)
	}
}

// start starts the agent of sb on ip, with a new root.
func (s *sandboxAgents) start(sb *sandboxv1beta1.Sandbox, ip string) (*agent.Agent, error) {
	if addr, err := netip.ParseAddr(ip); err != nil || !addr.IsLoopback() {
		return nil, fmt.Errorf("the test process cannot listen on the Pod IP %q: start the Kubelet with WithLoopbackPodIPs", ip)
	}
	root, err := os.MkdirTemp(s.dir, sb.Name+"-")
	if err != nil {
		return nil, err
	}
	cfg := agent.Config{Port: s.port, Token: AgentAuth(s.key, sb.UID), Root: root, WorkDir: root,
		Log: s.log.With("sandbox", sb.Name, "podIP", ip)}
	for _, c := range s.configure {
		c(&cfg)
	}
	return listenAgent(ip, cfg)
}

// stop stops the agent of the Sandbox called name and forgets it.
func (s *sandboxAgents) stop(name string) {
	a := s.served[name]
	delete(s.served, name)
	if a == nil || a.agent == nil {
		return
	}
	if err := shutdownAgent(a.agent); err != nil {
		s.t.Errorf("Stopping the agent of Sandbox %s (uid %s) on %s: %v", name, a.uid, a.ip, err)
	}
}

// errorf fails the test with what went wrong, unless the agents are stopping.
func (s *sandboxAgents) errorf(ctx context.Context, format string, args ...any) {
	if ctx.Err() == nil {
		s.t.Errorf("Sandbox agents in %s: "+format, append([]any{s.ns}, args...)...)
	}
}
