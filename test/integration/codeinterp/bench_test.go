package codeinterp_test

import (
	"slices"
	"testing"
	"time"

	"github.com/kubox-dev/kubox/internal/agent/codeinterp"
)

// BenchmarkRunCode measures runCode's round trip against the agent on 127.0.0.1, as
// @e2b/code-interpreter makes it (POST /execute, the NDJSON answer read to its end), in the
// default Python context: a trivial expression, and a 1 MiB print. It reports p50 and p99 over
// the iterations.
//
//	go test ./internal/agent/codeinterp/ -run '^$' -bench RunCode -benchtime 200x
func BenchmarkRunCode(b *testing.B) {
	for name, bc := range map[string]struct {
		code   string
		stdout int
	}{
		"trivial":     {"1 + 1", 0},
		"1MiB-output": {"print('x' * ((1 << 20) - 1))", 1 << 20},
	} {
		b.Run(name, func(b *testing.B) {
			s := startSandbox(b)
			s.run(b, codeinterp.ExecuteRequest{Code: "None"}) // the interpreter's start is not timed
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				e := s.run(b, codeinterp.ExecuteRequest{Code: bc.code})
				took = append(took, time.Since(start))
				if e.Error != nil || len(e.Stdout) != bc.stdout || (bc.stdout == 0 && e.main() != "2") {
					b.Fatalf("unexpected execution: error %v, %d bytes of stdout, result %q", e.Error, len(e.Stdout), e.main())
				}
			}
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(ms(took[len(took)*50/100]), "p50-ms")
			b.ReportMetric(ms(took[min(len(took)-1, len(took)*99/100)]), "p99-ms")
			if bc.stdout > 0 {
				b.ReportMetric(float64(bc.stdout)/(1<<20), "output-MiB")
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
