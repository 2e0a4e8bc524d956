// Package manager assembles kubox-controller: the controller-runtime manager options a
// ControllerConfiguration asks for, the informer caches the reconcilers read from, and the
// registration of every index, metric, health check and reconciler.
package manager

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/indexer"
	"github.com/kubox-dev/kubox/internal/controller/nodeapi"
	"github.com/kubox-dev/kubox/internal/controller/sandbox"
	"github.com/kubox-dev/kubox/internal/controller/sandboxclaim"
	"github.com/kubox-dev/kubox/internal/controller/sandboxsnapshot"
	"github.com/kubox-dev/kubox/internal/controller/sandboxtemplate"
	"github.com/kubox-dev/kubox/internal/controller/sandboxwarmpool"
	"github.com/kubox-dev/kubox/internal/controller/status"
	"github.com/kubox-dev/kubox/internal/metrics"
)

// NewScheme returns a scheme with client-go's types and every kubox API group.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(sandboxv1beta1.AddToScheme(s))
	utilruntime.Must(extv1beta1.AddToScheme(s))
	return s
}

// Options returns the manager options cfg asks for, with the caches of CacheOptions.
func Options(cfg *configv1alpha1.ControllerConfiguration, scheme *runtime.Scheme) ctrl.Options {
	return ctrl.Options{
		Scheme:                        scheme,
		Cache:                         CacheOptions(),
		Metrics:                       metricsserver.Options{BindAddress: cfg.Metrics.BindAddress},
		HealthProbeBindAddress:        cfg.Health.BindAddress,
		LeaderElection:                ptr.Deref(cfg.LeaderElection.Enabled, true),
		LeaderElectionID:              cfg.LeaderElection.ID,
		LeaderElectionNamespace:       cfg.LeaderElection.Namespace,
		LeaderElectionReleaseOnCancel: true,
	}
}

// managedLabelSelector selects the objects kubox created or adopted: every Pod, Service and
// PersistentVolumeClaim of a Sandbox carries the name-hash label.
func managedLabelSelector() labels.Selector {
	req, err := labels.NewRequirement(sandboxv1beta1.SandboxNameHashLabel, selection.Exists, nil)
	utilruntime.Must(err)
	return labels.NewSelector().Add(*req)
}

// CacheOptions scopes the Pod, Service and PersistentVolumeClaim informers to objects carrying
// the name-hash label (and the NetworkPolicy informer to the templates' policies, labelled with
// the template-ref hash), so the cache holds kubox's objects and not the rest of the cluster's,
// strips managedFields from everything, keeps of each Pod and Service only what the Sandbox
// reconciler reads, and interns the strings Sandboxes share (trim.go).
func CacheOptions() cache.Options {
	managed := cache.ByObject{Label: managedLabelSelector()}
	pods, services := managed, managed
	pods.Transform, services.Transform = TrimPod, TrimService
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&sandboxv1beta1.Sandbox{}:       {Transform: TrimSandbox},
			&corev1.Pod{}:                   pods,
			&corev1.Service{}:               services,
			&corev1.PersistentVolumeClaim{}: managed,
			&networkingv1.NetworkPolicy{}:   sandboxtemplate.NetworkPolicyCache(),
		},
	}
}

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// Setup registers the field indexes, the metrics, the health checks and every reconciler with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, cfg *configv1alpha1.ControllerConfiguration) error {
	if err := indexer.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := metrics.Register(ctx, mgr.GetCache(), ctrl.Log.WithName("metrics")); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	return SetupReconcilers(mgr, cfg, controller.Options{})
}

// SetupReconcilers registers the reconcilers with mgr; opts are the base controller options, to
// which each controller adds its worker count. Integration tests call it directly.
func SetupReconcilers(mgr ctrl.Manager, cfg *configv1alpha1.ControllerConfiguration, opts controller.Options) error {
	sandboxOpts := opts
	sandboxOpts.MaxConcurrentReconciles = int(ptr.Deref(cfg.Controllers.Sandbox.Workers, configv1alpha1.DefaultSandboxWorkers))
	agent, err := AgentOptions(&cfg.Agent)
	if err != nil {
		return err
	}
	tracker, err := SetupUsage(mgr, &cfg.Usage)
	if err != nil {
		return err
	}
	var recorder events.EventRecorder = mgr.GetEventRecorder(sandbox.Name)
	if !ptr.Deref(cfg.Controllers.Sandbox.Events, true) {
		recorder = status.WarningsOnly(recorder)
	}
	r := sandbox.NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetScheme(),
		recorder, clock.RealClock{}, cfg.ClusterDomain, agent).
		WithEgressProxy(cfg.NetworkPolicy.EgressProxy.ProxyURL(cfg.ClusterDomain)).
		WithMemory(nodeapi.FromConfig(cfg.Controllers.Sandbox.Memory))
	if tracker != nil {
		interval := configv1alpha1.DefaultUsageSummaryInterval
		if d := cfg.Usage.SummaryInterval; d != nil {
			interval = d.Duration
		}
		r.WithUsage(tracker, interval)
	}
	if err := r.SetupWithManager(mgr, sandboxOpts); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", sandbox.Name, err)
	}
	if !ptr.Deref(cfg.Controllers.Extensions, true) {
		return nil
	}
	return setupExtensions(mgr, cfg, opts)
}

// setupExtensions registers the SandboxTemplate, SandboxWarmPool, SandboxClaim and
// SandboxSnapshot reconcilers.
func setupExtensions(mgr ctrl.Manager, cfg *configv1alpha1.ControllerConfiguration, opts controller.Options) error {
	for _, setup := range []func(ctrl.Manager, *configv1alpha1.ControllerConfiguration, controller.Options) error{
		// One entry per extension controller package: <package>.Setup.
		sandboxtemplate.Setup,
		sandboxwarmpool.Setup,
		sandboxclaim.Setup,
		sandboxsnapshot.Setup,
	} {
		if err := setup(mgr, cfg, opts); err != nil {
			return err
		}
	}
	return nil
}

// inClusterNamespaceFile is where a Pod finds its namespace; controller-runtime reads it when
// leaderElection.namespace is empty.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// CheckLeaderElection fails early, with the fix, when leader election is on without a namespace
// outside a cluster, where controller-runtime cannot find one.
func CheckLeaderElection(cfg *configv1alpha1.ControllerConfiguration) error {
	if !ptr.Deref(cfg.LeaderElection.Enabled, true) || cfg.LeaderElection.Namespace != "" {
		return nil
	}
	if _, err := os.Stat(inClusterNamespaceFile); err == nil {
		return nil
	}
	return fmt.Errorf("leader election needs a namespace for its Lease outside a cluster: " +
		"set leaderElection.namespace in the --config file or --leader-election-namespace, " +
		"or turn leader election off with --leader-elect=false")
}

// AgentOptions turns the configuration's agent section into the Sandbox controller's options,
// reading the token key file when one is set.
func AgentOptions(a *configv1alpha1.AgentSettings) (sandbox.AgentOptions, error) {
	o := sandbox.AgentOptions{Image: a.Image, PullPolicy: a.ImagePullPolicy,
		Port: ptr.Deref(a.Port, configv1alpha1.DefaultAgentPort), CompatibilityPort: ptr.Deref(a.CompatibilityPort, configv1alpha1.DefaultAgentCompatibilityPort)}
	if a.TokenKeyFile == "" {
		return o, nil
	}
	key, err := contract.LoadAgentTokenKey(a.TokenKeyFile)
	if err != nil {
		return o, fmt.Errorf("agent.tokenKeyFile: %w", err)
	}
	o.TokenKey = key
	return o, nil
}
