package main

import (
	"fmt"

	dto "github.com/prometheus/client_model/go"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubox-dev/kubox/internal/metrics"
)

// phaseTotals is the sum (seconds) and count of kubox_claim_phase_seconds per phase, read from
// the controllers' registry in this process.
type phaseTotals map[string]struct {
	sum   float64
	count uint64
}

var claimPhases = []string{metrics.ClaimPhaseQueued, metrics.ClaimPhaseBound, metrics.ClaimPhaseSandboxReady, metrics.ClaimPhaseStatusWritten}

func readPhases() (phaseTotals, error) {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return nil, err
	}
	out := phaseTotals{}
	for _, f := range families {
		if f.GetName() != "kubox_claim_phase_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			out[labelValue(m, "phase")] = struct {
				sum   float64
				count uint64
			}{h.GetSampleSum(), h.GetSampleCount()}
		}
	}
	return out, nil
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// printPhases prints the mean time per phase of the claims observed between before and after.
func printPhases(before, after phaseTotals) {
	fmt.Printf("| controller phase (kubox_claim_phase_seconds) | claims | mean ms |\n|---|---|---|\n")
	for _, p := range claimPhases {
		n := after[p].count - before[p].count
		if n == 0 {
			fmt.Printf("| %s | 0 | - |\n", p)
			continue
		}
		fmt.Printf("| %s | %d | %.1f |\n", p, n, (after[p].sum-before[p].sum)*1000/float64(n))
	}
	fmt.Println()
}
