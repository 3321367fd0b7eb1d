package store

import (
	"cmp"
	"fmt"
	"math/bits"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"metad/store/alloc"
)

// Benchmarks of the store against the old shard-lock design (baseline_test.go), both run in the same
// process on identical data: each benchmark has the sub-benchmarks .../metad and .../baseline, so
// `-cpu 1,2` measures both at each CPU count. `make bench-store` runs them and prints the ratios
// (store/internal/benchratio, which holds the targets); docs/performance.md has the figures.
//
// The 1M-object fixtures are built once per process, on first use, and only by benchmarks, so
// `go test ./store/` never builds them. Keys are 40 bytes, every object has one MEMORY replica, and
// objects are spread round-robin over benchTenants tenants.

const (
	benchObjects = 1_000_000
	benchTenants = 4
	benchSize    = 1024 // object size; one MEMORY replica each
	benchGroup   = 8    // members per explicit group
	batchReads   = 16
	batchWrites  = 16
)

var benchTenantNames = [benchTenants]string{DefaultTenant, "tenant-a", "tenant-b", "tenant-c"}

// benchKey is the 40-byte key of object i: 40 hex digits, like the digest a KV cache keys a block by.
func benchKey(i int) string {
	r := benchRand{uint64(i)}
	return fmt.Sprintf("%016x%016x%08x", r.next(), r.next(), uint32(r.next()))
}

// benchFixture is one data set held by both designs.
type benchFixture struct {
	s    *Store
	base *baseline
	keys [benchTenants][]string // per tenant, in build order; object i is keys[i%T][i/T]
	// collide[t] are the keys of tenant t that land in one baseline shard (the same shard for all t).
	collide [benchTenants][]string
}

var (
	singletonOnce, groupOnce sync.Once
	singletonFix, groupFix   *benchFixture
)

func singletonFixture(b *testing.B) *benchFixture {
	singletonOnce.Do(func() { singletonFix = buildFixture(b, false) })
	if singletonFix == nil {
		b.Fatal("the singleton fixture failed to build")
	}
	return singletonFix
}

func groupFixture(b *testing.B) *benchFixture {
	groupOnce.Do(func() { groupFix = buildFixture(b, true) })
	if groupFix == nil {
		b.Fatal("the group fixture failed to build")
	}
	return groupFix
}

// benchGroupName is the explicit group of a tenant's j-th key (groups of benchGroup consecutive keys).
func benchGroupName(j int) string { return fmt.Sprintf("group-%08d", j/benchGroup) }

// newBenchStore returns a store with the bench tenants and one MEMORY segment for every object.
func newBenchStore(tb testing.TB) (*Store, alloc.ID) {
	s := newTestStore(tb)
	seg := mount(tb, s, 1, alloc.TierMemory, 2*benchObjects*alloc.RoundUp(benchSize))
	for _, t := range benchTenantNames[1:] {
		if _, err := s.RegisterTenant(t, 0); err != nil {
			tb.Fatal(err)
		}
	}
	return s, seg
}

// buildFixture puts benchObjects objects into a store (PutStart and PutEnd) and the same objects,
// with the same replicas, into a baseline.
func buildFixture(b *testing.B, grouped bool) *benchFixture {
	start := time.Now()
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no collection while building: only faster
	f := &benchFixture{base: newBaseline()}
	f.s, _ = newBenchStore(b)
	group := ""
	for i := range benchObjects {
		t, j := i%benchTenants, i/benchTenants
		tenant, key := benchTenantNames[t], benchKey(i)
		if grouped && t == 0 && j%benchGroup == 0 {
			group = benchGroupName(j) // one string per group index, shared by the tenants' groups
		}
		reps := put(b, f.s, sec, tenant, key, group, benchSize)
		for k := range reps {
			reps[k].Status = Complete
		}
		if err := f.base.put(tenant, key, group, &baseObject{size: benchSize, writer: client1, putStart: sec,
			replicas: reps}); err != nil {
			b.Fatal(err)
		}
		f.keys[t] = append(f.keys[t], key)
	}
	target := baseShardIndex(benchTenantNames[0], f.keys[0][0])
	for t, tenant := range benchTenantNames {
		for _, k := range f.keys[t] {
			if baseShardIndex(tenant, k) == target {
				f.collide[t] = append(f.collide[t], k)
			}
		}
	}
	b.Logf("fixture (grouped=%v): %d objects in both designs in %s", grouped, benchObjects, time.Since(start).Round(time.Millisecond))
	return f
}

// heapPerObject builds benchObjects objects with build and returns the live heap they added, per
// object: HeapAlloc after two collections, before and after. The result is cached per name, so each
// structure is built once per process whatever b.N and -cpu are.
var (
	heapMu    sync.Mutex
	heapCache = map[string]float64{}
)

func heapPerObject(b *testing.B, name string, build func(tb testing.TB) any) float64 {
	heapMu.Lock()
	defer heapMu.Unlock()
	if v, ok := heapCache[name]; ok {
		return v
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	gc := debug.SetGCPercent(-1) // no collection while building: only faster, the figure is taken after
	x := build(b)
	debug.SetGCPercent(gc)
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(x)
	v := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / benchObjects
	heapCache[name] = v
	return v
}

// buildStoreHeap fills a fresh store; keys and group names are made inside the measurement, as the
// store keeps the request's strings.
func buildStoreHeap(grouped bool) func(tb testing.TB) any {
	return func(tb testing.TB) any {
		s, _ := newBenchStore(tb)
		group := ""
		for i := range benchObjects {
			t, j := i%benchTenants, i/benchTenants
			if grouped && t == 0 && j%benchGroup == 0 {
				group = benchGroupName(j)
			}
			put(tb, s, sec, benchTenantNames[t], benchKey(i), group, benchSize)
		}
		return s
	}
}

// buildBaselineHeap fills a fresh baseline with the same objects and replicas of the same shape
// (extents of one segment, laid out as the store's allocator lays them out).
func buildBaselineHeap(grouped bool) func(tb testing.TB) any {
	return func(tb testing.TB) any {
		base := newBaseline()
		seg := segID(1)
		size := alloc.RoundUp(benchSize)
		group := ""
		for i := range benchObjects {
			t, j := i%benchTenants, i/benchTenants
			if grouped && t == 0 && j%benchGroup == 0 {
				group = benchGroupName(j)
			}
			rep := Replica{ID: uint64(j + 1), Extent: alloc.Extent{Segment: seg, Offset: uint64(i) * size, Size: size},
				Tier: alloc.TierMemory, Status: Complete}
			if err := base.put(benchTenantNames[t], benchKey(i), group, &baseObject{size: benchSize, writer: client1,
				putStart: sec, replicas: []Replica{rep}}); err != nil {
				tb.Fatal(err)
			}
		}
		return base
	}
}

// BenchmarkHeapPerObject: live heap bytes per object at 1M objects (B/object), singletons and explicit
// groups of 8, each structure built fresh. ns/op means nothing here. Declared first, so that it runs
// before the shared fixtures exist and its forced collections have little else to mark.
func BenchmarkHeapPerObject(b *testing.B) {
	for _, kind := range []struct {
		name    string
		grouped bool
	}{{"singleton", false}, {"group8", true}} {
		b.Run(kind.name, func(b *testing.B) {
			b.Run("metad", func(b *testing.B) {
				v := heapPerObject(b, kind.name+"/metad", buildStoreHeap(kind.grouped))
				for range b.N {
				}
				b.ReportMetric(v, "B/object")
			})
			b.Run("baseline", func(b *testing.B) {
				v := heapPerObject(b, kind.name+"/baseline", buildBaselineHeap(kind.grouped))
				for range b.N {
				}
				b.ReportMetric(v, "B/object")
			})
		})
	}
}

// benchRand is a per-worker splitmix64 generator (no shared state, no interface call).
type benchRand struct{ s uint64 }

func (r *benchRand) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *benchRand) intn(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// benchClock is a worker's `now`: the wall clock, read every 64 operations, as a server stamps each
// request with its time. Leases therefore expire and are renewed as in service.
type benchClock struct {
	now int64
	n   uint
}

func (c *benchClock) tick() int64 {
	if c.n&63 == 0 {
		c.now = time.Now().UnixNano()
	}
	c.n++
	return c.now
}

// firstErr keeps the first error a parallel worker saw; the benchmark fails with it afterwards.
type firstErr struct {
	once sync.Once
	err  error
}

func (f *firstErr) set(err error) { f.once.Do(func() { f.err = err }) }

func (f *firstErr) check(b *testing.B) {
	if f.err != nil {
		b.Fatal(f.err)
	}
}

var workerSeed atomic.Uint64

// parallelGets runs get on uniformly random keys of f from GOMAXPROCS goroutines.
func parallelGets(b *testing.B, f *benchFixture, get func(now int64, tenant, key string) error) {
	var fail firstErr
	perTenant := len(f.keys[0])
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := benchRand{workerSeed.Add(1) << 32}
		var clk benchClock
		for pb.Next() {
			t := rng.intn(benchTenants)
			if err := get(clk.tick(), benchTenantNames[t], f.keys[t][rng.intn(perTenant)]); err != nil {
				fail.set(err)
			}
		}
	})
	fail.check(b)
}

// BenchmarkPointGet: Get with a lease of uniformly random keys among 1M singletons.
func BenchmarkPointGet(b *testing.B) {
	f := singletonFixture(b)
	b.Run("metad", func(b *testing.B) {
		parallelGets(b, f, func(now int64, tenant, key string) error {
			_, err := f.s.Get(now, tenant, key)
			return err
		})
	})
	b.Run("baseline", func(b *testing.B) {
		parallelGets(b, f, func(now int64, tenant, key string) error {
			_, err := f.base.get(now, tenant, key)
			return err
		})
	})
}

// BenchmarkGroupMemberGet: Get with a lease of uniformly random members of 1M objects in explicit
// groups of 8: the store's route lookup and back-pointer against the baseline's two-level lookup.
func BenchmarkGroupMemberGet(b *testing.B) {
	f := groupFixture(b)
	b.Run("metad", func(b *testing.B) {
		parallelGets(b, f, func(now int64, tenant, key string) error {
			_, err := f.s.Get(now, tenant, key)
			return err
		})
	})
	b.Run("baseline", func(b *testing.B) {
		parallelGets(b, f, func(now int64, tenant, key string) error {
			_, err := f.base.get(now, tenant, key)
			return err
		})
	})
}

// batchPools splits each tenant's candidate keys for batches: the first half is read by every
// worker, the second half is cut into one write pool per worker, so that no key is overwritten by two
// workers at once nor read while it is being overwritten (which would make the store answer
// INVALID_WRITE or REPLICA_IS_NOT_READY and the two designs do different work).
type batchPools struct {
	reads  [benchTenants][][]string // [tenant][worker]
	writes [benchTenants][][]string // [tenant][worker]
}

func newBatchPools(b *testing.B, keys *[benchTenants][]string, workers int) *batchPools {
	p := &batchPools{}
	for t := range benchTenants {
		ks := keys[t]
		// Every worker reads and writes its own keys: in the collide set they all share one
		// baseline shard, but no two workers touch the same object, which is the collision the
		// figure is about (unrelated objects behind one lock).
		per := len(ks) / workers
		half := per / 2
		if per-half < batchWrites {
			b.Fatalf("tenant %d: %d keys leave %d write keys per worker for %d workers, need %d", t, len(ks), per-half, workers, batchWrites)
		}
		for w := range workers {
			own := ks[w*per : (w+1)*per]
			p.reads[t] = append(p.reads[t], own[:half])
			p.writes[t] = append(p.writes[t], own[half:])
		}
	}
	return p
}

// batchFunc runs one batch of one tenant: a Get of each read key, an overwrite of the same size
// (UpsertStart then UpsertEnd) of each write key. It returns the first error.
type batchFunc func(now int64, tenant string, reads, writes []string) error

// parallelBatches runs 32-key batches (16 reads, 16 writes, one random tenant each) from GOMAXPROCS
// goroutines. Reads are uniform over the worker's own read pool of the tenant; writes take the next
// 16 keys of the worker's own write pool.
func parallelBatches(b *testing.B, keys *[benchTenants][]string, run batchFunc) {
	workers := runtime.GOMAXPROCS(0)
	pools := newBatchPools(b, keys, workers)
	var next atomic.Int32
	var fail firstErr
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := int(next.Add(1) - 1)
		if w >= workers {
			fail.set(fmt.Errorf("worker %d of %d: RunParallel started more goroutines than GOMAXPROCS", w, workers))
			for pb.Next() {
			}
			return
		}
		rng := benchRand{workerSeed.Add(1) << 32}
		var clk benchClock
		var cursor [benchTenants]int
		reads := make([]string, batchReads)
		writes := make([]string, batchWrites)
		for pb.Next() {
			t := rng.intn(benchTenants)
			rp, wp := pools.reads[t][w], pools.writes[t][w]
			for i := range reads {
				reads[i] = rp[rng.intn(len(rp))]
			}
			for i := range writes {
				writes[i] = wp[cursor[t]]
				cursor[t] = (cursor[t] + 1) % len(wp)
			}
			if err := run(clk.tick(), benchTenantNames[t], reads, writes); err != nil {
				fail.set(err)
			}
		}
	})
	fail.check(b)
}

// metadBatch is the store's batch: BatchGet, an UpsertStart of each write key, then BatchPutEnd
// (UpsertEnd is PutEnd) of the same keys; each key locked on its own, as the store does.
func metadBatch(s *Store) batchFunc {
	return func(now int64, tenant string, reads, writes []string) error {
		_, errs := s.BatchGet(now, tenant, reads)
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		ends := make([]PutEndRequest, len(writes))
		for i, k := range writes {
			if _, err := s.UpsertStart(now, ItemSeed(uint64(now), i), PutStartRequest{Tenant: tenant, Client: client1,
				Key: k, Size: benchSize, Config: ReplicaConfig{Memory: 1}}); err != nil {
				return err
			}
			ends[i] = PutEndRequest{Tenant: tenant, Client: client1, Key: k}
		}
		for _, err := range s.BatchPutEnd(now, ends) {
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// baselineBatch is the old design's batch: every shard the keys touch locked, in shard order, for the
// whole batch.
func baselineBatch(base *baseline) batchFunc {
	return func(now int64, tenant string, reads, writes []string) error {
		res := base.batch(now, tenant, client1, benchSize, reads, writes)
		for _, err := range res.errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// BenchmarkBatch32: 32-key batches, 16 Gets and 16 same-size overwrites, keys uniform over 1M
// singletons (a batch touches about 32 baseline shards).
func BenchmarkBatch32(b *testing.B) {
	f := singletonFixture(b)
	b.Run("metad", func(b *testing.B) { parallelBatches(b, &f.keys, metadBatch(f.s)) })
	b.Run("baseline", func(b *testing.B) { parallelBatches(b, &f.keys, baselineBatch(f.base)) })
}

// BenchmarkBatch32Collide: the same batches, but every key of every batch lands in one baseline shard
// (chosen by the baseline's hash), so concurrent batches serialize on that shard's lock in the
// baseline. The store gets the same keys.
func BenchmarkBatch32Collide(b *testing.B) {
	f := singletonFixture(b)
	b.Run("metad", func(b *testing.B) { parallelBatches(b, &f.collide, metadBatch(f.s)) })
	b.Run("baseline", func(b *testing.B) { parallelBatches(b, &f.collide, baselineBatch(f.base)) })
}

// BenchmarkCensus: one pass over 1M objects reading each one's replicated state: the store's
// VisitHandles (handles copied in chunks under route read locks, State loaded per handle) against a
// plain scan of the baseline's maps under each shard's read lock. ns/op is one whole census.
func BenchmarkCensus(b *testing.B) {
	f := singletonFixture(b)
	b.Run("metad", func(b *testing.B) {
		for range b.N {
			n, bytes := 0, uint64(0)
			f.s.VisitHandles(0, func(hs []ObjectHandle) bool {
				for _, h := range hs {
					st := h.State()
					n++
					bytes += st.Size * uint64(len(st.Replicas))
				}
				return true
			})
			if n != benchObjects || bytes != benchObjects*benchSize {
				b.Fatalf("census saw %d objects, %d bytes", n, bytes)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchObjects, "ns/object")
	})
	b.Run("baseline", func(b *testing.B) {
		for range b.N {
			n, bytes := 0, uint64(0)
			for i := range f.base.shards {
				sh := &f.base.shards[i]
				sh.mu.RLock()
				for _, tm := range sh.objects {
					for _, o := range tm {
						n++
						bytes += o.size * uint64(len(o.replicas))
					}
				}
				sh.mu.RUnlock()
			}
			if n != benchObjects || bytes != benchObjects*benchSize {
				b.Fatalf("census saw %d objects, %d bytes", n, bytes)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchObjects, "ns/object")
	})
}

// BenchmarkEvictUnits: the apply side of eviction, which every member runs: a store of benchObjects
// singletons (keys and tenants as in the fixtures) evicted whole, in Evict-sized batches of
// evictBatch tokens, in the selection's order for objects never read (tenant instance, then
// creation order: random with respect to where the keys sit in the route maps). ns/object is one
// object's unlink: find it, revalidate it, erase it, free its extent and quota. The store is built
// anew, untimed, for each iteration.
func BenchmarkEvictUnits(b *testing.B) {
	// tenants=4: the tenants' objects interleave in the segment, so a batch's extents are rarely
	// neighbours; tenants=1: one tenant wrote them all in order, so a batch's extents are one run.
	for _, nt := range []int{benchTenants, 1} {
		b.Run(fmt.Sprintf("tenants=%d", nt), func(b *testing.B) { benchEvictUnits(b, nt) })
	}
}

func benchEvictUnits(b *testing.B, tenants int) {
	const evictBatch = 2048
	for b.Loop() {
		b.StopTimer()
		s, _ := newBenchStore(b)
		toks := make([]ObjectToken, 0, benchObjects)
		for i := range benchObjects {
			tenant, key := benchTenantNames[i%tenants], benchKey(i)
			put(b, s, sec, tenant, key, "", benchSize)
			toks = append(toks, ObjectToken{Tenant: tenant, Key: key, ObjectID: uint64(i/tenants + 1), Version: 2})
		}
		for i := range toks {
			toks[i].Instance = s.Tenants().Lookup(toks[i].Tenant).Instance()
		}
		// The selection's order for objects never read: by tenant instance, then id.
		slices.SortFunc(toks, func(a, b ObjectToken) int {
			return cmp.Or(cmp.Compare(a.Instance, b.Instance), cmp.Compare(a.ObjectID, b.ObjectID))
		})
		units := make([][]ObjectToken, evictBatch)
		runtime.GC()
		b.StartTimer()
		for lo := 0; lo < len(toks); lo += evictBatch {
			batch := toks[lo:min(lo+evictBatch, len(toks))]
			for i := range batch {
				units[i] = batch[i : i+1]
			}
			errs, _ := s.EvictUnits(units[:len(batch)], alloc.TierMemory)
			for i, err := range errs {
				if err != nil {
					b.Fatalf("evict %s/%s: %v", batch[i].Tenant, batch[i].Key, err)
				}
			}
		}
		b.StopTimer()
		if n := s.Segments().Used(alloc.TierMemory); n != 0 {
			b.Fatalf("%d bytes still used after evicting every object", n)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchObjects, "ns/object")
}
