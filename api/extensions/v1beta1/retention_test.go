package v1beta1

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestRetentionCheck: a snapshot falls outside its spec.retention once it is older than maxAge,
// or once maxCount Ready snapshots of its Sandbox were taken after it; otherwise the check says
// how long until its maxAge passes. Without retention it is kept.
func TestRetentionCheck(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		retention   *SnapshotRetention
		age         time.Duration
		newerReady  int
		wantExpired bool
		wantWhy     string
		wantNext    time.Duration
	}{
		"no retention":          {age: 1000 * time.Hour, newerReady: 50},
		"younger than maxAge":   {retention: &SnapshotRetention{MaxAge: &metav1.Duration{Duration: time.Hour}}, age: 20 * time.Minute, wantNext: 40 * time.Minute},
		"as old as maxAge":      {retention: &SnapshotRetention{MaxAge: &metav1.Duration{Duration: time.Hour}}, age: time.Hour, wantExpired: true, wantWhy: "spec.retention.maxAge is 1h0m0s"},
		"among the newest":      {retention: &SnapshotRetention{MaxCount: ptr.To[int32](3)}, newerReady: 2},
		"pushed out":            {retention: &SnapshotRetention{MaxCount: ptr.To[int32](3)}, newerReady: 3, wantExpired: true, wantWhy: "3 Ready snapshots of Sandbox src were taken after it"},
		"both, the count first": {retention: &SnapshotRetention{MaxAge: &metav1.Duration{Duration: time.Hour}, MaxCount: ptr.To[int32](1)}, age: time.Minute, newerReady: 1, wantExpired: true, wantWhy: "maxCount is 1"},
		"both, neither yet":     {retention: &SnapshotRetention{MaxAge: &metav1.Duration{Duration: time.Hour}, MaxCount: ptr.To[int32](1)}, age: time.Minute, wantNext: 59 * time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			s := &SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s", CreationTimestamp: metav1.NewTime(created)},
				Spec: SandboxSnapshotSpec{SandboxRef: SnapshotSourceReference{Name: "src"}, Retention: tc.retention}}
			expired, why, next := RetentionCheck(s, created.Add(tc.age), tc.newerReady)
			if expired != tc.wantExpired || !strings.Contains(why, tc.wantWhy) || next != tc.wantNext {
				t.Errorf("RetentionCheck = %t, %q, %s; want %t, saying %q, %s", expired, why, next, tc.wantExpired, tc.wantWhy, tc.wantNext)
			}
		})
	}
}

// TestTakenBefore orders snapshots by creation time, then by name (creation times have a
// second's precision).
func TestTakenBefore(t *testing.T) {
	at := func(name string, sec int64) *SandboxSnapshot {
		return &SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(sec, 0)}}
	}
	for name, tc := range map[string]struct {
		a, b *SandboxSnapshot
		want bool
	}{
		"earlier":               {a: at("z", 1), b: at("a", 2), want: true},
		"later":                 {a: at("a", 2), b: at("z", 1)},
		"same second, by name":  {a: at("a", 1), b: at("b", 1), want: true},
		"same second, reversed": {a: at("b", 1), b: at("a", 1)},
	} {
		t.Run(name, func(t *testing.T) {
			if got := TakenBefore(tc.a, tc.b); got != tc.want {
				t.Errorf("TakenBefore(%s, %s) = %t; want %t", tc.a.Name, tc.b.Name, got, tc.want)
			}
		})
	}
}
