package manager

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	controllerusage "github.com/kubox-dev/kubox/internal/controller/usage"
	"github.com/kubox-dev/kubox/internal/objstore"
	"github.com/kubox-dev/kubox/internal/usage"
)

// SetupUsage starts usage metering when the configuration's usage section enables it: a
// Tracker whose metrics go on the controller's metrics endpoint, and a Watcher on the Sandbox
// informer writing each deleted sandbox's record to the configured sinks. It returns the Tracker
// (nil when usage is off), which the Sandbox controller reads for status.usage.
func SetupUsage(mgr ctrl.Manager, u *configv1alpha1.UsageSettings) (*controllerusage.Tracker, error) {
	if !ptr.Deref(u.Enabled, false) {
		return nil, nil
	}
	sinks, err := usageSinks(&u.Sinks)
	if err != nil {
		return nil, err
	}
	n := int(ptr.Deref(u.MaxLabelValues, configv1alpha1.DefaultUsageMaxLabelValues))
	tracker := controllerusage.NewTracker(controllerusage.Config{PrincipalLabel: u.PrincipalLabel, MaxPrincipals: n, MaxTemplates: n})
	if err := tracker.Register(crmetrics.Registry); err != nil {
		return nil, fmt.Errorf("usage metering: registering its metrics: %w", err)
	}
	log := slog.New(logr.ToSlogHandler(ctrl.Log.WithName("usage")))
	if err := setupKubeletSource(mgr, &u.Kubelet, tracker, log); err != nil {
		return nil, err
	}
	if err := controllerusage.Setup(mgr, controllerusage.NewWatcher(tracker, log, sinks...)); err != nil {
		return nil, err
	}
	return tracker, nil
}

// setupKubeletSource adds the reader of the kubelets' resource metrics when k enables it: Pods
// from the manager's cache, Nodes read when needed (the controller does not cache them).
func setupKubeletSource(mgr ctrl.Manager, k *configv1alpha1.KubeletMetrics, tracker *controllerusage.Tracker, log *slog.Logger) error {
	if !ptr.Deref(k.Enabled, true) {
		return nil
	}
	cfg := controllerusage.KubeletConfig{CAFile: k.CAFile, InsecureSkipVerify: k.InsecureSkipTLSVerify}
	if k.Interval != nil {
		cfg.Interval = k.Interval.Duration
	}
	src, err := controllerusage.NewKubeletSource(cfg, mgr.GetConfig(), mgr.GetClient(), mgr.GetAPIReader(), tracker, log)
	if err != nil {
		return err
	}
	for _, c := range src.Collectors() {
		if err := crmetrics.Registry.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			return fmt.Errorf("usage metering: registering the kubelet source's metrics: %w", err)
		}
	}
	tracker.MeasureWith(src)
	return mgr.Add(src)
}

// usageSinks builds the sinks s configures; Validate has made sure there is at least one.
func usageSinks(s *configv1alpha1.UsageSinks) ([]controllerusage.Sink, error) {
	var sinks []controllerusage.Sink
	if ptr.Deref(s.Stdout, false) {
		sinks = append(sinks, usage.JSONLines{W: os.Stdout})
	}
	if o := s.S3; o != nil {
		sink, err := usage.NewS3(objstore.Config{Endpoint: o.Endpoint, Bucket: o.Bucket, Prefix: o.Prefix, Region: o.Region,
			Insecure: o.Insecure, AccessKeyIDFile: o.AccessKeyIDFile, SecretAccessKeyFile: o.SecretAccessKeyFile})
		if err != nil {
			return nil, fmt.Errorf("usage.sinks.s3: %w", err)
		}
		sinks = append(sinks, sink)
	}
	return sinks, nil
}
