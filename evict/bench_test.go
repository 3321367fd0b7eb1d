package evict

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// The foreground-impact benchmark (docs/performance.md, "Eviction"): a 3-node loopback cluster holds -evict.objects
// objects; Get and PutEnd load runs for -evict.phase with no eviction, then again while the leader's
// memory eviction removes most of them. It reports throughput and p99 of both in both phases, their
// ratios, the objects evicted, and heap and RSS per object after the fill, for each group size in
// -evict.groups; with -evict.reps it repeats the whole (a fresh cluster each time) and reports the
// medians. Run it with
//
//	go test -run '^$' -bench ForegroundDuringEviction -benchtime 1x -timeout 60m ./evict/ -args -evict.reps=5
//
// (make bench-evict). All three nodes and the load share one process, so the ratios are what
// carries over.

var (
	benchObjects  = flag.Int("evict.objects", 1_000_000, "objects the foreground benchmark fills memory with")
	benchPhaseLen = flag.Duration("evict.phase", 30*time.Second, "length of each load phase")
	benchGroups   = flag.String("evict.groups", "1,8,64", "explicit group sizes (1 = singletons)")
	benchReps     = flag.Int("evict.reps", 1, "repetitions per group size (each on a fresh cluster); the reported figures are the medians")
	benchBatch    = flag.Int("evict.batch", DefaultConfig().BatchSize, "objects per Evict proposal (Config.BatchSize)")
	benchRound    = flag.Int("evict.roundlimit", DefaultConfig().RoundLimit, "units one round selects at most (Config.RoundLimit)")
	benchChunk    = flag.Int("evict.censuschunk", DefaultConfig().CensusChunk, "handles the census reads between yields (Config.CensusChunk)")
	benchTrace    = flag.String("evict.trace", "", "write execution traces of the first -evict.tracefor of the phase under eviction to this file (suffixed with the group size) and of the phase without (.base), in the first repetition")
	benchTraceFor = flag.Duration("evict.tracefor", 3*time.Second, "how much of the phase under eviction -evict.trace covers")
	benchTick     = flag.Duration("evict.tick", 5*time.Second, "how often the per-phase timeline (objects below the start, Get/s, GC cycles) samples")
	benchProcs    = flag.Int("evict.extraprocs", ha.DefaultExtraProcs, "Go processors beyond the CPUs, as metad sets them (ha.SetProcs; metad --extra-procs); 0 = the runtime's default; a GOMAXPROCS environment variable wins")
	benchProfile  = flag.String("evict.cpuprofile", "", "write CPU profiles (first repetition) of the phase under eviction to this file (suffixed with the group size) and of the phase without (.base: compare with pprof -diff_base), and allocation profiles at the start and end of the eviction phase (.allocs0, .allocs1: compare with pprof -base)")
)

const (
	benchSize      = 1024    // bytes per object, one MEMORY replica
	benchFillBatch = 4096    // objects per BatchPutStart/BatchPutEnd while filling
	benchHot       = 100_000 // Gets read the newest this many objects (the hot set)
	benchReaders   = 8
	benchWriters   = 8
)

func BenchmarkForegroundDuringEviction(b *testing.B) {
	for _, f := range strings.Split(*benchGroups, ",") {
		gs, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || gs < 1 {
			b.Fatalf("-evict.groups: %q", f)
		}
		b.Run(fmt.Sprintf("group=%d", gs), func(b *testing.B) { benchForeground(b, gs) })
	}
}

type phaseStats struct {
	gets, puts       int
	getP99, putP99   time.Duration
	getRate, putRate float64
	rt               runtimeUse
	rb               barrierUse
}

// barrierUse is the leader's read barrier over a phase (ha's read-barrier histograms): rounds, and
// seconds spent confirming leadership (VerifyLeader) and waiting for apply. Gets are closed-loop
// behind these rounds, so their mean is what Get throughput follows.
type barrierUse struct {
	rounds       uint64
	verify, wait float64
	// The store's sampled lock waits of the read path: route shard read lock, object lock.
	routeN, objectN     uint64
	routeSum, objectSum float64
}

func readBarrierUse(b *testing.B, g prometheus.Gatherer, s *store.Store) barrierUse {
	u, err := gatherBarrierUse(g, s)
	if err != nil {
		b.Fatal(err)
	}
	return u
}

// gatherBarrierUse is readBarrierUse for goroutines other than the benchmark's.
func gatherBarrierUse(g prometheus.Gatherer, s *store.Store) (barrierUse, error) {
	mfs, err := g.Gather()
	if err != nil {
		return barrierUse{}, err
	}
	var u barrierUse
	for _, mf := range mfs {
		if len(mf.GetMetric()) == 0 {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		switch mf.GetName() {
		case "metad_raft_read_barrier_verify_seconds":
			u.rounds, u.verify = h.GetSampleCount(), h.GetSampleSum()
		case "metad_raft_read_barrier_apply_wait_seconds":
			u.wait = h.GetSampleSum()
		}
	}
	u.routeN, u.routeSum, _ = s.LockWaits().Route.Read()
	u.objectN, u.objectSum, _ = s.LockWaits().Object.Read()
	return u, nil
}

func (u barrierUse) since(t barrierUse) barrierUse {
	return barrierUse{rounds: u.rounds - t.rounds, verify: u.verify - t.verify, wait: u.wait - t.wait,
		routeN: u.routeN - t.routeN, routeSum: u.routeSum - t.routeSum, objectN: u.objectN - t.objectN, objectSum: u.objectSum - t.objectSum}
}

func (u barrierUse) String() string {
	if u.rounds == 0 {
		return "no rounds"
	}
	n := float64(u.rounds)
	mean := func(sum float64, n uint64) float64 { return sum / float64(max(n, 1)) * 1e6 }
	return fmt.Sprintf("%d rounds, VerifyLeader mean %.0f us, apply wait mean %.1f us; Get's lock waits (sampled) route %.1f us, object %.1f us",
		u.rounds, u.verify/n*1e6, u.wait/n*1e6, mean(u.routeSum, u.routeN), mean(u.objectSum, u.objectN))
}

// runtimeUse is what the process spent during a phase: CPU time (user and system, from getrusage),
// GC cycles and bytes allocated (runtime/metrics). It says where a phase's CPU went without a
// profiler attached. (The runtime's own CPU-class metrics are not used: they are estimates brought
// up to date only when a GC cycle ends, too coarse for phases of one to three cycles.)
type runtimeUse struct {
	cpu        float64 // seconds
	faults     int64   // minor page faults (memory fresh from the OS)
	gcCycles   uint64
	allocBytes uint64
	sched      schedHist // how long goroutines waited runnable before they ran
	stopping   schedHist // how long the collector's stop-the-world waited for every goroutine to stop
}

// schedHist is the runtime's /sched/latencies:seconds histogram: the time goroutines spent runnable
// before running. On two cores a long-running goroutine (a census, an apply of a large entry) shows
// here as the wait it puts on everything else.
type schedHist struct {
	counts  []uint64
	buckets []float64
}

var runtimeSamples = []string{"/gc/cycles/total:gc-cycles", "/gc/heap/allocs:bytes", "/sched/latencies:seconds",
	"/sched/pauses/stopping/gc:seconds"}

func readRuntime() runtimeUse {
	ss := make([]rtmetrics.Sample, len(runtimeSamples))
	for i, n := range runtimeSamples {
		ss[i].Name = n
	}
	rtmetrics.Read(ss)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	hist := func(v rtmetrics.Value) schedHist {
		h := v.Float64Histogram()
		return schedHist{counts: slices.Clone(h.Counts), buckets: h.Buckets}
	}
	return runtimeUse{cpu: cpu.Seconds(), faults: ru.Minflt, gcCycles: ss[0].Value.Uint64(), allocBytes: ss[1].Value.Uint64(),
		sched: hist(ss[2].Value), stopping: hist(ss[3].Value)}
}

func (u runtimeUse) since(t runtimeUse) runtimeUse {
	return runtimeUse{cpu: u.cpu - t.cpu, faults: u.faults - t.faults, gcCycles: u.gcCycles - t.gcCycles, allocBytes: u.allocBytes - t.allocBytes,
		sched: u.sched.since(t.sched), stopping: u.stopping.since(t.stopping)}
}

func (h schedHist) since(t schedHist) schedHist {
	d := schedHist{counts: slices.Clone(h.counts), buckets: h.buckets}
	for i := range min(len(d.counts), len(t.counts)) {
		d.counts[i] -= t.counts[i]
	}
	return d
}

// quantile is the upper bound of the bucket holding quantile q (an overestimate by at most one
// bucket, which the runtime keeps within a few percent).
func (h schedHist) quantile(q float64) time.Duration {
	var total uint64
	for _, c := range h.counts {
		total += c
	}
	want, seen := uint64(q*float64(total)), uint64(0)
	for i, c := range h.counts {
		seen += c
		if seen > want {
			return time.Duration(h.buckets[i+1] * 1e9)
		}
	}
	return 0
}

// max is the upper bound of the highest non-empty bucket.
func (h schedHist) max() time.Duration {
	for i := len(h.counts) - 1; i >= 0; i-- {
		if h.counts[i] > 0 {
			return time.Duration(min(h.buckets[i+1], h.buckets[i]*2) * 1e9)
		}
	}
	return 0
}

func (u runtimeUse) String() string {
	return fmt.Sprintf("CPU %.1fs (user and system), %d page faults, %d GC cycles, allocated %.2f GB, scheduling latency p50 %s p99 %s p99.9 %s, longest wait to stop the world %s",
		u.cpu, u.faults, u.gcCycles, float64(u.allocBytes)/1e9, u.sched.quantile(0.5), u.sched.quantile(0.99), u.sched.quantile(0.999), u.stopping.max())
}

// foreground is one repetition of the benchmark for one group size.
type foreground struct {
	base, under   phaseStats
	evicted       int64
	heapPerObject float64 // bytes per object per node after the fill and the warm-up
	rssPerMillion float64 // MiB per million objects per node after the fill and the warm-up
}

func (f foreground) getRatio() float64    { return f.under.getRate / f.base.getRate }
func (f foreground) getP99Ratio() float64 { return float64(f.under.getP99) / float64(f.base.getP99) }
func (f foreground) putRatio() float64    { return f.under.putRate / f.base.putRate }
func (f foreground) putP99Ratio() float64 { return float64(f.under.putP99) / float64(f.base.putP99) }

// benchForeground runs -evict.reps repetitions for one group size and reports the median of each
// figure across them (every repetition's ratios are logged): a machine's speed drifts between
// minutes, and the median keeps one drifting pair of phases from deciding the figure.
func benchForeground(b *testing.B, group int) {
	// The process runs with the processors metad gives itself (ha.SetProcs). Set here, in each
	// sub-benchmark: the testing package sets GOMAXPROCS back to its -test.cpu value after each.
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	fmt.Fprintf(os.Stderr, "group=%d: GOMAXPROCS %d (%d CPUs, -evict.extraprocs=%d)\n", group, ha.SetProcs(*benchProcs, os.Getenv("GOMAXPROCS")), runtime.NumCPU(), *benchProcs)
	var runs []foreground
	for rep := range max(1, *benchReps) {
		runs = append(runs, benchForegroundOnce(b, group, rep))
	}
	var line []string
	for i, r := range runs {
		line = append(line, fmt.Sprintf("rep %d: Get %.2f, p99 %.2f, PutEnd %.2f", i+1, r.getRatio(), r.getP99Ratio(), r.putRatio()))
	}
	b.Logf("ratios (during / without): %s", strings.Join(line, "; "))
	median := func(f func(foreground) float64) float64 {
		xs := make([]float64, len(runs))
		for i, r := range runs {
			xs[i] = f(r)
		}
		slices.Sort(xs)
		if n := len(xs); n%2 == 0 {
			return (xs[n/2-1] + xs[n/2]) / 2
		}
		return xs[len(xs)/2]
	}
	b.ReportMetric(median(func(r foreground) float64 { return r.heapPerObject }), "heap-B/object")
	// RSS only falls when the OS takes pages back, so only the first repetition's is clean.
	b.ReportMetric(runs[0].rssPerMillion, "RSS-MiB/Mobject")
	b.ReportMetric(median(func(r foreground) float64 { return float64(r.evicted) }), "evicted")
	b.ReportMetric(median(func(r foreground) float64 { return r.base.getRate }), "get/s")
	b.ReportMetric(median(func(r foreground) float64 { return r.under.getRate }), "get/s-evicting")
	b.ReportMetric(median(foreground.getRatio), "get-throughput-ratio")
	b.ReportMetric(median(foreground.getP99Ratio), "get-p99-ratio")
	b.ReportMetric(median(func(r foreground) float64 { return r.base.putRate }), "putend/s")
	b.ReportMetric(median(func(r foreground) float64 { return r.under.putRate }), "putend/s-evicting")
	b.ReportMetric(median(foreground.putRatio), "putend-throughput-ratio")
	b.ReportMetric(median(foreground.putP99Ratio), "putend-p99-ratio")
}

// benchForegroundOnce fills a fresh cluster and runs the two phases. Its log goes to stderr, each
// line prefixed with the group size and repetition (the testing package keeps only ten log lines
// of a benchmark).
func benchForegroundOnce(b *testing.B, group, rep int) foreground {
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "group=%d rep=%d: %s\n", group, rep+1, fmt.Sprintf(format, args...))
	}
	n := *benchObjects
	runtime.GC()
	heap0, rss0 := heapInuse(), rssBytes()
	cfg := DefaultConfig()
	cfg.HighWatermark = 0.40
	cfg.BatchSize = *benchBatch
	cfg.RoundLimit = *benchRound
	cfg.CensusChunk = *benchChunk
	c := newTCPCluster(b, cfg, store.DefaultConfig().LeaseTTL)
	defer func() {
		c.stop()
		c.evs = nil // the cleanup c registered keeps c: let the next repetition have the memory
	}()
	capacity := uint64(n+n/4) * benchSize
	c.propose(&metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: &metadv1.SegmentDesc{
		Id: memSeg[:], Name: "s", Base: 1 << 32, Size: capacity, Endpoint: "e", Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: client[:]}}}})
	start := time.Now()
	for lo := 0; lo < n; lo += benchFillBatch {
		bs := &metadv1.BatchPutStart{ClientId: client[:], Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}
		be := &metadv1.BatchPutEnd{ClientId: client[:]}
		for i := lo; i < min(n, lo+benchFillBatch); i++ {
			it := &metadv1.BatchPutStart_Item{Key: []byte(benchKey(i)), Size: benchSize}
			if group > 1 {
				it.Group = []byte(fmt.Sprintf("grp-%08d", i/group))
			}
			bs.Items = append(bs.Items, it)
			be.Keys = append(be.Keys, it.Key)
		}
		for _, cmd := range []*metadv1.Command{{Op: &metadv1.Command_BatchPutStart{BatchPutStart: bs}}, {Op: &metadv1.Command_BatchPutEnd{BatchPutEnd: be}}} {
			// A retried proposal (leadership moved) may find its first attempt applied.
			if r := c.propose(cmd); countOK(r.Items) != len(be.Keys) {
				b.Fatalf("fill at %d: %d of %d ok (%s)", lo, countOK(r.Items), len(be.Keys), r.Items[0].Message)
			}
		}
	}
	c.caughtUp()
	logf("filled %d objects (group size %d) in %s", n, group, time.Since(start).Round(time.Millisecond))
	l := c.leader()
	var putSeq atomic.Int64
	took := warmUp(b, c, l, n, &putSeq)
	c.caughtUp()
	runtime.GC()
	heap1, rss1 := heapInuse(), rssBytes()
	objects := float64(l.Node().Status().Objects)
	logf("warmed up in %s (%.0f objects)", took.Round(time.Millisecond), objects)
	f := foreground{heapPerObject: (float64(heap1) - float64(heap0)) / 3 / objects,
		rssPerMillion: (float64(rss1) - float64(rss0)) / 3 / (objects / 1e6) / (1 << 20)}

	reg := prometheus.NewRegistry()
	if err := l.Node().RegisterMetrics(reg); err != nil {
		b.Fatal(err)
	}
	barrierNow := func() barrierUse {
		u, err := gatherBarrierUse(reg, l.Store())
		if err != nil {
			b.Error(err)
		}
		return u
	}
	stopProfile := startProfile(b, group, rep, ".base")
	stopTrace := startTrace(b, group, rep, ".base")
	stopProgress := logProgress(logf, "no eviction", l, l.Node().Status().Objects, barrierNow)
	base := runPhase(b, l, reg, n, &putSeq)
	stopProgress()
	logf("log store after the phase without eviction: %s", c.logStoreStats())
	stopTrace()
	stopProfile()
	waitFor(b, "the leader's lease floor", 20*time.Second, func() bool { return l.Store().LeaseFloor() < time.Now().UnixNano() })
	// Both phases start from a collected heap (the first follows the fill's runtime.GC): otherwise
	// the eviction phase starts with the heap near the collector's goal, as the phase without
	// eviction left it, and a mark phase of seconds lands on the drain's first seconds whatever
	// the drain costs.
	runtime.GC()
	before := l.Node().Status().Objects
	stopProfile = startProfile(b, group, rep, "")
	stopProgress = logProgress(logf, "evicting", l, before, barrierNow)
	stopTrace = startTrace(b, group, rep, "")
	defer stopTrace()
	c.start()
	under := runPhase(b, l, reg, n, &putSeq)
	c.stopEvictors()
	stopProgress()
	stopProfile()
	evicted := before + int64(under.puts) - l.Node().Status().Objects
	logf("no eviction:     Get %8.0f/s p99 %7s   PutEnd %6.0f/s p99 %7s", base.getRate, base.getP99, base.putRate, base.putP99)
	logf("while evicting:  Get %8.0f/s p99 %7s   PutEnd %6.0f/s p99 %7s   (%d objects evicted)", under.getRate, under.getP99, under.putRate, under.putP99, evicted)
	var idx []string
	for _, name := range c.names {
		st := c.nodes[name].Node().Status()
		idx = append(idx, fmt.Sprintf("%s %d/%d", name, st.CommitIndex, st.LastSnapshotIndex))
	}
	logf("eviction rounds: %s; commit/snapshot index %s", c.roundStats(), strings.Join(idx, ", "))
	logf("log store: %s", c.logStoreStats())
	logf("read barrier, no eviction:  %s", base.rb)
	logf("read barrier, evicting:     %s", under.rb)
	logf("process, no eviction:  %s", base.rt)
	logf("process, evicting:     %s", under.rt)
	f.base, f.under, f.evicted = base, under, evicted
	logf("ratios: Get %.2f, Get p99 %.2f, PutEnd %.2f, PutEnd p99 %.2f", f.getRatio(), f.getP99Ratio(), f.putRatio(), f.putP99Ratio())
	return f
}

// runPhase runs the foreground load for -evict.phase and measures it.
func runPhase(b *testing.B, l clusterMember, reg prometheus.Gatherer, n int, putSeq *atomic.Int64) phaseStats {
	ctx, cancel := context.WithTimeout(context.Background(), *benchPhaseLen)
	defer cancel()
	rt0, rb0 := readRuntime(), readBarrierUse(b, reg, l.Store())
	getLat, putLat := runLoad(ctx, b, l, n, putSeq)
	secs := benchPhaseLen.Seconds()
	st := phaseStats{rt: readRuntime().since(rt0), rb: readBarrierUse(b, reg, l.Store()).since(rb0)}
	st.gets, st.getP99 = p99(getLat)
	st.puts, st.putP99 = p99(putLat)
	st.getRate, st.putRate = float64(st.gets)/secs, float64(st.puts)/secs
	return st
}

// warmUp runs the foreground load until every member has committed ha.LogCacheEntries entries past
// the fill (deadline: a minute). Raft keeps the latest 1024 entries in memory; right after the
// fill those are its 4096-item batches, about 100 MB over the three members that the first phase
// would otherwise start with and the second not, a higher collector goal for the first phase only.
// After it both phases start from a heap in the same steady state.
func warmUp(b *testing.B, c *cluster, l clusterMember, n int, putSeq *atomic.Int64) time.Duration {
	start := time.Now()
	past := l.Node().Status().CommitIndex + ha.LogCacheEntries
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		defer cancel()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			done := true
			for _, name := range c.names {
				done = done && c.nodes[name].Node().Status().CommitIndex >= past
			}
			if done {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	runLoad(ctx, b, l, n, putSeq)
	for _, name := range c.names {
		if got := c.nodes[name].Node().Status().CommitIndex; got < past {
			b.Fatalf("warm-up: %s committed %d of %d entries within a minute", name, got, past)
		}
	}
	return time.Since(start)
}

// runLoad runs Get load (a linearizable read: read barrier, then the store) on the hot set and
// PutStart+PutEnd load (PutEnd timed) on new keys, through the leader, until ctx ends, and returns
// each reader's Get and each writer's PutEnd latencies.
func runLoad(ctx context.Context, b *testing.B, l clusterMember, n int, putSeq *atomic.Int64) (getLat, putLat [][]time.Duration) {
	getLat = make([][]time.Duration, benchReaders)
	putLat = make([][]time.Duration, benchWriters)
	var wg sync.WaitGroup
	for r := range benchReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(r), uint64(time.Now().UnixNano())))
			for ctx.Err() == nil {
				k := benchKey(n - 1 - rnd.IntN(min(n, benchHot)))
				t := time.Now()
				var err error
				for { // an object marked for unlink is read again once its eviction settles, as the server does
					if err = l.Node().ReadBarrier(ctx); err == nil {
						_, err = l.Store().Get(time.Now().UnixNano(), "", k)
					}
					if !errors.Is(err, store.ErrUnlinkPending) || ctx.Err() != nil {
						break
					}
					runtime.Gosched()
				}
				if ctx.Err() != nil {
					return
				}
				if err != nil && store.ReasonOf(err) != store.ObjectNotFound {
					b.Errorf("Get: %v", err)
					return
				}
				getLat[r] = append(getLat[r], time.Since(t))
				benchGets.Add(1)
			}
		}()
	}
	for w := range benchWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				k := []byte(fmt.Sprintf("put-%09d", putSeq.Add(1)))
				r, err := l.Node().Propose(ctx, &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: client[:], Key: k,
					Size: benchSize, Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}})
				if err != nil || r.Reason != store.OK {
					if ctx.Err() == nil {
						b.Errorf("PutStart: %v %s", err, r.Message)
					}
					return
				}
				t := time.Now()
				r, err = l.Node().Propose(ctx, &metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{ClientId: client[:], Key: k}}})
				if ctx.Err() != nil {
					return
				}
				if err != nil || r.Reason != store.OK {
					b.Errorf("PutEnd: %v %s", err, r.Message)
					return
				}
				putLat[w] = append(putLat[w], time.Since(t))
			}
		}()
	}
	wg.Wait()
	return getLat, putLat
}

func p99(lats [][]time.Duration) (int, time.Duration) {
	all := slices.Concat(lats...)
	if len(all) == 0 {
		return 0, 0
	}
	slices.Sort(all)
	return len(all), all[len(all)*99/100]
}

// benchGets counts the Gets the load has completed (for logProgress).
var benchGets atomic.Int64

// logProgress logs, every -evict.tick until stopped, how far the leader's object count has fallen
// below before (how the eviction spreads over the phase), the Get rate (how the foreground fares
// during the drain and after it) with the GC cycles that ended (+N) and the MB allocated in the
// tick, and the read-barrier rounds per second with their mean VerifyLeader and apply wait (from
// barrier), labelled with the phase.
func logProgress(logf func(string, ...any), phase string, l clusterMember, before int64, barrier func() barrierUse) func() {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(*benchTick)
		defer t.Stop()
		start := time.Now()
		var line, gets, rounds []string
		last, lastGC, lastAlloc, lastBarrier := benchGets.Load(), gcCycles(), allocBytes(), barrier()
		for {
			select {
			case <-done:
				logf("%s: objects below the start, every %v: %s", phase, *benchTick, strings.Join(line, " "))
				logf("%s: Get/s in each %v (+N: GC cycles ended in it; MB allocated in it): %s", phase, *benchTick, strings.Join(gets, " "))
				logf("%s: read-barrier rounds/s in each %v (mean VerifyLeader/apply wait, us): %s", phase, *benchTick, strings.Join(rounds, " "))
				return
			case <-t.C:
				at := time.Since(start).Seconds()
				line = append(line, fmt.Sprintf("%.0fs:%d", at, before-l.Node().Status().Objects))
				n, gc, a := benchGets.Load(), gcCycles(), allocBytes()
				g := fmt.Sprintf("%.0fs:%d", at, int64(float64(n-last)/benchTick.Seconds()))
				if gc > lastGC {
					g += fmt.Sprintf("+%d", gc-lastGC)
				}
				gets = append(gets, g+fmt.Sprintf("(%dMB)", (a-lastAlloc)>>20))
				bu := barrier()
				d := bu.since(lastBarrier)
				r := float64(max(d.rounds, 1))
				rounds = append(rounds, fmt.Sprintf("%.0fs:%d(%.0f/%.0f)", at, int64(float64(d.rounds)/benchTick.Seconds()), d.verify/r*1e6, d.wait/r*1e6))
				last, lastGC, lastAlloc, lastBarrier = n, gc, a, bu
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// allocBytes is the bytes the process has allocated on the heap.
func allocBytes() uint64 {
	s := []rtmetrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}

// gcCycles is the number of GC cycles the process has completed.
func gcCycles() uint64 {
	s := []rtmetrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}

// startProfile starts a CPU profile of a phase when -evict.cpuprofile asks for one (suffix "" for
// the eviction phase, ".base" for the one without: compare with pprof -diff_base); the returned func
// stops it.
func startProfile(b *testing.B, group, rep int, suffix string) func() {
	if *benchProfile == "" || rep > 0 {
		return func() {}
	}
	path := fmt.Sprintf("%s.group%d%s", *benchProfile, group, suffix)
	allocs := func(suffix string) {
		f, err := os.Create(path + suffix)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		runtime.GC() // the allocation profile is as of the last completed cycle
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	allocs(".allocs0")
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
		allocs(".allocs1")
	}
}

// startTrace starts the execution trace -evict.trace asks for, to stop after -evict.tracefor or
// when the returned func is called, whichever is first.
func startTrace(b *testing.B, group, rep int, suffix string) func() {
	if *benchTrace == "" || rep > 0 {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.group%d%s", *benchTrace, group, suffix))
	if err != nil {
		b.Fatal(err)
	}
	if err := trace.Start(f); err != nil {
		b.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			trace.Stop()
			_ = f.Close()
		})
	}
	t := time.AfterFunc(*benchTraceFor, stop)
	return func() { t.Stop(); stop() }
}

// roundStats sums the evictors' memory rounds: how they ended, and the censuses they took.
// logStoreStats is each member's Raft log store (raft-boltdb's) free pages, pending pages and freelist bytes:
// a freelist that grows makes every commit slower.
func (c *cluster) logStoreStats() string {
	var out []string
	for _, name := range c.names {
		st, ok := c.nodes[name].Node().LogStoreStats()
		if !ok {
			out = append(out, name+" raft-wal (no freelist)")
			continue
		}
		out = append(out, fmt.Sprintf("%s free %d pending %d pages, freelist %d B", name, st.FreePageN, st.PendingPageN, st.FreelistInuse))
	}
	return strings.Join(out, "; ")
}

func (c *cluster) roundStats() string {
	var done, noSlot, other, censuses float64
	var censusSecs float64
	for _, ev := range c.evs {
		done += testutil.ToFloat64(ev.m.rounds.WithLabelValues("memory", "done"))
		noSlot += testutil.ToFloat64(ev.m.rounds.WithLabelValues("memory", "no_slot"))
		other += testutil.ToFloat64(ev.m.rounds.WithLabelValues("memory", "not_leader")) +
			testutil.ToFloat64(ev.m.rounds.WithLabelValues("memory", "failed"))
		var m dto.Metric
		if err := ev.m.census.WithLabelValues("memory").(prometheus.Metric).Write(&m); err == nil {
			censuses += float64(m.GetHistogram().GetSampleCount())
			censusSecs += m.GetHistogram().GetSampleSum()
		}
	}
	return fmt.Sprintf("%.0f done, %.0f without a slot, %.0f other; %.0f censuses taking %.1fs", done, noSlot, other, censuses, censusSecs)
}

func benchKey(i int) string { return fmt.Sprintf("obj-%09d", i) }

func countOK(rs []store.Result) int {
	n := 0
	for _, r := range rs {
		if r.Reason == store.OK || r.Reason == store.ObjectAlreadyExists {
			n++
		}
	}
	return n
}

// caughtUp waits until every live node has applied the same index (cheaper than comparing the
// states of a million objects).
func (c *cluster) caughtUp() {
	c.t.Helper()
	waitFor(c.t, "the nodes to catch up", 60*time.Second, func() bool {
		var idx []uint64
		for _, n := range c.nodes {
			a, _ := n.FSM().Applied()
			idx = append(idx, a)
		}
		return slices.Min(idx) == slices.Max(idx)
	})
}

func heapInuse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// rssBytes reads the process's resident set from /proc (0 where there is none).
func rssBytes() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
