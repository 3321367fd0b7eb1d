package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"metad/client"
	"metad/proto/metadv1"
)

// benchResult is what bench prints. An op is one unit of the workload, named by OpUnit: for put
// one object stored (a PutStart and its PutEnd, or one item of a BatchPutStart + BatchPutEnd
// pair), so ops_per_sec is object puts/s, the figure to compare with etcd's puts/s; for get and
// exist one request; for mixed either. Latencies are per op, successful ops only: an object's runs
// from its PutStart (or batch start) being sent to its PutEnd (or batch end) being answered.
// RPCs counts every RPC answered without error, whatever op it belongs to.
type benchResult struct {
	Op           string            `json:"op"`
	OpUnit       string            `json:"op_unit"`
	Clients      int               `json:"clients"`
	Conns        int               `json:"conns"`
	Batch        int               `json:"batch"`
	Size         uint64            `json:"size"`
	KeySpace     int               `json:"key_space,omitempty"`
	DurationS    float64           `json:"duration_s"`
	Ops          uint64            `json:"ops"`
	OpsPerSec    float64           `json:"ops_per_sec"`
	RPCs         uint64            `json:"rpcs"`
	RPCsPerSec   float64           `json:"rpcs_per_sec"`
	Items        uint64            `json:"items"`
	ItemsPerSec  float64           `json:"items_per_sec"`
	Puts         uint64            `json:"puts"`
	PutsPerSec   float64           `json:"puts_per_sec"`
	Gets         uint64            `json:"gets"`
	GetsPerSec   float64           `json:"gets_per_sec"`
	P50Ms        float64           `json:"p50_ms"`
	P99Ms        float64           `json:"p99_ms"`
	P999Ms       float64           `json:"p999_ms"`
	MaxMs        float64           `json:"max_ms"`
	ObjectP50Ms  float64           `json:"object_put_p50_ms,omitempty"`
	ObjectP99Ms  float64           `json:"object_put_p99_ms,omitempty"`
	StartP50Ms   float64           `json:"put_start_p50_ms,omitempty"`
	EndP50Ms     float64           `json:"put_end_p50_ms,omitempty"`
	Errors       uint64            `json:"errors"`
	ErrorReasons map[string]uint64 `json:"error_reasons,omitempty"`
	// With --watchers: the streams, the STORED events they received in all, the events of the
	// run's objects they had not received when the wait after the load ended, and the delivery
	// lag of those received (benchWatchers).
	Watchers     int    `json:"watchers,omitempty"`
	WatchEvents  uint64 `json:"watch_events,omitempty"`
	WatchMissing uint64 `json:"watch_missing,omitempty"`
	// WatchResponses counts the streams' responses that carried events.
	WatchResponses uint64  `json:"watch_responses,omitempty"`
	WatchLagP50Ms  float64 `json:"watch_lag_p50_ms,omitempty"`
	WatchLagP99Ms  float64 `json:"watch_lag_p99_ms,omitempty"`
	WatchLagMaxMs  float64 `json:"watch_lag_max_ms,omitempty"`
}

// opUnits names what one op of each workload is (benchResult.OpUnit).
var opUnits = map[string]string{"put": "object", "get": "request", "exist": "request", "mixed": "object or request"}

// benchStats is owned by one load goroutine until the load ends, then read by the caller: that
// goroutine's tally.
type benchStats struct {
	lat        hist // per op
	putLat     hist // per object put (PutStart through PutEnd)
	startLat   hist // per PutStart or BatchPutStart call
	endLat     hist // per PutEnd or BatchPutEnd call
	ops, items uint64
	rpcs       uint64
	puts, gets uint64
	errors     uint64
	reasons    map[string]uint64
	firstErr   error
}

func (s *benchStats) fail(err error) {
	s.errors++
	if s.reasons == nil {
		s.reasons = make(map[string]uint64)
	}
	s.reasons[reasonLabel(err)]++
	if s.firstErr == nil {
		s.firstErr = err
	}
}

// reasonLabel is the reason an error is counted under: the server's reason or the gRPC code.
func reasonLabel(err error) string {
	line := strings.TrimPrefix(errorLine(err), "error: ")
	if r, _, ok := strings.Cut(line, ":"); ok {
		return r
	}
	return "OTHER"
}

// benchLoad is read-only while the load runs (shared by every load goroutine): one bench run's
// parameters.
type benchLoad struct {
	a         *app
	op        string
	batch     int
	size      uint64
	tenant    string
	readFrac  float64
	runID     string
	preloaded []string
	stopAt    time.Time
	pace      *pacer // nil: as fast as the clients go
}

func runBench(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	clients := fs.Int("clients", 64, "concurrent load goroutines")
	conns := fs.Int("conns", 8, "client connections the goroutines share (at most --clients)")
	duration := fs.Duration("duration", 10*time.Second, "how long to run the load")
	op := fs.String("op", "put", "put (PutStart+PutEnd of new keys), get or exist (of pre-populated keys), or mixed")
	batch := fs.Int("batch", 1, "keys per request, 1..4096, or 1..65536 for get and exist (batch RPCs when > 1)")
	size := sizeFlag{n: 4096}
	fs.Var(&size, "size", "object `size`, units allowed")
	keys := fs.Int("keys", 10000, "keys pre-populated for get and mixed")
	tenant := fs.String("tenant", "", "tenant (default \"default\")")
	readFrac := fs.Float64("read-fraction", 0.5, "share of get requests in mixed")
	var mount sizeFlag
	fs.Var(&mount, "mount", "mount a memory segment of this `size` for the run and ping it (0 = use the cluster's segments)")
	rate := fs.Float64("rate", 0, "ops per second over all clients, at most (0: as fast as they go); a batch of K keys is K ops")
	watchers := fs.Int("watchers", 0, "watch streams of the run's objects during the load, for their delivery lag (put and mixed)")
	watchAt := fs.String("watch-endpoints", "", "members the watch streams use, in turn, comma-separated (default: --endpoints)")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	switch {
	case *clients < 1 || *clients > 10000:
		return usagef(v, "--clients must be 1..10000")
	case *conns < 1:
		return usagef(v, "--conns must be at least 1")
	case *duration <= 0:
		return usagef(v, "--duration must be positive")
	case *op != "put" && *op != "get" && *op != "exist" && *op != "mixed":
		return usagef(v, "--op must be put, get, exist or mixed")
	case (*op == "get" || *op == "exist") && (*batch < 1 || *batch > client.MaxReadBatchItems):
		return usagef(v, "--batch must be 1..%d for %s", client.MaxReadBatchItems, *op)
	case *op != "get" && *op != "exist" && (*batch < 1 || *batch > client.MaxBatchItems):
		return usagef(v, "--batch must be 1..%d for %s", client.MaxBatchItems, *op)
	case size.n == 0:
		return usagef(v, "--size must be positive")
	case *op != "put" && *keys < 1:
		return usagef(v, "--keys must be at least 1 for get and mixed")
	case *readFrac < 0 || *readFrac > 1:
		return usagef(v, "--read-fraction must be in [0, 1]")
	case mount.n%64 != 0:
		return usagef(v, "--mount must be a multiple of 64")
	case *rate < 0:
		return usagef(v, "--rate must not be negative")
	case *watchers < 0 || *watchers > 1000:
		return usagef(v, "--watchers must be 0..1000")
	case *watchers > 0 && *op != "put" && *op != "mixed":
		return usagef(v, "--watchers needs --op put or mixed")
	}
	*conns = min(*conns, *clients)
	cs := make([]*client.Client, *conns)
	for i := range cs {
		c, err := a.client(client.NewUUID())
		if err != nil {
			return err
		}
		cs[i] = c
	}
	load := &benchLoad{a: a, op: *op, batch: *batch, size: size.n, tenant: *tenant, readFrac: *readFrac,
		runID: client.NewUUID().String()[:8]}
	if *rate > 0 {
		load.pace = newPacer(*rate)
	}

	// A segment of our own, kept alive by pings until the load ends.
	bg, stopBG := context.WithCancel(a.ctx)
	var bgDone sync.WaitGroup
	defer func() {
		stopBG()
		bgDone.Wait()
	}()
	if mount.n > 0 {
		seg := &metadv1.SegmentDesc{Id: client.NewUUID().Bytes(), Name: "bench-" + load.runID, Base: simulatedBase(mount.n),
			Size: mount.n, Endpoint: "sim://bench", Tier: metadv1.Tier_TIER_MEMORY}
		if err := a.mountAll(cs[0], []*metadv1.SegmentDesc{seg}); err != nil {
			return err
		}
		bgDone.Add(1)
		go func() {
			defer bgDone.Done()
			a.pingLoop(bg, cs[0], []*metadv1.SegmentDesc{seg}, nil, time.Second, nopWriter{})
		}()
	}

	if *op != "put" {
		if err := load.preload(cs[0], *keys); err != nil {
			return err
		}
	}

	var ws *benchWatchers
	if *watchers > 0 {
		eps := client.SplitEndpoints(*watchAt)
		if len(eps) == 0 {
			eps = client.SplitEndpoints(a.endpoints)
		}
		var err error
		if ws, err = startWatchers(a, *watchers, eps, *tenant, "bench-"+load.runID+"/"); err != nil {
			return err
		}
	}

	stats := make([]*benchStats, *clients)
	var wg sync.WaitGroup
	start := time.Now()
	load.stopAt = start.Add(*duration)
	for w := range stats {
		stats[w] = &benchStats{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			load.worker(cs[w%len(cs)], w, stats[w])
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopBG()

	res := benchResult{Op: *op, OpUnit: opUnits[*op], Clients: *clients, Conns: *conns, Batch: *batch, Size: size.n, DurationS: elapsed.Seconds()}
	if *op != "put" {
		res.KeySpace = *keys
	}
	var all, puts, starts, ends hist
	var firstErr error
	for _, s := range stats {
		all.merge(&s.lat)
		puts.merge(&s.putLat)
		starts.merge(&s.startLat)
		ends.merge(&s.endLat)
		res.Ops += s.ops
		res.RPCs += s.rpcs
		res.Items += s.items
		res.Puts += s.puts
		res.Gets += s.gets
		res.Errors += s.errors
		for k, n := range s.reasons {
			if res.ErrorReasons == nil {
				res.ErrorReasons = make(map[string]uint64)
			}
			res.ErrorReasons[k] += n
		}
		if firstErr == nil {
			firstErr = s.firstErr
		}
	}
	secs := elapsed.Seconds()
	res.OpsPerSec, res.ItemsPerSec = float64(res.Ops)/secs, float64(res.Items)/secs
	res.RPCsPerSec = float64(res.RPCs) / secs
	res.PutsPerSec, res.GetsPerSec = float64(res.Puts)/secs, float64(res.Gets)/secs
	ms := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
	res.P50Ms, res.P99Ms, res.P999Ms = ms(all.quantile(0.5)), ms(all.quantile(0.99)), ms(all.quantile(0.999))
	res.MaxMs = ms(time.Duration(all.max))
	if puts.n > 0 {
		res.ObjectP50Ms, res.ObjectP99Ms = ms(puts.quantile(0.5)), ms(puts.quantile(0.99))
		res.StartP50Ms, res.EndP50Ms = ms(starts.quantile(0.5)), ms(ends.quantile(0.5))
	}
	if ws != nil {
		ws.finish(res.Puts, 10*time.Second, &res)
	}
	if res.Ops == 0 && firstErr != nil {
		return firstErr
	}
	return a.printer().emit(res, func(tw *tabwriter.Writer) { benchTable(tw, &res, firstErr) })
}

func benchTable(tw *tabwriter.Writer, r *benchResult, firstErr error) {
	row(tw, "op", fmt.Sprintf("%s (batch %d, size %s), an op is one %s", r.Op, r.Batch, formatSize(r.Size), r.OpUnit))
	row(tw, "clients", fmt.Sprintf("%d on %d connections", r.Clients, r.Conns))
	row(tw, "duration", fmt.Sprintf("%.2fs", r.DurationS))
	row(tw, "ops", fmt.Sprintf("%d (%.0f ops/s)", r.Ops, r.OpsPerSec))
	row(tw, "rpcs", fmt.Sprintf("%d (%.0f rpcs/s)", r.RPCs, r.RPCsPerSec))
	if r.Batch > 1 {
		row(tw, "items", fmt.Sprintf("%d (%.0f items/s)", r.Items, r.ItemsPerSec))
	}
	if r.Puts > 0 {
		row(tw, "puts", fmt.Sprintf("%d (%.0f objects/s)", r.Puts, r.PutsPerSec))
	}
	if r.Gets > 0 {
		row(tw, "gets", fmt.Sprintf("%d (%.0f keys/s)", r.Gets, r.GetsPerSec))
	}
	row(tw, "latency", fmt.Sprintf("p50 %.3fms  p99 %.3fms  p999 %.3fms  max %.3fms", r.P50Ms, r.P99Ms, r.P999Ms, r.MaxMs))
	if r.Op == "mixed" && r.Puts > 0 {
		row(tw, "object put", fmt.Sprintf("p50 %.3fms  p99 %.3fms", r.ObjectP50Ms, r.ObjectP99Ms))
	}
	if r.Puts > 0 {
		row(tw, "calls", fmt.Sprintf("start p50 %.3fms  end p50 %.3fms", r.StartP50Ms, r.EndP50Ms))
	}
	errs := fmt.Sprint(r.Errors)
	if len(r.ErrorReasons) > 0 {
		var parts []string
		for k, n := range r.ErrorReasons {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(parts)
		errs += " (" + strings.Join(parts, ", ") + ")"
	}
	if r.Watchers > 0 {
		row(tw, "watchers", fmt.Sprintf("%d: %d events, %d missing; lag p50 %.3fms  p99 %.3fms  max %.3fms",
			r.Watchers, r.WatchEvents, r.WatchMissing, r.WatchLagP50Ms, r.WatchLagP99Ms, r.WatchLagMaxMs))
	}
	row(tw, "errors", errs)
	if firstErr != nil {
		row(tw, "first error", strings.TrimPrefix(errorLine(firstErr), "error: "))
	}
}

// preload puts n keys for get and mixed, in batches.
func (l *benchLoad) preload(c *client.Client, n int) error {
	l.preloaded = make([]string, n)
	items := make([]client.BatchPutItem, n)
	for i := range items {
		l.preloaded[i] = fmt.Sprintf("bench-%s/pre/%08d", l.runID, i)
		items[i] = client.BatchPutItem{Key: l.preloaded[i], Size: l.size}
	}
	for _, chunk := range client.Batches(items, 4096) {
		ctx, cancel := l.a.callCtx()
		res, err := c.BatchPut(ctx, l.tenant, chunk, nil)
		cancel()
		if err != nil {
			return err
		}
		for _, s := range res {
			if s.GetReason() != metadv1.Reason_REASON_UNSPECIFIED {
				return &client.ItemError{Reason: s.GetReason(), Message: fmt.Sprintf("pre-populating %d keys: %s", n, s.GetMessage())}
			}
		}
	}
	return nil
}

// worker runs ops until the stop time or a signal.
func (l *benchLoad) worker(c *client.Client, w int, s *benchStats) {
	rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
	seq := 0
	for time.Now().Before(l.stopAt) && l.a.ctx.Err() == nil {
		if l.pace != nil {
			l.pace.wait(l.batch)
		}
		read := l.op == "get" || (l.op == "mixed" && rng.Float64() < l.readFrac)
		if l.op == "exist" {
			l.exist(c, rng, s)
		} else if read {
			l.get(c, rng, s)
		} else {
			l.put(c, w, &seq, s)
		}
	}
}

// rpc runs one RPC with the per-call timeout, counts it and any failure, and reports how long it
// took and whether it succeeded.
func (l *benchLoad) rpc(s *benchStats, f func(ctx context.Context) error) (time.Duration, bool) {
	ctx, cancel := l.a.callCtx()
	t0 := time.Now()
	err := f(ctx)
	d := time.Since(t0)
	cancel()
	if err != nil {
		if l.a.ctx.Err() == nil { // not our own interruption
			s.fail(err)
		}
		return d, false
	}
	s.rpcs++
	return d, true
}

// done records n ops that took d each, carrying items keys in all.
func (s *benchStats) done(d time.Duration, n, items int) {
	for range n {
		s.lat.record(d)
	}
	s.ops += uint64(n)
	s.items += uint64(items)
}

// objectsPut records n objects stored by one start and end pair that took d from the start's
// send to the end's answer: n ops of the put workload.
func (s *benchStats) objectsPut(d time.Duration, n int) {
	for range n {
		s.putLat.record(d)
	}
	s.puts += uint64(n)
	s.done(d, n, n)
}

// put stores one object (PutStart, PutEnd) or, with --batch, a batch of them; each object is one
// op, timed from the start call to the end call's answer.
func (l *benchLoad) put(c *client.Client, w int, seq *int, s *benchStats) {
	t0 := time.Now()
	if l.batch == 1 {
		key := fmt.Sprintf("bench-%s/w%d/%d", l.runID, w, *seq)
		*seq++
		d, ok := l.rpc(s, func(ctx context.Context) error {
			_, err := c.PutStart(ctx, l.tenant, key, l.size, nil)
			return err
		})
		if !ok {
			return
		}
		s.startLat.record(d)
		if d, ok := l.rpc(s, func(ctx context.Context) error { return c.PutEnd(ctx, l.tenant, key, metadv1.Tier_TIER_UNSPECIFIED) }); ok {
			s.endLat.record(d)
			s.objectsPut(time.Since(t0), 1)
		}
		return
	}
	items := make([]client.BatchPutItem, l.batch)
	for i := range items {
		items[i] = client.BatchPutItem{Key: fmt.Sprintf("bench-%s/w%d/%d", l.runID, w, *seq), Size: l.size}
		*seq++
	}
	var started []string
	d, ok := l.rpc(s, func(ctx context.Context) error {
		res, err := c.BatchPutStart(ctx, l.tenant, items, nil)
		for i, r := range res {
			if ie := client.ItemErr(r.GetStatus()); ie != nil {
				s.fail(ie)
			} else {
				started = append(started, items[i].Key)
			}
		}
		return err
	})
	if !ok || len(started) == 0 {
		return
	}
	s.startLat.record(d)
	stored := 0
	if d, ok := l.rpc(s, func(ctx context.Context) error {
		res, err := c.BatchPutEnd(ctx, l.tenant, started, metadv1.Tier_TIER_UNSPECIFIED)
		for _, r := range res {
			if ie := client.ItemErr(r); ie != nil {
				s.fail(ie)
			} else {
				stored++
			}
		}
		return err
	}); ok && stored > 0 {
		s.endLat.record(d)
		s.objectsPut(time.Since(t0), stored)
	}
}

func (l *benchLoad) get(c *client.Client, rng *rand.Rand, s *benchStats) {
	if l.batch == 1 {
		key := l.preloaded[rng.IntN(len(l.preloaded))]
		if d, ok := l.rpc(s, func(ctx context.Context) error {
			_, err := c.Get(ctx, l.tenant, key)
			return err
		}); ok {
			s.gets++
			s.done(d, 1, 1)
		}
		return
	}
	keys := make([]string, l.batch)
	for i := range keys {
		keys[i] = l.preloaded[rng.IntN(len(l.preloaded))]
	}
	if d, ok := l.rpc(s, func(ctx context.Context) error {
		resp, err := c.BatchGet(ctx, l.tenant, keys)
		for _, r := range resp.GetResults() {
			if ie := client.ItemErr(r.GetStatus()); ie != nil {
				s.fail(ie)
			} else {
				s.gets++
			}
		}
		return err
	}); ok {
		s.done(d, 1, len(keys))
	}
}

// exist asks BatchExist (Exist when --batch is 1) of --batch keys drawn from the pre-populated
// ones, distinct, so that one op is one request of exactly that many keys.
func (l *benchLoad) exist(c *client.Client, rng *rand.Rand, s *benchStats) {
	keys := l.distinctKeys(rng)
	if d, ok := l.rpc(s, func(ctx context.Context) error {
		resp, err := c.BatchExist(ctx, l.tenant, keys)
		for _, e := range resp.GetExists() {
			if e {
				s.gets++
			}
		}
		return err
	}); ok {
		s.done(d, 1, len(keys))
	}
}

// distinctKeys draws min(--batch, keys) distinct pre-populated keys: a random window of the
// preloaded list (which holds each key once), shuffled.
func (l *benchLoad) distinctKeys(rng *rand.Rand) []string {
	n := min(l.batch, len(l.preloaded))
	start := rng.IntN(len(l.preloaded) - n + 1)
	keys := slices.Clone(l.preloaded[start : start+n])
	rng.Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return keys
}

// nopWriter discards what is written to it.
type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
