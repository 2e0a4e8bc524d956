package process

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"

	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// BenchmarkRunTrue is the round trip of RunProcess(["true"]) through a connect client over
// loopback: request, fork+exec, reap, drain, response. It reports the median and 99th percentile.
func BenchmarkRunTrue(b *testing.B) {
	m := newBenchManager(b, Options{})
	srv := newTestServer(b, m)
	for name, c := range clients(b, srv) {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			req := connect.NewRequest(&agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: []string{"true"}}})
			times := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				res, err := c.client.RunProcess(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				if code := res.Msg.GetExit().GetExitCode(); code != 0 {
					b.Fatalf("true exited %d", code)
				}
				times = append(times, time.Since(start))
			}
			reportPercentiles(b, times)
		})
	}
}

// BenchmarkStreamStdout streams a process writing 256 MiB to stdout (head -c from /dev/zero) to a
// follower: in process (the Manager alone) and through a connect client over loopback, each without
// and with flow control. It reports MB/s of the process's output and how much of it the follower
// was too slow for (dropped-MiB/op; 0 means every byte arrived, as flow control guarantees).
func BenchmarkStreamStdout(b *testing.B) {
	const size = 256 << 20
	m := newBenchManager(b, Options{})
	srv := newTestServer(b, m)
	argv := []string{"head", "-c", fmt.Sprint(size), "/dev/zero"}
	for _, flow := range []bool{false, true} {
		mode := "drop"
		if flow {
			mode = "flow-control"
		}
		b.Run("manager/"+mode, func(b *testing.B) {
			b.SetBytes(size)
			var got, dropped int64
			for b.Loop() {
				p, err := m.Start(Spec{Argv: argv, FlowControl: flow})
				if err != nil {
					b.Fatal(err)
				}
				err = p.Follow(context.Background(), 0, 0, flow, func(ev Event) error {
					if ev.Output != nil {
						got += int64(len(ev.Output.Data))
					}
					if ev.Dropped != nil {
						dropped += ev.Dropped.Length
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			reportStream(b, got, dropped, size)
		})
		for name, c := range clients(b, srv) {
			b.Run(name+"/"+mode, func(b *testing.B) {
				b.SetBytes(size)
				var got, dropped int64
				for b.Loop() {
					got1, dropped1 := streamOnce(b, c.client, argv, flow)
					got, dropped = got+got1, dropped+dropped1
				}
				reportStream(b, got, dropped, size)
			})
		}
	}
}

func streamOnce(b *testing.B, client agentv1connect.ProcessServiceClient, argv []string, flow bool) (got, dropped int64) {
	stream, err := client.StartProcess(context.Background(), connect.NewRequest(&agentv1.StartProcessRequest{
		Spec:        &agentv1.ProcessSpec{Argv: argv},
		FlowControl: flow,
	}))
	if err != nil {
		b.Fatal(err)
	}
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		got += int64(len(ev.GetOutput().GetData()))
		dropped += ev.GetDropped().GetLength()
	}
	if err := stream.Err(); err != nil {
		b.Fatal(err)
	}
	return got, dropped
}

func reportStream(b *testing.B, got, dropped, size int64) {
	b.Helper()
	n := int64(b.N)
	if got+dropped != n*size {
		b.Fatalf("received %d and dropped %d bytes, want %d in all", got, dropped, n*size)
	}
	b.ReportMetric(float64(dropped)/float64(n)/(1<<20), "dropped-MiB/op")
}

func reportPercentiles(b *testing.B, times []time.Duration) {
	b.Helper()
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	at := func(q float64) float64 {
		return float64(times[min(len(times)-1, int(q*float64(len(times))))].Microseconds())
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

func newBenchManager(b *testing.B, opts Options) *Manager {
	b.Helper()
	m, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			b.Error(err)
		}
	})
	return m
}
