package sandboxclaim

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

func TestClaimMemory(t *testing.T) {
	clk := clocktesting.NewFakeClock(testNow.Time)
	m := newClaimMemory(clk)
	uid := types.UID("c1")

	if name, _ := m.expected(uid); name != "" {
		t.Errorf("expected() of a new claim = %q; want none", name)
	}
	m.expect(uid, "pool-abcde")
	if name, recent := m.expected(uid); name != "pool-abcde" || !recent {
		t.Errorf("expected() just after expect = %q, recent %t; want pool-abcde, true", name, recent)
	}
	clk.Step(expectationTTL + time.Millisecond)
	if name, recent := m.expected(uid); name != "pool-abcde" || recent {
		t.Errorf("expected() after the TTL = %q, recent %t; want pool-abcde, false (ask the API server)", name, recent)
	}
	m.observed(uid)
	if name, _ := m.expected(uid); name != "" {
		t.Errorf("expected() after observed = %q; want none", name)
	}

	m.statusWritten(uid, "10")
	if !m.cacheBehind(uid, "10") {
		t.Error("cacheBehind() at the version the write replaced = false; want true")
	}
	if m.cacheBehind(uid, "11") {
		t.Error("cacheBehind() at a newer version = true; want false")
	}
	if m.cacheBehind(uid, "10") {
		t.Error("cacheBehind() once the cache moved on = true; want false (the hint is spent)")
	}
}

func member(name, rv string) *sandboxv1beta1.Sandbox {
	sb := testutil.MakeSandbox(name, testNS).Obj()
	sb.UID = types.UID(name + "-uid")
	sb.ResourceVersion = rv
	return sb
}
