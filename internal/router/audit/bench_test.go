package audit

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	auditrec "github.com/kubox-dev/kubox/internal/audit"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
)

// BenchmarkAudit measures what auditing adds to a request through a reverse proxy on
// 127.0.0.1, as kubox-router forwards it: a Connect RunProcess call (the router reads and
// decodes its first message), with the audit trail off and on (a real queue whose sink encodes
// every record as JSON to io.Discard, off the request path). It reports each request's latency
// at p50 and p99 besides ns/op:
//
//	go test -run '^$' -bench BenchmarkAudit -benchtime 20000x ./internal/router/audit/
func BenchmarkAudit(b *testing.B) {
	body := marshal(b, &agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: []string{"python3", "-c", "print(1)"}}})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/proto")
		_, _ = w.Write([]byte("\x1a\x021\n"))
	}))
	defer backend.Close()
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			var q Queue
			if mode == "on" {
				aq, err := auditrec.NewQueue(auditrec.QueueConfig{}, slog.New(slog.DiscardHandler), auditrec.JSONLines{W: io.Discard})
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = aq.Close(context.Background()) }()
				q = aq
			}
			rt := routerFor(b, New(q, nil), auditrec.RouteAgent, backend.URL)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			defer client.CloseIdleConnections()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				req, _ := http.NewRequest(http.MethodPost, rt.URL+"/kubox.agent.v1.ProcessService/RunProcess", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/proto")
				res, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkRecorderCost is the recorder's own work per request, without network: Begin (read
// and decode the first message, wrap the body and writer), the forwarding stand-in (read the
// body, write an answer), End (build the record, add it to a real queue):
//
//	go test -run '^$' -bench BenchmarkRecorderCost -benchmem ./internal/router/audit/
func BenchmarkRecorderCost(b *testing.B) {
	body := marshal(b, &agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: []string{"python3", "-c", "print(1)"}}})
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			var q Queue
			if mode == "on" {
				aq, err := auditrec.NewQueue(auditrec.QueueConfig{}, slog.New(slog.DiscardHandler), auditrec.JSONLines{W: io.Discard})
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = aq.Close(context.Background()) }()
				q = aq
			}
			rc := New(q, nil)
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, "/kubox.agent.v1.ProcessService/RunProcess", bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/proto")
				w, r, e := rc.Begin(httptest.NewRecorder(), r, Request{Start: time.Now(), Principal: "system:serviceaccount:a:b",
					Namespace: "a", Sandbox: "box", Route: auditrec.RouteAgent, Port: 8080, Path: r.URL.Path})
				_, _ = io.Copy(io.Discard, r.Body)
				_, _ = w.Write([]byte("ok"))
				e.End("")
			}
		})
	}
}
