package framework

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/agent/auth"
)

// LoopbackIP is where the tests' agents listen: the Pod IP of the sandboxes they serve
// (Kubelet's WithPodIP, or a status the test writes).
const LoopbackIP = "127.0.0.1"

// Agent is a real kubox-agent serving in the test process on LoopbackIP.
type Agent struct {
	*agent.Agent
	// Root and WorkDir are the agent's file root and working directory.
	Root, WorkDir string
	stop          func()
}

// AgentToken is the token kubox-controller derives with key for the Sandbox whose UID is uid
// (contract.DeriveAgentToken), which the Sandbox's agent requires.
func AgentToken(key []byte, uid types.UID) []byte { return []byte(contract.DeriveAgentToken(key, uid)) }

// AgentAuth is AgentToken as an agent requires it (agent.Config.Token).
func AgentAuth(key []byte, uid types.UID) *auth.Token { return auth.Fixed(AgentToken(key, uid)) }

// StartAgent starts a kubox-agent with cfg on LoopbackIP and returns once it listens. cfg.Port
// (and cfg.CompatPort, when set), cfg.Token and cfg.Root (empty: the whole file system, as in a
// container) are the test's; an empty WorkDir is a temporary directory, ShutdownGrace defaults
// to a second and the agent's log goes to the test's log. The agent stops when the test ends, or sooner with Stop.
func StartAgent(t testing.TB, cfg agent.Config) *Agent {
	t.Helper()
	return StartAgentAt(t, LoopbackIP, cfg)
}

// StartAgentAt is StartAgent listening on host, such as a Pod IP of Kubelet's WithLoopbackPodIPs.
func StartAgentAt(t testing.TB, host string, cfg agent.Config) *Agent {
	t.Helper()
	if cfg.WorkDir == "" {
		cfg.WorkDir = t.TempDir()
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewJSONHandler(TestWriter{t}, nil))
	}
	a, err := listenAgent(host, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if err := shutdownAgent(a); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return &Agent{Agent: a, Root: cfg.Root, WorkDir: cfg.WorkDir, stop: stop}
}

// listenAgent starts a kubox-agent with cfg on host, ShutdownGrace defaulting to a second, and
// returns once it listens. An agent that cannot listen is shut down again.
func listenAgent(host string, cfg agent.Config) (*agent.Agent, error) {
	cfg.Host = host
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = time.Second
	}
	a, err := agent.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("agent.New for %s: %w", host, err)
	}
	if err := a.Listen(); err != nil {
		return nil, errors.Join(fmt.Errorf("agent.Listen on %s: %w", host, err), shutdownAgent(a))
	}
	return a, nil
}

// shutdownAgent stops a, giving its requests and processes ten seconds.
func shutdownAgent(a *agent.Agent) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		return fmt.Errorf("agent.Shutdown: %w", err)
	}
	return nil
}

// Stop shuts the agent down before the test ends; the test's end does nothing more.
func (a *Agent) Stop() { a.stop() }
