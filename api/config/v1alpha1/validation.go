package v1alpha1

import (
	"math"
	"net/netip"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks a defaulted configuration and returns every problem, each naming its field.
func Validate(c *ControllerConfiguration) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(c.ClusterDomain) {
		errs = append(errs, field.Invalid(field.NewPath("clusterDomain"), c.ClusterDomain, msg))
	}
	cc := field.NewPath("clientConnection")
	if q := *c.ClientConnection.QPS; math.IsNaN(float64(q)) || math.IsInf(float64(q), 0) {
		errs = append(errs, field.Invalid(cc.Child("qps"), q, "must be a finite number"))
	}
	if b := *c.ClientConnection.Burst; b <= 0 {
		errs = append(errs, field.Invalid(cc.Child("burst"), b, "must be greater than 0"))
	}
	if n := *c.ClientConnection.APIConnections; n < 1 || n > 64 {
		errs = append(errs, field.Invalid(cc.Child("apiConnections"), n, "must be between 1 and 64"))
	}
	if r := *c.MemoryLimitRatio; !(r >= 0 && r <= 1) { // NaN too
		errs = append(errs, field.Invalid(field.NewPath("memoryLimitRatio"), r, "must be between 0 and 1"))
	}
	errs = append(errs, validateControllers(&c.Controllers, field.NewPath("controllers"))...)
	errs = append(errs, validatePeer(&c.NetworkPolicy.Router, field.NewPath("networkPolicy", "router"))...)
	errs = append(errs, validatePeer(&c.NetworkPolicy.ClusterDNS, field.NewPath("networkPolicy", "clusterDNS"))...)
	errs = append(errs, validateEgressProxy(&c.NetworkPolicy.EgressProxy, field.NewPath("networkPolicy", "egressProxy"))...)
	errs = append(errs, validateAgent(&c.Agent, field.NewPath("agent"))...)
	errs = append(errs, validateUsage(&c.Usage, field.NewPath("usage"))...)
	if c.LeaderElection.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(c.LeaderElection.Namespace) {
			errs = append(errs, field.Invalid(field.NewPath("leaderElection", "namespace"), c.LeaderElection.Namespace, msg))
		}
	}
	return errs
}

func validateControllers(c *Controllers, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, ctl := range []struct {
		name    string
		workers int32
	}{
		{"sandbox", *c.Sandbox.Workers}, {"sandboxTemplate", *c.SandboxTemplate.Workers},
		{"sandboxWarmPool", *c.SandboxWarmPool.Workers}, {"sandboxClaim", *c.SandboxClaim.Workers},
	} {
		if ctl.workers <= 0 || ctl.workers > 1000 {
			errs = append(errs, field.Invalid(p.Child(ctl.name, "workers"), ctl.workers, "must be between 1 and 1000"))
		}
	}
	wp := p.Child("sandboxWarmPool")
	if b := *c.SandboxWarmPool.MaxBatchSize; b <= 0 {
		errs = append(errs, field.Invalid(wp.Child("maxBatchSize"), b, "must be greater than 0"))
	}
	if d := c.SandboxWarmPool.ReadinessGracePeriod.Duration; d <= 0 {
		errs = append(errs, field.Invalid(wp.Child("readinessGracePeriod"), d.String(), "must be greater than 0"))
	}
	if d := c.SandboxWarmPool.UnschedulableRecheckInterval.Duration; d <= 0 {
		errs = append(errs, field.Invalid(wp.Child("unschedulableRecheckInterval"), d.String(), "must be greater than 0"))
	}
	if d := c.SandboxWarmPool.ReplenishDelay.Duration; d < 0 {
		errs = append(errs, field.Invalid(wp.Child("replenishDelay"), d.String(), "must not be negative"))
	}
	if d := c.SandboxWarmPool.StatusBatchPeriod.Duration; d < 0 {
		errs = append(errs, field.Invalid(wp.Child("statusBatchPeriod"), d.String(), "must not be negative"))
	}
	if r := float64(*c.SandboxWarmPool.MaxRefillRate); math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
		errs = append(errs, field.Invalid(wp.Child("maxRefillRate"), r, "must be a finite number, 0 (unpaced) or more"))
	}
	mem := p.Child("sandbox", "memory")
	if port := *c.Sandbox.Memory.NodeAPIPort; port < 1 || port > 65535 {
		errs = append(errs, field.Invalid(mem.Child("nodeAPIPort"), port, "must be between 1 and 65535"))
	}
	if u := c.Sandbox.Memory.NodeAPIURL; u != "" {
		if parsed, err := url.Parse(u); err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			errs = append(errs, field.Invalid(mem.Child("nodeAPIURL"), u, "must be an http:// or https:// URL"))
		}
	}
	for i, d := range c.SandboxClaim.AllowedLabelDomains {
		for _, msg := range validation.IsDNS1123Subdomain(d) {
			errs = append(errs, field.Invalid(p.Child("sandboxClaim", "allowedLabelDomains").Index(i), d, msg))
		}
	}
	for i, d := range c.SandboxClaim.AllowedAnnotationDomains {
		for _, msg := range validation.IsDNS1123Subdomain(d) {
			errs = append(errs, field.Invalid(p.Child("sandboxClaim", "allowedAnnotationDomains").Index(i), d, msg))
		}
	}
	return errs
}

func validatePeer(s *PeerSelector, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(s.Namespace) {
		errs = append(errs, field.Invalid(p.Child("namespace"), s.Namespace, msg))
	}
	for k, v := range s.PodLabels {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(p.Child("podLabels").Key(k), k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(p.Child("podLabels").Key(k), v, msg))
		}
	}
	return errs
}

func validateEgressProxy(s *EgressProxySettings, p *field.Path) field.ErrorList {
	errs := validatePeer(&s.PeerSelector, p)
	if s.URL != "" {
		if _, err := s.ProxyPort(); err != nil {
			errs = append(errs, field.Invalid(p.Child("url"), s.URL, err.Error()))
		}
	}
	for i, c := range s.CIDRs {
		if _, err := netip.ParsePrefix(c); err != nil {
			errs = append(errs, field.Invalid(p.Child("cidrs").Index(i), c, "must be a CIDR such as 10.77.0.1/32"))
		}
	}
	return errs
}

func validateAgent(a *AgentSettings, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch a.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), a.ImagePullPolicy,
			[]corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}))
	}
	if port := *a.Port; port < 1 || port > 65535 {
		errs = append(errs, field.Invalid(p.Child("port"), port, "must be between 1 and 65535"))
	}
	if port := *a.CompatibilityPort; port < 0 || port > 65535 {
		errs = append(errs, field.Invalid(p.Child("compatibilityPort"), port, "must be between 0 (off) and 65535"))
	} else if port == *a.Port {
		errs = append(errs, field.Invalid(p.Child("compatibilityPort"), port, "must differ from agent.port"))
	}
	return errs
}

func validateUsage(u *UsageSettings, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if u.PrincipalLabel != "" {
		for _, msg := range validation.IsQualifiedName(u.PrincipalLabel) {
			errs = append(errs, field.Invalid(p.Child("principalLabel"), u.PrincipalLabel, "must be a label key such as example.com/user: "+msg))
		}
	}
	if n := *u.MaxLabelValues; n < 1 || n > 10000 {
		errs = append(errs, field.Invalid(p.Child("maxLabelValues"), n, "must be between 1 and 10000"))
	}
	if d := u.SummaryInterval.Duration; d < time.Second {
		errs = append(errs, field.Invalid(p.Child("summaryInterval"), d.String(), "must be at least 1s (each write is one API write per sandbox)"))
	}
	if *u.Enabled && !*u.Sinks.Stdout && u.Sinks.S3 == nil {
		errs = append(errs, field.Required(p.Child("sinks"), "usage is enabled with no sink for its records: set sinks.stdout to true or configure sinks.s3"))
	}
	if s3 := u.Sinks.S3; s3 != nil {
		errs = append(errs, validateObjectStore(s3, p.Child("sinks", "s3"))...)
	}
	k, kp := &u.Kubelet, p.Child("kubelet")
	if d := k.Interval.Duration; d < 5*time.Second || d > 10*time.Minute {
		errs = append(errs, field.Invalid(kp.Child("interval"), d.String(), "must be between 5s and 10m (each read is one request per node)"))
	}
	if k.CAFile != "" && k.InsecureSkipTLSVerify {
		errs = append(errs, field.Invalid(kp.Child("insecureSkipTLSVerify"), true, "set caFile or insecureSkipTLSVerify, not both: with caFile the kubelets' certificates are checked"))
	}
	return errs
}

func validateObjectStore(s *ObjectStore, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case s.Endpoint == "":
		errs = append(errs, field.Required(p.Child("endpoint"), "set host:port of the S3 API"))
	case strings.Contains(s.Endpoint, "://") || strings.Contains(s.Endpoint, "/"):
		errs = append(errs, field.Invalid(p.Child("endpoint"), s.Endpoint, "must be host:port with no scheme or path (set insecure: true for plain HTTP)"))
	}
	if s.Bucket == "" {
		errs = append(errs, field.Required(p.Child("bucket"), "set the name of the bucket the records go to"))
	}
	if s.AccessKeyIDFile == "" {
		errs = append(errs, field.Required(p.Child("accessKeyIDFile"), "set the file holding the access key id (a mounted Secret's key)"))
	}
	if s.SecretAccessKeyFile == "" {
		errs = append(errs, field.Required(p.Child("secretAccessKeyFile"), "set the file holding the secret access key (a mounted Secret's key)"))
	}
	return errs
}
