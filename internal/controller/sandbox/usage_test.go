package sandbox

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/usage"
)

func TestUsageSummary(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	summary := func(sec int, running, suspended, wakes int64) *sandboxv1beta1.UsageStatus {
		return &sandboxv1beta1.UsageStatus{LastUpdateTime: metav1.NewTime(at(sec)), RunningSeconds: running,
			SuspendedSeconds: suspended, Wakes: wakes, RequestedCPUCoreSeconds: running}
	}
	figures := func(running, suspended float64, wakes int64) usage.Figures {
		return usage.Figures{RunningSeconds: running, SuspendedSeconds: suspended, Wakes: wakes, RequestedCPUCoreSeconds: running}
	}
	const interval = 5 * time.Minute
	cases := map[string]struct {
		prev      *sandboxv1beta1.UsageStatus
		f         usage.Figures
		phase     usage.State
		now       int
		want      *sandboxv1beta1.UsageStatus
		wantAfter time.Duration
	}{
		"nothing counted yet writes nothing":      {f: figures(0.9, 0, 0), phase: usage.StateRunning, now: 1, wantAfter: 299 * time.Second},
		"running before the first interval waits": {f: figures(60, 0, 0), phase: usage.StateRunning, now: 60, wantAfter: 4 * time.Minute},
		"running past the first interval writes": {f: figures(300, 0, 0), phase: usage.StateRunning, now: 300,
			want: summary(300, 300, 0, 0), wantAfter: interval},
		"running within an interval of the last write keeps it": {prev: summary(300, 300, 0, 0), f: figures(400, 0, 0), phase: usage.StateRunning, now: 400,
			want: summary(300, 300, 0, 0), wantAfter: 200 * time.Second},
		"running an interval after the last write writes": {prev: summary(300, 300, 0, 0), f: figures(600, 0, 0), phase: usage.StateRunning, now: 600,
			want: summary(600, 600, 0, 0), wantAfter: interval},
		"suspended after running writes at once": {prev: summary(300, 300, 0, 0), f: figures(310, 0, 0), phase: usage.StateSuspended, now: 310,
			want: summary(310, 310, 0, 0)},
		"suspended, first summary at once":          {f: figures(10, 0, 0), phase: usage.StateSuspended, now: 10, want: summary(10, 10, 0, 0)},
		"suspended having never run writes nothing": {f: figures(0, 20, 0), phase: usage.StateSuspended, now: 20},
		"neither running nor suspended writes and schedules nothing": {prev: summary(300, 300, 0, 0), f: figures(900, 0, 0),
			now: 900, want: summary(300, 300, 0, 0)},
		"staying suspended writes nothing more": {prev: summary(310, 310, 0, 0), f: figures(310, 5000, 0), phase: usage.StateSuspended, now: 5310,
			want: summary(310, 310, 0, 0)},
		"woken and suspended again within an interval writes at the suspend": {prev: summary(310, 310, 0, 0), f: figures(312, 100, 1),
			phase: usage.StateSuspended, now: 412, want: summary(412, 312, 100, 1)},
		"unchanged figures are never rewritten, even when due": {prev: summary(300, 300, 0, 0), f: figures(300.5, 0, 0),
			phase: usage.StateRunning, now: 9000, want: summary(300, 300, 0, 0), wantAfter: interval},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, after := usageSummary(tc.prev, tc.f, tc.phase, t0, at(tc.now), interval)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			if after != tc.wantAfter {
				t.Errorf("next look after %v, want %v", after, tc.wantAfter)
			}
		})
	}
}
