package audit

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	collectorlogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/grpc"
)

// logCollector is an OTLP/gRPC logs receiver that keeps the bodies and service names it gets.
type logCollector struct {
	collectorlogs.UnimplementedLogsServiceServer
	mu       sync.Mutex
	bodies   []string
	services []string
}

func (c *logCollector) Export(_ context.Context, req *collectorlogs.ExportLogsServiceRequest) (*collectorlogs.ExportLogsServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rl := range req.GetResourceLogs() {
		for _, a := range rl.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				c.services = append(c.services, a.GetValue().GetStringValue())
			}
		}
		for _, sl := range rl.GetScopeLogs() {
			for _, lr := range sl.GetLogRecords() {
				c.bodies = append(c.bodies, lr.GetBody().GetStringValue())
			}
		}
	}
	return &collectorlogs.ExportLogsServiceResponse{}, nil
}

// TestOTLPSinkExportsEveryRecord runs a queue into the OTLP sink and a collector on 127.0.0.1:
// each record arrives once, its JSON as the log body, from service kubox-router.
func TestOTLPSinkExportsEveryRecord(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	col := &logCollector{}
	collectorlogs.RegisterLogsServiceServer(srv, col)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	sink, err := NewOTLP(t.Context(), OTLPConfig{Endpoint: lis.Addr().String(), Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewQueue(QueueConfig{BatchSize: 3, FlushInterval: time.Hour}, nil, sink)
	if err != nil {
		t.Fatal(err)
	}
	want := records(7)
	for _, r := range want {
		q.Add(r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := q.Close(ctx); err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	var got []Record
	for _, b := range col.bodies {
		var r Record
		if err := json.Unmarshal([]byte(b), &r); err != nil {
			t.Fatalf("a log body is not a record: %v: %q", err, b)
		}
		got = append(got, r)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records the collector got (-want +got):\n%s", diff)
	}
	if len(col.services) == 0 || col.services[0] != "kubox-router" {
		t.Errorf("service names %v, want kubox-router", col.services)
	}
}
