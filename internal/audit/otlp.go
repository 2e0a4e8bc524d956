package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// OTLPConfig configures the OTLP sink: OTLP/gRPC logs to a collector.
type OTLPConfig struct {
	// Endpoint is the collector's host:port (OTLP/gRPC, usually 4317).
	Endpoint string
	// Insecure talks plain gRPC instead of TLS (a collector beside the router only).
	Insecure bool
}

// eventName names audit records among a collector's logs.
const eventName = "kubox.audit.request"

// OTLP sends each batch as one export of OTLP log records: the record's JSON as the body, its
// main fields as attributes, the request's arrival as the timestamp.
type OTLP struct {
	exporter *otlploggrpc.Exporter
	provider *sdklog.LoggerProvider
	logger   otellog.Logger
	batch    *collectProcessor
}

// NewOTLP returns the OTLP sink cfg configures; it connects lazily.
func NewOTLP(ctx context.Context, cfg OTLPConfig) (*OTLP, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("the OTLP audit sink needs the collector's host:port (--audit-otlp-endpoint)")
	}
	opts := []otlploggrpc.Option{otlploggrpc.WithEndpoint(cfg.Endpoint), otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: false})}
	if cfg.Insecure {
		opts = append(opts, otlploggrpc.WithInsecure())
	}
	exp, err := otlploggrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("the OTLP audit sink's endpoint %q: %w", cfg.Endpoint, err)
	}
	p := &collectProcessor{}
	provider := sdklog.NewLoggerProvider(sdklog.WithProcessor(p),
		sdklog.WithResource(resource.NewSchemaless(semconv.ServiceName("kubox-router"))))
	return &OTLP{exporter: exp, provider: provider, logger: provider.Logger("github.com/kubox-dev/kubox/internal/audit"), batch: p}, nil
}

// Name implements Sink.
func (*OTLP) Name() string { return "otlp" }

// Write implements Sink: the queue's retries stand for the exporter's own (turned off).
func (s *OTLP) Write(ctx context.Context, records []Record) error {
	for i := range records {
		r := &records[i]
		body, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encoding an audit record: %w", err)
		}
		var lr otellog.Record
		lr.SetEventName(eventName)
		lr.SetTimestamp(r.Time)
		lr.SetSeverity(otellog.SeverityInfo)
		lr.SetBody(otellog.StringValue(string(body)))
		lr.AddAttributes(otellog.String("kubox.principal", r.Principal), otellog.String("k8s.namespace.name", r.Namespace),
			otellog.String("kubox.sandbox", r.Sandbox), otellog.String("kubox.route", r.Route), otellog.Int("http.response.status_code", r.Status))
		if r.Operation != nil {
			lr.AddAttributes(otellog.String("kubox.operation", r.Operation.Kind))
		}
		s.logger.Emit(ctx, lr)
	}
	if err := s.exporter.Export(ctx, s.batch.take()); err != nil {
		return fmt.Errorf("exporting audit records to the OTLP collector: %w", err)
	}
	return nil
}

// Close implements Sink.
func (s *OTLP) Close(ctx context.Context) error {
	return errors.Join(s.provider.Shutdown(ctx), s.exporter.Shutdown(ctx))
}

// collectProcessor keeps the records emitted, for one export per batch.
type collectProcessor struct {
	mu      sync.Mutex
	records []sdklog.Record
}

func (*collectProcessor) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }

func (p *collectProcessor) OnEmit(_ context.Context, r *sdklog.Record) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.records = append(p.records, r.Clone())
	return nil
}

// take returns the records emitted since the last take.
func (p *collectProcessor) take() []sdklog.Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	rs := p.records
	p.records = nil
	return rs
}

func (*collectProcessor) Shutdown(context.Context) error   { return nil }
func (*collectProcessor) ForceFlush(context.Context) error { return nil }
