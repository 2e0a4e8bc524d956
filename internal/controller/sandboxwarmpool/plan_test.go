package sandboxwarmpool

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

// planSummary is a plan in names, for comparison.
type planSummary struct {
	Excess, NotReady, Stale, Tampered []string
	Create                            int
	Held                              []string
	GraceEndsIn                       time.Duration
}

func summarize(p plan) planSummary {
	s := planSummary{Create: p.create, Held: names(p.held), GraceEndsIn: p.graceEndsIn}
	for _, d := range p.deletions {
		switch d.reason {
		case deleteExcess:
			s.Excess = append(s.Excess, d.member.sandbox.Name)
		case deleteNotReady:
			s.NotReady = append(s.NotReady, d.member.sandbox.Name)
		case deleteStale:
			s.Stale = append(s.Stale, d.member.sandbox.Name)
		case deleteTampered:
			s.Tampered = append(s.Tampered, d.member.sandbox.Name)
		}
	}
	return s
}

func input(replicas int, strategy extv1beta1.WarmPoolUpdateStrategyType, ms ...*memberWrapper) planInput {
	return planInput{
		replicas: replicas, strategy: strategy, maxBatch: 300, templateFound: true,
		members: members(ms...), now: testNow, grace: testGrace,
		// RollingUpdate cases set their own bounds.
	}
}

func rolling(replicas, surge, unavailable int, ms ...*memberWrapper) planInput {
	in := input(replicas, extv1beta1.WarmPoolUpdateStrategyRollingUpdate, ms...)
	in.maxSurge, in.maxUnavailable = surge, unavailable
	return in
}

const (
	onReplenish = extv1beta1.WarmPoolUpdateStrategyOnReplenish
	recreate    = extv1beta1.WarmPoolUpdateStrategyRecreate
)

func TestMakePlan(t *testing.T) {
	cases := map[string]struct {
		in   planInput
		want planSummary
	}{
		"empty pool is filled": {
			in:   input(3, onReplenish),
			want: planSummary{Create: 3},
		},
		"a tampered member is replaced even OnReplenish": {
			in:   input(2, onReplenish, makeMember("a", time.Hour).Ready(), makeMember("b", time.Hour).Ready().Tampered()),
			want: planSummary{Tampered: []string{"b"}, Create: 1},
		},
		"creations are capped by maxBatchSize": {
			in: func() planInput {
				in := input(10, onReplenish, makeMember("a", time.Second).Ready())
				in.maxBatch = 4
				return in
			}(),
			want: planSummary{Create: 4},
		},
		"full pool is left alone": {
			in:   input(2, onReplenish, makeMember("a", time.Hour).Ready(), makeMember("b", time.Minute)),
			want: planSummary{GraceEndsIn: 4 * time.Minute},
		},
		"replicas 0 empties the pool": {
			in:   input(0, onReplenish, makeMember("a", time.Hour).Ready(), makeMember("b", time.Minute).Ready()),
			want: planSummary{Excess: []string{"b", "a"}},
		},
		"scale down deletes not-ready members first, then the newest": {
			in: input(2, onReplenish,
				makeMember("old", 3*time.Hour).Ready(),
				makeMember("middle", 2*time.Hour).Ready(),
				makeMember("new", time.Hour).Ready(),
				makeMember("starting", time.Minute),
			),
			want: planSummary{Excess: []string{"starting", "new"}, GraceEndsIn: 4 * time.Minute},
		},
		"scale down deletes stale members before fresh ones": {
			in: input(1, onReplenish,
				makeMember("fresh", time.Minute).Ready(),
				makeMember("stale", time.Hour).Ready().Stale(),
			),
			want: planSummary{Excess: []string{"stale"}},
		},
		"creation order ties are broken by name": {
			in: input(1, onReplenish,
				makeMember("b", time.Hour).Ready(),
				makeMember("a", time.Hour).Ready(),
			),
			want: planSummary{Excess: []string{"a"}},
		},
		"a member not ready past the grace period is replaced": {
			in: input(2, onReplenish,
				makeMember("ok", time.Hour).Ready(),
				makeMember("stuck", time.Hour).NotReadyFor(testGrace),
			),
			want: planSummary{NotReady: []string{"stuck"}, Create: 1},
		},
		"a member not ready within the grace period is waited for": {
			in: input(2, onReplenish,
				makeMember("ok", time.Hour).Ready(),
				makeMember("flapping", time.Hour).NotReadyFor(4*time.Minute),
				makeMember("starting", 2*time.Minute),
			),
			want: planSummary{Excess: []string{"starting"}, GraceEndsIn: time.Minute},
		},
		"an unschedulable member past the grace period is held, not replaced": {
			in: input(2, onReplenish,
				makeMember("ok", time.Hour).Ready(),
				makeMember("pending", time.Hour).Unschedulable("0/3 nodes are available"),
			),
			want: planSummary{Held: []string{"pending"}},
		},
		"a member whose Pod terminated is replaced at once": {
			in: input(1, onReplenish,
				makeMember("done", time.Second).Finished(),
			),
			want: planSummary{NotReady: []string{"done"}, Create: 1},
		},
		"without a template nothing is created or replaced": {
			in: func() planInput {
				in := input(2, recreate, makeMember("stuck", time.Hour))
				in.templateFound = false
				return in
			}(),
			want: planSummary{},
		},
		"without a template excess members still go": {
			in: func() planInput {
				in := input(1, recreate, makeMember("a", time.Hour).Ready(), makeMember("b", time.Minute).Ready())
				in.templateFound = false
				return in
			}(),
			want: planSummary{Excess: []string{"b"}},
		},
		"OnReplenish keeps stale members": {
			in: input(2, onReplenish,
				makeMember("a", time.Hour).Ready().Stale(),
				makeMember("b", time.Hour).Ready().Stale(),
			),
			want: planSummary{},
		},
		"OnReplenish builds replacements from the current template": {
			in: input(2, onReplenish,
				makeMember("a", time.Hour).Ready().Stale(),
			),
			want: planSummary{Create: 1},
		},
		"Recreate deletes every stale member and refills": {
			in: input(3, recreate,
				makeMember("a", time.Hour).Ready().Stale(),
				makeMember("b", time.Minute).Stale(),
				makeMember("c", time.Minute).Ready(),
			),
			// b's grace timer is still set: a spurious wake-up is harmless.
			want: planSummary{Stale: []string{"a", "b"}, Create: 2, GraceEndsIn: 4 * time.Minute},
		},
		"RollingUpdate surges first when no member may be unavailable": {
			in: rolling(4, 1, 0,
				makeMember("a", time.Hour).Ready().Stale(),
				makeMember("b", time.Hour).Ready().Stale(),
				makeMember("c", time.Hour).Ready().Stale(),
				makeMember("d", time.Hour).Ready().Stale(),
			),
			want: planSummary{Create: 1},
		},
		"RollingUpdate waits for the surge member to be ready": {
			in: rolling(4, 1, 0,
				makeMember("a", time.Hour).Ready().Stale(),
				makeMember("b", time.Hour).Ready().Stale(),
				makeMember("c", time.Hour).Ready().Stale(),
				makeMember("d", time.Hour).Ready().Stale(),
				makeMember("new", time.Second),
			),
			want: planSummary{GraceEndsIn: testGrace - time.Second},
		},
		"RollingUpdate replaces a stale member once the surge member is ready": {
			in: rolling(4, 1, 0,
				makeMember("a", 4*time.Hour).Ready().Stale(),
				makeMember("b", 3*time.Hour).Ready().Stale(),
				makeMember("c", 2*time.Hour).Ready().Stale(),
				makeMember("d", time.Hour).Ready().Stale(),
				makeMember("new", time.Second).Ready(),
			),
			want: planSummary{Stale: []string{"d"}, Create: 1},
		},
		"RollingUpdate deletes first when it may not surge": {
			in: rolling(4, 0, 1,
				makeMember("a", time.Hour).Ready().Stale(),
				makeMember("b", time.Hour).Ready().Stale(),
				makeMember("c", time.Hour).Ready().Stale(),
				makeMember("d", time.Hour).Ready().Stale(),
			),
			want: planSummary{Stale: []string{"a"}, Create: 1},
		},
		"RollingUpdate keeps ready members at replicas - maxUnavailable": {
			in: rolling(4, 0, 1,
				makeMember("a", time.Hour).Ready().Stale(),
				makeMember("b", time.Hour).Ready().Stale(),
				makeMember("c", time.Hour).Ready().Stale(),
				makeMember("new", time.Second),
			),
			want: planSummary{GraceEndsIn: testGrace - time.Second},
		},
		"RollingUpdate deletes stale members that are not ready regardless": {
			in: rolling(4, 1, 0,
				makeMember("a", time.Hour).Ready().Stale(),
				makeMember("b", time.Hour).Ready().Stale(),
				makeMember("c", time.Hour).Ready().Stale(),
				makeMember("d", time.Minute).Stale(),
			),
			want: planSummary{Stale: []string{"d"}, Create: 2, GraceEndsIn: 4 * time.Minute},
		},
		"RollingUpdate refills a pool its claims emptied within maxSurge": {
			in: rolling(4, 1, 1,
				makeMember("a", time.Hour).Ready().Stale(),
			),
			want: planSummary{Create: 4},
		},
		"RollingUpdate scaled down sheds stale and excess fresh members": {
			in: rolling(2, 1, 0,
				makeMember("s1", time.Hour).Ready().Stale(),
				makeMember("s2", time.Hour).Ready().Stale(),
				makeMember("f1", 3*time.Minute).Ready(),
				makeMember("f2", 2*time.Minute).Ready(),
				makeMember("f3", time.Minute).Ready(),
			),
			want: planSummary{Stale: []string{"s1", "s2"}, Excess: []string{"f3"}},
		},
		"RollingUpdate without stale members fills like the others": {
			in:   rolling(3, 1, 0, makeMember("a", time.Hour).Ready()),
			want: planSummary{Create: 2},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := summarize(makePlan(tc.in))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("makePlan() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRollingUpdateStaysWithinBounds plays whole rollouts against the planner: each round carries
// out a plan (deletions, then creations) and then lets the new members become Ready. At every
// moment the pool must hold at most replicas + maxSurge members and, once it was full, at least
// replicas - maxUnavailable Ready ones; and the rollout must end with replicas Ready members
// built from the current template.
func TestRollingUpdateStaysWithinBounds(t *testing.T) {
	for _, tc := range []struct{ replicas, surge, unavailable int }{
		{1, 1, 0}, {1, 0, 1}, {3, 1, 0}, {3, 0, 1}, {4, 1, 1}, {5, 2, 0}, {5, 0, 2}, {10, 3, 2}, {10, 10, 0}, {10, 0, 10},
	} {
		t.Run(fmt.Sprintf("replicas=%d,maxSurge=%d,maxUnavailable=%d", tc.replicas, tc.surge, tc.unavailable), func(t *testing.T) {
			var ms []*memberWrapper
			for i := range tc.replicas {
				ms = append(ms, makeMember(fmt.Sprintf("stale-%d", i), time.Hour).Ready().Stale())
			}
			next := 0
			for round := 0; ; round++ {
				if round > 4*tc.replicas+4 {
					t.Fatalf("The rollout did not finish in %d rounds", round)
				}
				p := makePlan(rolling(tc.replicas, tc.surge, tc.unavailable, ms...))
				deleted := map[string]bool{}
				for _, d := range p.deletions {
					deleted[d.member.sandbox.Name] = true
				}
				var kept []*memberWrapper
				ready := 0
				for _, w := range ms {
					if !deleted[w.m.sandbox.Name] {
						kept = append(kept, w)
						if w.m.ready {
							ready++
						}
					}
				}
				if ready < tc.replicas-tc.unavailable {
					t.Fatalf("Round %d: %d members ready after the deletions; want at least %d", round, ready, tc.replicas-tc.unavailable)
				}
				for range p.create {
					kept = append(kept, makeMember(fmt.Sprintf("fresh-%d", next), time.Second))
					next++
				}
				if len(kept) > tc.replicas+tc.surge {
					t.Fatalf("Round %d: %d members after the creations; want at most %d", round, len(kept), tc.replicas+tc.surge)
				}
				if len(p.deletions) == 0 && p.create == 0 {
					fresh := 0
					for _, w := range kept {
						if !w.m.stale && w.m.ready {
							fresh++
						}
					}
					if fresh != tc.replicas || len(kept) != tc.replicas {
						t.Fatalf("Round %d: the rollout stopped with %d members, %d of them fresh and ready; want %d of each",
							round, len(kept), fresh, tc.replicas)
					}
					return
				}
				// The new members start.
				for _, w := range kept {
					w.Ready()
				}
				ms = kept
			}
		})
	}
}

func TestSlowStartBatch(t *testing.T) {
	cases := map[string]struct {
		count, failAt                int // failAt < 0: no call fails
		wantSucceeded, wantAttempted int
		wantErr                      bool
	}{
		"nothing":                  {count: 0, failAt: -1},
		"all succeed":              {count: 10, failAt: -1, wantSucceeded: 10, wantAttempted: 10},
		"first call fails":         {count: 10, failAt: 0, wantAttempted: 1, wantErr: true},
		"fails in the third batch": {count: 10, failAt: 4, wantSucceeded: 6, wantAttempted: 7, wantErr: true},
		"fails in the last batch":  {count: 10, failAt: 9, wantSucceeded: 9, wantAttempted: 10, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			succeeded, attempted, err := slowStartBatch(tc.count, func(i int) error {
				if i == tc.failAt {
					return fmt.Errorf("call %d failed", i)
				}
				return nil
			})
			got := []any{succeeded, attempted, err != nil}
			if diff := cmp.Diff([]any{tc.wantSucceeded, tc.wantAttempted, tc.wantErr}, got); diff != "" {
				t.Errorf("slowStartBatch() (succeeded, attempted, failed) mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
