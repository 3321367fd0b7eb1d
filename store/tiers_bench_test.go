package store

import (
	"testing"

	"metad/store/alloc"
)

// buildDiskOnly fills a fresh store with benchObjects objects that live on client1's SSD alone, as
// an offloading cluster holds most of its objects: each written to a staging memory segment,
// reported offloaded by the worker itself (a LOCAL_DISK replica; its registration takes no offload
// tasks), and left on disk alone when the staging segment goes.
func buildDiskOnly(tb testing.TB) any {
	s := newTestStore(tb)
	staging := mount(tb, s, 1, alloc.TierMemory, 2*benchObjects*alloc.RoundUp(benchSize))
	if _, _, err := s.MountLocalDisk(client1, 2*benchObjects*alloc.RoundUp(benchSize), "127.0.0.1:9400", false); err != nil { // its own offloads: no task queued
		tb.Fatal(err)
	}
	const chunk = 4096
	rs := make([]OffloadResult, 0, chunk)
	flush := func() {
		errs, err := s.OffloadDone(sec, "", client1, rs)
		if err != nil {
			tb.Fatal(err)
		}
		for i, err := range errs {
			if err != nil {
				tb.Fatalf("offload %q: %v", rs[i].Key, err)
			}
		}
		rs = rs[:0]
	}
	for i := range benchObjects {
		k := benchKey(i)
		put(tb, s, sec, "", k, "", benchSize)
		if rs = append(rs, OffloadResult{Key: k, Size: benchSize, Success: true}); len(rs) == chunk {
			flush()
		}
	}
	flush()
	if _, err := s.UnmountSegment(staging); err != nil {
		tb.Fatal(err)
	}
	if n := s.Segments().Used(alloc.TierLocalDisk); n != benchObjects*alloc.RoundUp(benchSize) {
		tb.Fatalf("local disk holds %d bytes, want every object's", n)
	}
	return s
}

// buildMemoryOnly is buildDiskOnly's memory twin: the same objects, each with one MEMORY replica.
func buildMemoryOnly(tb testing.TB) any {
	s := newTestStore(tb)
	mount(tb, s, 1, alloc.TierMemory, 2*benchObjects*alloc.RoundUp(benchSize))
	for i := range benchObjects {
		put(tb, s, sec, "", benchKey(i), "", benchSize)
	}
	return s
}

// BenchmarkHeapDiskOnly: the live heap of an object whose only replica is on a client's SSD
// (LOCAL_DISK) against one whose only replica is in memory, benchObjects of each built in the same
// process (TIERS.md's target: ratio <= 1.0).
func BenchmarkHeapDiskOnly(b *testing.B) {
	mem := heapPerObject(b, "tiers-memory", buildMemoryOnly)
	disk := heapPerObject(b, "tiers-disk-only", buildDiskOnly)
	for b.Loop() {
	}
	b.ReportMetric(mem, "B/memory-object")
	b.ReportMetric(disk, "B/disk-only-object")
	b.ReportMetric(disk/mem, "disk/memory")
}
