package manager

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/go-logr/logr"
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
	if err := controllerusage.Setup(mgr, controllerusage.NewWatcher(tracker, log, sinks...)); err != nil {
		return nil, err
	}
	return tracker, nil
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
