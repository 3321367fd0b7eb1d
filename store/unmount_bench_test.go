package store

import (
	"testing"
	"time"
)

// BenchmarkUnmountClient: one UnmountClient of the client whose one segment holds every replica of
// benchObjects singleton objects, so that each object is erased. ns/op is the whole unmount.
func BenchmarkUnmountClient(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		s, _ := newBenchStore(b)
		for i := range benchObjects {
			put(b, s, sec, benchTenantNames[i%benchTenants], benchKey(i), "", benchSize)
		}
		b.StartTimer()
		start := time.Now()
		r := s.UnmountClient(client1, true)
		if r.Erased != benchObjects {
			b.Fatalf("erased %d, want %d", r.Erased, benchObjects)
		}
		b.ReportMetric(float64(time.Since(start).Nanoseconds())/benchObjects, "ns/object")
	}
}
