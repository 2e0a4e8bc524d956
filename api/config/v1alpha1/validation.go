package v1alpha1

import (
	"math"

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
	if w := *c.Controllers.Sandbox.Workers; w <= 0 || w > 1000 {
		errs = append(errs, field.Invalid(field.NewPath("controllers", "sandbox", "workers"), w,
			"must be between 1 and 1000"))
	}
	if c.LeaderElection.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(c.LeaderElection.Namespace) {
			errs = append(errs, field.Invalid(field.NewPath("leaderElection", "namespace"), c.LeaderElection.Namespace, msg))
		}
	}
	return errs
}
