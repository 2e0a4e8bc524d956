package sdk

import (
	"slices"
	"testing"
	"time"

	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// TestRunCodeLatency measures, and logs, the Go SDK's figures for the code interpreter through
// the real router: claim from a warm pool to the first RunCode result ("create → first
// runCode", the claim released after each), and a trivial RunCode's round trip in one sandbox.
// It asserts only the results; the figures are for docs/sdk-go.md ("Run code"), read with
//
//	go test ./test/integration/sdk/ -run TestRunCodeLatency -v
func TestRunCodeLatency(t *testing.T) {
	f := setupCode(t)
	ctx := t.Context()
	const creates, trips = 10, 100
	var first []time.Duration
	for range creates {
		start := time.Now()
		sb, err := f.sdk.Claim(ctx, kubox.FromPool("python"))
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		exec, err := sb.RunCode(ctx, "1 + 1", nil)
		if err != nil || exec.Text() != "2" {
			t.Fatalf("the first RunCode(1 + 1) = %+v, %v; want 2", exec, err)
		}
		first = append(first, time.Since(start))
		if err := sb.Close(ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	sb, err := f.sdk.Claim(ctx, kubox.FromPool("python"))
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	var rt []time.Duration
	for range trips {
		start := time.Now()
		if exec, err := sb.RunCode(ctx, "1 + 1", nil); err != nil || exec.Text() != "2" {
			t.Fatalf("RunCode(1 + 1) = %+v, %v; want 2", exec, err)
		}
		rt = append(rt, time.Since(start))
	}
	p := func(d []time.Duration, q int) time.Duration { slices.Sort(d); return d[min(len(d)-1, len(d)*q/100)] }
	t.Logf("Go SDK through kubox-router: claim (warm pool) → first RunCode result, %d claims: p50 %s, p99 %s; "+
		"RunCode(1 + 1) round trip, %d runs: p50 %s, p99 %s", creates, p(first, 50), p(first, 99), trips, p(rt, 50), p(rt, 99))
}
