package evict

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"metad/fsm"
	"metad/store"
	"metad/store/alloc"
)

// BenchmarkCensus: one watermark census (steps 1 to 3, with no commit) of censusObjects singletons
// of 1 KiB, most never read and a tenth leased, laid out as a loaded store lays them out: every
// object's PutEnd state allocated long after its entry and in another order (PutStarts, then PutEnds
// shuffled), so that reading an object's entry and then its state misses the cache each time, as
// it does on a leader that has served traffic. The round wants census.want of the objects, so the
// selection keeps what a round of a drain keeps (DefaultConfig's RoundLimit). ns/object is per
// object visited.
func BenchmarkCensus(b *testing.B) {
	const censusObjects = 1_000_000
	f, err := fsm.New(store.DefaultConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	s := f.Store()
	if _, err := s.MountSegment(alloc.Segment{ID: memSeg, Name: "seg", Base: 1 << 32, Size: 2 * censusObjects * 1024,
		Endpoint: "127.0.0.1:7000", Tier: alloc.TierMemory, Owner: client}); err != nil {
		b.Fatal(err)
	}
	keys := make([]string, censusObjects)
	for i := range keys {
		keys[i] = benchKey(i)
		if _, err := s.PutStart(t0, uint64(i), store.PutStartRequest{Client: client, Key: keys[i], Size: 1024, Config: store.ReplicaConfig{Memory: 1}}); err != nil {
			b.Fatal(err)
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, i := range rnd.Perm(censusObjects) {
		if err := s.PutEnd(t0, store.PutEndRequest{Client: client, Key: keys[i]}); err != nil {
			b.Fatal(err)
		}
		if i%10 == 0 {
			if _, err := s.Get(t0+int64(i), "", keys[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	keys = nil
	ev, err := New(DefaultConfig(), &fakeNode{f: f}, prometheus.NewRegistry(), nil)
	if err != nil {
		b.Fatal(err)
	}
	// A drain's first round: free 59% of the objects' bytes (the foreground benchmark's drain).
	sp := &spec{kind: KindMemory, tier: alloc.TierMemory, target: censusObjects * 1024 * 59 / 100}
	runtime.GC()
	b.ResetTimer()
	for b.Loop() {
		var sk skips
		p1, _, release := ev.census(s, sp, t0+censusObjects, &sk) // every lease has expired
		if len(p1) != DefaultConfig().RoundLimit {
			b.Fatalf("census kept %d units, want the round limit %d", len(p1), DefaultConfig().RoundLimit)
		}
		release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/censusObjects, "ns/object")
}
