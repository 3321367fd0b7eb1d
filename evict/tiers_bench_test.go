package evict

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
)

// tierRoundTarget is the round both stores of BenchmarkRoundDiskOnlyMix run: free 10,000 objects'
// memory, which each can.
const tierRoundTarget = 10_000 * 1024

// mixedStore is loadedStore with diskOnly of every 100 objects on the client's SSD alone (written
// through a staging segment, reported offloaded, and left on disk when the staging segment goes):
// kernelObjects singletons of 1 KiB, PutEnds shuffled, a tenth leased, every lease expired by the
// evictor's clock.
func mixedStore(b *testing.B, diskOnly int) (*store.Store, *Evictor) {
	b.Helper()
	f, err := fsm.New(store.DefaultConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	s := f.Store()
	size := uint64(2 * kernelObjects * 1024)
	for _, seg := range []alloc.ID{memSeg, stagingSeg} {
		if _, err := s.MountSegment(alloc.Segment{ID: seg, Name: "seg", Base: 1 << 32 * uint64(seg[15]), Size: size,
			Endpoint: "127.0.0.1:7000", Tier: alloc.TierMemory, Owner: client}); err != nil {
			b.Fatal(err)
		}
	}
	if _, _, err := s.MountLocalDisk(client, size, "127.0.0.1:9400", false); err != nil { // its own offloads: no task queued
		b.Fatal(err)
	}
	keys := make([]string, kernelObjects)
	var toDisk []store.OffloadResult
	for i := range keys {
		keys[i] = benchKey(i)
		seg := memSeg
		if i%100 < diskOnly {
			seg = stagingSeg
			toDisk = append(toDisk, store.OffloadResult{Key: keys[i], Size: 1024, Success: true})
		}
		if _, err := s.PutStart(t0, uint64(i), store.PutStartRequest{Client: client, Key: keys[i], Size: 1024,
			Config: store.ReplicaConfig{Memory: 1, Preferred: []alloc.ID{seg}}}); err != nil {
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
	for lo := 0; lo < len(toDisk); lo += 4096 {
		if _, err := s.OffloadDone(t0, "", client, toDisk[lo:min(lo+4096, len(toDisk))]); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.UnmountSegment(stagingSeg); err != nil {
		b.Fatal(err)
	}
	var clock atomic.Int64
	clock.Store(t0 + kernelObjects)
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

// flushEvents applies one entry through n: the changes a benchmark made straight on the store wait
// for the FSM's next entry to be published as watch events, and would otherwise weigh on the first
// proposal it times.
func flushEvents(b *testing.B, n *fakeNode) {
	b.Helper()
	if r := n.apply(&metadv1.Command{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: "flush"}}}); r.Reason != store.OK {
		b.Fatal(r.Message)
	}
}

// BenchmarkRoundDiskOnlyMix: TIERS.md's eviction target. The same memory round (free 10,000
// objects' memory) over kernelObjects objects with 95 % of them on disk alone, against a store with
// none on disk, in this process: for each store in turn, built and the other gone (so that each
// round meets the same heap), the census time (median of three) and one whole round (census,
// revalidation, proposals applied). ratio = mix / memory-only; the target is <= 1.2.
func BenchmarkRoundDiskOnlyMix(b *testing.B) {
	for b.Loop() {
	}
	sp := func() *spec { return &spec{kind: KindMemory, tier: alloc.TierMemory, target: tierRoundTarget} }
	var census, round [2]time.Duration
	for i, mix := range []int{0, 95} {
		s, ev := mixedStore(b, mix)
		var cs []time.Duration
		for range 3 {
			runtime.GC()
			var sk skips
			start := time.Now()
			_, _, _, _, release := ev.census(s, sp(), ev.now(), &sk)
			cs = append(cs, time.Since(start))
			release()
		}
		slices.Sort(cs)
		census[i] = cs[1]
		runtime.GC()
		start := time.Now()
		out, err := ev.round(context.Background(), s, sp())
		round[i] = time.Since(start)
		if err != nil || out.bytes < tierRoundTarget {
			b.Fatalf("round freed %d bytes (%v), want %d", out.bytes, err, tierRoundTarget)
		}
		runtime.KeepAlive(s)
	}
	b.ReportMetric(float64(census[0].Milliseconds()), "ms/census-memory-only")
	b.ReportMetric(float64(census[1].Milliseconds()), "ms/census-95%-disk")
	b.ReportMetric(float64(census[1])/float64(census[0]), "census-ratio")
	b.ReportMetric(float64(round[0].Milliseconds()), "ms/round-memory-only")
	b.ReportMetric(float64(round[1].Milliseconds()), "ms/round-95%-disk")
	b.ReportMetric(float64(round[1])/float64(round[0]), "round-ratio")
}
