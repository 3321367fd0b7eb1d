package evict

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"metad/fsm"
	"metad/store"
	"metad/store/alloc"
)

// Benchmarks of the kernel alone, on one store with no Raft (the fake proposer applies each Evict
// as the log would): the CPU a drain costs the leader, apart from the cluster and its load
// (bench_test.go).

const kernelObjects = 1_000_000

// loadedStore returns a store of kernelObjects singletons of 1 KiB (keys as the foreground
// benchmark's), most never read and a tenth leased, laid out as a loaded store lays them out: every
// object's PutEnd state allocated long after its entry and in another order (PutStarts, then PutEnds
// shuffled), so that reading an object's entry and then its state misses the cache each time, as it
// does on a leader that has served traffic. It also returns an evictor on a fake leader over it.
func loadedStore(b *testing.B) (*store.Store, *Evictor) {
	b.Helper()
	f, err := fsm.New(store.DefaultConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	s := f.Store()
	if _, err := s.MountSegment(alloc.Segment{ID: memSeg, Name: "seg", Base: 1 << 32, Size: 2 * kernelObjects * 1024,
		Endpoint: "127.0.0.1:7000", Tier: alloc.TierMemory, Owner: client}); err != nil {
		b.Fatal(err)
	}
	keys := make([]string, kernelObjects)
	for i := range keys {
		keys[i] = benchKey(i)
		if _, err := s.PutStart(t0, uint64(i), store.PutStartRequest{Client: client, Key: keys[i], Size: 1024, Config: store.ReplicaConfig{Memory: 1}}); err != nil {
			b.Fatal(err)
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, i := range rnd.Perm(kernelObjects) {
		if err := s.PutEnd(t0, store.PutEndRequest{Client: client, Key: keys[i]}); err != nil {
			b.Fatal(err)
		}
		if i%10 == 0 {
			if _, err := s.Get(t0+int64(i), "", keys[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	var clock atomic.Int64
	clock.Store(t0 + kernelObjects) // every lease has expired
	n := &fakeNode{f: f, clock: &clock}
	n.leader.Store(true)
	flushEvents(b, n)
	ev, err := New(DefaultConfig(), n, prometheus.NewRegistry(), nil)
	if err != nil {
		b.Fatal(err)
	}
	ev.now = clock.Load
	return s, ev
}

// drainSpec is the first round of the foreground benchmark's drain: free 59% of the objects' bytes.
func drainSpec() *spec {
	return &spec{kind: KindMemory, tier: alloc.TierMemory, target: kernelObjects * 1024 * 59 / 100}
}

// BenchmarkCensus: one census (steps 1 to 3, no commit) of a drain's first round over
// loadedStore; the selection keeps what such a round keeps (DefaultConfig's RoundLimit). ns/object
// is per object visited.
func BenchmarkCensus(b *testing.B) {
	s, ev := loadedStore(b)
	sp := drainSpec()
	runtime.GC()
	b.ResetTimer()
	for b.Loop() {
		var sk skips
		p1, _, _, _, release := ev.census(s, sp, ev.now(), &sk)
		if len(p1) != DefaultConfig().RoundLimit {
			b.Fatalf("census kept %d units, want the round limit %d", len(p1), DefaultConfig().RoundLimit)
		}
		release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/kernelObjects, "ns/object")
}

// BenchmarkRound: one whole round of a drain over loadedStore (census, revalidation and marks,
// Evict proposals of DefaultConfig's BatchSize applied by the fake proposer, marks cleared): the
// leader's work for RoundLimit evictions, apply included. The store is built anew, untimed, for
// each iteration. ns/evicted is per object evicted.
func BenchmarkRound(b *testing.B) {
	evicted := 0
	for b.Loop() {
		b.StopTimer()
		s, ev := loadedStore(b)
		runtime.GC()
		b.StartTimer()
		out, err := ev.round(context.Background(), s, drainSpec())
		if err != nil {
			b.Fatal(err)
		}
		if out.objects != DefaultConfig().RoundLimit {
			b.Fatalf("round evicted %d objects, want the round limit %d", out.objects, DefaultConfig().RoundLimit)
		}
		evicted += out.objects
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(evicted), "ns/evicted")
}
