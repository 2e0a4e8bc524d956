package devenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"
)

// ComponentStatus is what `status` reports for one component.
type ComponentStatus struct {
	Name    string
	PID     int
	Started bool // a pidfile exists
	Alive   bool
	Ready   bool
	Detail  string
	// Log says where the component's log is; empty: its log file.
	Log string
}

// Statuses inspects every component of the environment in c.StateDir.
func Statuses(ctx context.Context, c Config, l Layout) []ComponentStatus {
	probes := readinessProbes(c, l)
	mode := kuboxModeOf(c, l)
	var out []ComponentStatus
	for _, name := range StartOrder {
		if s, ok := mode.status(ctx, c, l, name); ok {
			out = append(out, s)
			continue
		}
		s := ComponentStatus{Name: name}
		proc, ok, err := ReadPidFile(l.PidFile(name))
		if err != nil {
			s.Detail = err.Error()
		}
		s.Started, s.PID, s.Alive = ok, proc.PID, ok && proc.Alive()
		if s.Alive {
			s.Ready, s.Detail = probe(ctx, probes[name])
		}
		out = append(out, s)
	}
	return out
}

func probe(ctx context.Context, check func(context.Context) (bool, error)) (bool, string) {
	if check == nil {
		return true, ""
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	ok, err := check(ctx)
	if ok || err == nil {
		return ok, ""
	}
	return false, err.Error()
}

func readinessProbes(c Config, l Layout) map[string]func(context.Context) (bool, error) {
	probes := map[string]func(context.Context) (bool, error){
		Etcd:              HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/health", c.Ports.EtcdClient)),
		ControllerManager: HTTPOK(fmt.Sprintf("https://127.0.0.1:%d/healthz", c.Ports.ControllerManager)),
		Scheduler:         HTTPOK(fmt.Sprintf("https://127.0.0.1:%d/healthz", c.Ports.Scheduler)),
		Kubelet:           HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", c.Ports.KubeletHealthz)),
		NetworkPolicies:   networkPoliciesReady,
		Controller:        controllerReady(c),
		Router:            routerReady(c),
		Egress:            egressReady(c),
		NodeAPI:           nodeAPIReady(c),
		Containerd: func(context.Context) (bool, error) {
			_, err := os.Stat(l.ContainerdSocket)
			return err == nil, err
		},
	}
	if cs, err := NewClient(l.Kubeconfig); err == nil {
		probes[APIServer] = APIServerReady(cs)
		node := NodeReady(cs, c.NodeName)
		kubelet := probes[Kubelet]
		probes[Kubelet] = func(ctx context.Context) (bool, error) {
			if ok, err := kubelet(ctx); !ok {
				return false, err
			}
			return node(ctx)
		}
	}
	return probes
}

// routerReady probes kubox-router's /readyz (its caches of Sandboxes and claims are synced).
func routerReady(c Config) func(context.Context) (bool, error) {
	return HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", c.Ports.RouterHealth))
}

// egressReady probes kubox-egress's /readyz (its caches of Pods and Sandboxes are synced).
func egressReady(c Config) func(context.Context) (bool, error) {
	return HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", c.Ports.EgressHealth))
}

// nodeAPIReady probes kubox-node's /healthz.
func nodeAPIReady(c Config) func(context.Context) (bool, error) {
	return HTTPOK(c.NodeAPIURL() + "/healthz")
}

// controllerReady probes kubox-controller's /readyz.
func controllerReady(c Config) func(context.Context) (bool, error) {
	return HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", c.Ports.ControllerHealth))
}

// Healthy reports whether every component is alive and ready.
func Healthy(ctx context.Context, c Config, l Layout) (bool, []ComponentStatus) {
	if _, err := os.Stat(l.Root); err != nil {
		return false, nil
	}
	st := Statuses(ctx, c, l)
	if _, err := os.Stat(l.UpMarker()); err != nil {
		return false, st
	}
	for _, s := range st {
		if !s.Alive || !s.Ready {
			return false, st
		}
	}
	return true, st
}

// Status prints what runs and returns whether the environment is healthy.
func Status(ctx context.Context, c Config, out io.Writer) bool {
	l := NewLayout(c.StateDir)
	ok, st := Healthy(ctx, c, l)
	if st == nil {
		_, _ = fmt.Fprintf(out, "kubox dev is not up (no state in %s); start it with: kubox dev up\n", l.Root)
		return false
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "COMPONENT\tPID\tALIVE\tREADY\tLOG\tDETAIL")
	for _, s := range st {
		pid := "-"
		if s.Started && s.PID != 0 {
			pid = fmt.Sprint(s.PID)
		}
		log := s.Log
		if log == "" {
			log = l.LogFile(s.Name)
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, pid, yesNo(s.Alive), yesNo(s.Ready), log, s.Detail)
	}
	_ = tw.Flush()
	if ok {
		_, _ = fmt.Fprintf(out, "\nhealthy; export KUBECONFIG=%s\n", l.Kubeconfig)
	} else {
		if _, err := os.Stat(l.UpMarker()); err != nil {
			_, _ = fmt.Fprintln(out, "\nkubox dev up did not finish (it failed or was interrupted)")
		}
		_, _ = fmt.Fprintln(out, "\nNOT healthy: see the logs above; `kubox dev up` removes a broken environment and starts again")
	}
	return ok
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
