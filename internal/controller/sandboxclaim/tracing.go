package sandboxclaim

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// TracerName is the name of the controller's OpenTelemetry tracer.
const TracerName = "github.com/kubox-dev/kubox/internal/controller/sandboxclaim"

// Span names.
const (
	spanReconcile   = "ReconcileSandboxClaim"
	spanBind        = "BindWarmSandbox"
	spanCreate      = "CreateColdSandbox"
	spanWriteStatus = "WriteClaimStatus"
)

// startSpan starts the pass's span. When the claim carries a W3C trace context in its
// opentelemetry.io/trace-context annotation (JSON: {"traceparent": ...}), the span continues that
// trace, so a client's request and the controller's work show as one trace. With no tracer
// provider configured, spans are no-ops.
func (r *Reconciler) startSpan(ctx context.Context, claim *extv1beta1.SandboxClaim) (context.Context, trace.Span) {
	return r.tracer.Start(withTraceParent(ctx, claim.Annotations[sandboxv1beta1.TraceContextAnnotation]), spanReconcile,
		trace.WithAttributes(
			attribute.String("sandboxclaim.namespace", claim.Namespace),
			attribute.String("sandboxclaim.name", claim.Name),
			attribute.String(sandboxv1beta1.CreatedByLabel, claim.Labels[sandboxv1beta1.CreatedByLabel]),
		))
}

// withTraceParent returns ctx with the remote span context of carrier, a JSON object of W3C
// trace-context headers; ctx unchanged when carrier is empty or not such an object.
func withTraceParent(ctx context.Context, carrier string) context.Context {
	if carrier == "" {
		return ctx
	}
	headers := map[string]string{}
	if err := json.Unmarshal([]byte(carrier), &headers); err != nil {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier(headers))
}
