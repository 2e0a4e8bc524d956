package framework

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
)

// Replica is one kubox-controller process of a test, which the test can kill mid-work as a
// crash, an OOM kill or a node loss would, and replace with another.
type Replica struct {
	mgr  ctrl.Manager
	kill func()
}

// StartKuboxReplica is StartKubox for a controller the test kills with Kill. The replica shuts
// down without grace (GracefulShutdownTimeout 0): its reconcilers' requests are cut off where
// they are, as in a killed process. Add WithLeaderElection to run it as one of several replicas.
func (e *Env) StartKuboxReplica(t *testing.T, ns string, configure func(*configv1alpha1.ControllerConfiguration), opts ...ManagerOption) *Replica {
	t.Helper()
	opts = append([]ManagerOption{productionCaches, abrupt}, opts...)
	mgr, kill := e.startManager(t, ns, kuboxSetup(t, configure), opts...)
	// A leader stopped without releasing its Lease returns "leader election lost", stopped by
	// Kill or by the test's end alike: a replica's error is not the test's failure.
	t.Cleanup(kill)
	return &Replica{mgr: mgr, kill: kill}
}

// Kill stops the replica at once. A leader does not release its Lease: the next replica takes
// over when the Lease expires, as after a crash.
func (r *Replica) Kill() { r.kill() }

// Elected is closed when the replica leads (at once without leader election).
func (r *Replica) Elected() <-chan struct{} { return r.mgr.Elected() }

// abrupt stops a manager without waiting for its reconcilers.
func abrupt(o *ctrl.Options) { o.GracefulShutdownTimeout = ptr.To(time.Duration(0)) }

// WithLeaderElection makes the manager one candidate for the Lease id in ns, with a lease of
// lease (renewed within two thirds of it, retried every tenth), never released on stop: replicas
// that share id share the work as kubox-controller's replicas do, one leader at a time.
func WithLeaderElection(ns, id string, lease time.Duration) ManagerOption {
	return func(o *ctrl.Options) {
		o.LeaderElection = true
		o.LeaderElectionNamespace = ns
		o.LeaderElectionID = id
		o.LeaderElectionReleaseOnCancel = false
		o.LeaseDuration = ptr.To(lease)
		o.RenewDeadline = ptr.To(lease * 2 / 3)
		o.RetryPeriod = ptr.To(lease / 10)
	}
}
