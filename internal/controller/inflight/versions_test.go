package inflight

import (
	"testing"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestVersions(t *testing.T) {
	w := NewVersions(clocktesting.NewFakeClock(start))
	if w.Behind("a", "1") {
		t.Error("Behind with no write recorded = true")
	}
	w.Wrote("a", "10")
	if !w.Behind("a", "10") {
		t.Error("Behind at the version the write replaced = false; want true")
	}
	if w.Behind("b", "10") {
		t.Error("another object is Behind")
	}
	if w.Behind("a", "11") {
		t.Error("Behind at a newer version = true")
	}
	if w.Behind("a", "10") {
		t.Error("Behind once the cache moved on = true; the entry should be spent")
	}
	w.Wrote("a", "12")
	w.Wrote("a", "13") // a second write in the same pass
	if !w.Behind("a", "12") || !w.Behind("a", "13") {
		t.Error("Behind at either version two writes replaced = false; want true")
	}
	if w.Behind("a", "14") || w.Behind("a", "12") {
		t.Error("Behind once the cache moved past both writes = true; the entry should be spent")
	}
	w.Wrote("a", "12")
	w.Forget("a")
	if w.Behind("a", "12") {
		t.Error("Behind after Forget = true")
	}
}
