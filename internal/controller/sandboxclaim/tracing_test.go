package sandboxclaim

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestStartSpanContinuesTheClaimsTrace(t *testing.T) {
	const (
		traceID = "0af7651916cd43dd8448eb211c80319c"
		spanID  = "b7ad6b7169203331"
	)
	cases := map[string]struct {
		annotation string // "" for none
		wantParent bool
	}{
		"a W3C traceparent is continued": {
			annotation: `{"traceparent":"00-` + traceID + `-` + spanID + `-01"}`, wantParent: true,
		},
		"no annotation starts a new trace":          {},
		"an annotation that is not JSON is ignored": {annotation: "00-" + traceID + "-" + spanID + "-01"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			r := NewReconciler(nil, nil, nil, nil, clocktesting.NewFakeClock(testNow.Time), tp, nil, nil)
			w := makeClaim()
			if tc.annotation != "" {
				w.Annotation("opentelemetry.io/trace-context", tc.annotation)
			}
			_, span := r.startSpan(t.Context(), w.Obj())
			span.End()

			spans := rec.Ended()
			if len(spans) != 1 || spans[0].Name() != "ReconcileSandboxClaim" {
				t.Fatalf("ended spans = %v; want one ReconcileSandboxClaim", spans)
			}
			parent, sc := spans[0].Parent(), spans[0].SpanContext()
			if tc.wantParent {
				if parent.TraceID().String() != traceID || parent.SpanID().String() != spanID || !parent.IsRemote() {
					t.Errorf("parent = %s/%s (remote %t); want remote %s/%s", parent.TraceID(), parent.SpanID(), parent.IsRemote(), traceID, spanID)
				}
				if sc.TraceID().String() != traceID {
					t.Errorf("span's trace = %s; want %s", sc.TraceID(), traceID)
				}
				return
			}
			if parent.IsValid() {
				t.Errorf("parent = %v; want none (a new trace)", parent)
			}
		})
	}
}
