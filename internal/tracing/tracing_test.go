package tracing

import (
	"context"
	"net"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// collector is an OTLP/gRPC trace receiver that keeps the span names and service names it gets.
type collector struct {
	collectortrace.UnimplementedTraceServiceServer
	mu       sync.Mutex
	spans    []string
	services []string
}

func (c *collector) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				c.services = append(c.services, a.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans = append(c.spans, s.GetName())
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func TestSetupExportsSpansWhenConfigured(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	col := &collector{}
	collectortrace.RegisterTraceServiceServer(srv, col)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+lis.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	prev := otel.GetTracerProvider()
	defer otel.SetTracerProvider(prev)

	shutdown, err := Setup(t.Context(), "kubox-test", "v0.0.0")
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	_, span := otel.Tracer("test").Start(t.Context(), "ReconcileSandboxClaim")
	span.End()
	if err := shutdown(t.Context()); err != nil { // flushes the batch
		t.Fatalf("shutdown: %v", err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.spans) != 1 || col.spans[0] != "ReconcileSandboxClaim" {
		t.Errorf("collector got spans %v, want [ReconcileSandboxClaim]", col.spans)
	}
	if len(col.services) == 0 || col.services[0] != "kubox-test" {
		t.Errorf("collector got service names %v, want kubox-test", col.services)
	}
}

func TestEnabled(t *testing.T) {
	cases := []struct {
		endpoint, tracesEndpoint, exporter string
		want                               bool
	}{
		{want: false},
		{endpoint: "http://127.0.0.1:4317", want: true},
		{tracesEndpoint: "http://127.0.0.1:4317", want: true},
		{endpoint: "http://127.0.0.1:4317", exporter: "none", want: false},
	}
	for _, tc := range cases {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", tc.endpoint)
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", tc.tracesEndpoint)
		t.Setenv("OTEL_TRACES_EXPORTER", tc.exporter)
		if got := Enabled(); got != tc.want {
			t.Errorf("Enabled() with %+v = %v, want %v", tc, got, tc.want)
		}
	}
}

func TestSetupWithoutConfigurationKeepsTheNoopProvider(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	prev := otel.GetTracerProvider()
	if _, err := Setup(t.Context(), "kubox-test", "v0"); err != nil {
		t.Fatal(err)
	}
	if otel.GetTracerProvider() != prev {
		t.Error("Setup replaced the tracer provider although no exporter is configured")
	}
}
