package activity

import (
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
)

// BenchmarkTrackerWrap is what the tracker adds to every request the agent serves.
func BenchmarkTrackerWrap(b *testing.B) {
	h := NewTracker(nil).Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	w, r := httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/kubox.agent.v1.ProcessService/ListProcesses", nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h.ServeHTTP(w, r)
		}
	})
}

// BenchmarkRunningRealProc is one GetActivity's scan of this machine's /proc (a sandbox's
// container has far fewer processes).
func BenchmarkRunningRealProc(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("no /proc")
	}
	p := Processes{Self: os.Getpid()}
	b.ReportAllocs()
	for b.Loop() {
		procs, err := p.Running()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(procs)), "procs")
	}
}
