package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"metad/client"
	metadv1 "metad/proto/metadv1"
)

// Config is one drill. The zero value of a field means its default (DefaultConfig).
type Config struct {
	// Seed drives the fault schedule and the workload's choices. Printed; rerun with it.
	Seed uint64
	// Duration of the fault phase (faults are drawn until their holds and gaps fill it). Default 40 s.
	Duration time.Duration
	// Warmup and Settle: workload without faults before and after the fault phase. Default 2 s each.
	Warmup, Settle time.Duration
	// Clients: concurrent workload clients. Default 8.
	Clients int
	// Tenants, Singletons (keys per tenant) and Groups (per tenant, groupMembers keys each).
	// Default: default, alpha, beta; 12; 3.
	Tenants    []string
	Singletons int
	Groups     int
	// Kinds restricts the faults drawn (nil = all).
	Kinds []FaultKind
	// ReportDir is where the report goes. Default report/<seed> (under the package directory).
	ReportDir string
	// CheckTimeout bounds porcupine per partition. Default 60 s.
	CheckTimeout time.Duration
	// Tolerate names known anomalies (tolNames: "group-not-found", "dirty-absent") that do not fail
	// the drill; they are still counted and reported.
	Tolerate []string
	// KeepHistory writes history.txt even when every check passes.
	KeepHistory bool
	// MetadFlags are extra flags for every metad (after the drill's own: client ttl 10 s, metad's
	// default, and put discard timeout 10 min, so that discard never changes state during a
	// drill).
	MetadFlags []string
	// Insecure runs the cluster in plaintext with authentication off (--insecure), as before TLS.
	// Default: TLS on every listener and link, every client authenticated (see NewCluster).
	Insecure bool
	// Release, when set, makes this an upgrade drill (upgrade.go): the directory of an older
	// release's binaries (e2e.BuildRelease) that the nodes start on, ReleaseName its name; the
	// schedule is a rolling upgrade to this tree's metad, UpgradeGap between steps (default 3 s),
	// instead of faults drawn from the seed (Duration and Kinds do not apply).
	Release, ReleaseName string
	UpgradeGap           time.Duration
	// Tiers makes this a tiers drill (tiers.go): workers with a local SSD that offload and
	// promote, memory small enough that eviction moves objects to disk, promotion on hit.
	Tiers bool
	// Logf receives progress lines (t.Logf). Default: none.
	Logf func(format string, args ...any)
}

// DefaultConfig returns the defaults of the short drill.
func DefaultConfig() Config {
	return Config{Duration: 40 * time.Second, Warmup: 2 * time.Second, Settle: 2 * time.Second, Clients: 8,
		Tenants: []string{"default", "alpha", "beta"}, Singletons: 12, Groups: 3, CheckTimeout: time.Minute}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Duration == 0 {
		c.Duration = d.Duration
	}
	if c.Warmup == 0 {
		c.Warmup = d.Warmup
	}
	if c.Settle == 0 {
		c.Settle = d.Settle
	}
	if c.Clients == 0 {
		c.Clients = d.Clients
	}
	if len(c.Tenants) == 0 {
		c.Tenants = d.Tenants
	}
	if c.Singletons == 0 {
		c.Singletons = d.Singletons
	}
	if c.Groups == 0 {
		c.Groups = d.Groups
	}
	if c.CheckTimeout == 0 {
		c.CheckTimeout = d.CheckTimeout
	}
	if c.ReportDir == "" {
		c.ReportDir = filepath.Join("report", fmt.Sprint(c.Seed))
	}
	if c.UpgradeGap == 0 {
		c.UpgradeGap = 3 * time.Second
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return c
}

// Result is what a drill found. A plain value once Run returns.
type Result struct {
	Seed      uint64
	Config    Config
	Dir       string
	Elapsed   time.Duration
	Faults    []*Fault
	Ops       int            // operations recorded
	ByKind    map[string]int // "PutStart ok", "Get OBJECT_NOT_FOUND", ...
	Unknown   int            // operations with an unknown outcome
	Dropped   int64          // failed reads left out
	Noops     int64          // write attempts certainly not proposed, left out
	Probe     []probeWrite
	Leaders   []span
	Nonlinear []linResult // partitions that are not linearizable (Illegal) or not decided (Unknown)
	Lost      []string    // acknowledged writes missing
	Absent    []string    // reads that found a key absent while a write of it certainly existed
	Digests   []nodeDigest
	Differing int    // nodes whose state differs after heal
	DigestBy  string // how the digests were made
	TwoLeader []string
	// Expired lists what shows that a client was expired (a node's expiry counter, a worker that
	// remounted): with one fault at a time a quorum is always up, so the workers' pings must
	// always reach a leader within client_ttl.
	Expired []string
	Notes   []string   // what the drill skipped, and why
	Tiers   tierCounts // a tiers drill: what its reads saw of the tiers
	Errors  []string   // the harness's own failures (the drill could not run as planned)
}

// Strict counts the partitions found not linearizable, whatever explains them.
func (r *Result) Strict() int {
	n := 0
	for _, lr := range r.Nonlinear {
		if lr.Result == porcupine.Illegal {
			n++
		}
	}
	return n
}

// Violations counts the partitions found not linearizable, less those explained by a tolerated
// known anomaly.
func (r *Result) Violations() int {
	n := 0
	for _, lr := range r.Nonlinear {
		if lr.Result == porcupine.Illegal && (lr.Class == "" || !slices.Contains(r.Config.Tolerate, lr.Class)) {
			n++
		}
	}
	return n
}

// ByClass counts the partitions found not linearizable by the known anomaly that explains them
// ("" for none).
func (r *Result) ByClass() map[string]int {
	out := map[string]int{}
	for _, lr := range r.Nonlinear {
		if lr.Result == porcupine.Illegal {
			out[lr.Class]++
		}
	}
	return out
}

// Undecided counts partitions porcupine did not decide in time.
func (r *Result) Undecided() int { return len(r.Nonlinear) - r.Strict() }

// Unavail returns the unavailability windows of the faults of kind k that were measured.
func (r *Result) Unavail(k FaultKind) []time.Duration {
	var out []time.Duration
	for _, f := range r.Faults {
		if f.Kind == k && f.Unavail >= 0 && f.Err == "" {
			out = append(out, f.Unavail)
		}
	}
	return out
}

// Failed reports whether any invariant was broken or the drill could not run.
func (r *Result) Failed() bool {
	return r.Violations() > 0 || len(r.Lost) > 0 || len(r.Absent) > 0 || r.Differing > 0 || len(r.TwoLeader) > 0 || len(r.Expired) > 0 ||
		len(r.Errors) > 0
}

// Run runs one drill: a three-node cluster behind the fault network, workers, the workload, the
// probe and the monitor; the fault schedule; heal; the end checks; the report. The error is for a
// drill that could not start; everything found is in the Result (and its report).
func Run(tb testing.TB, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if !Supported() {
		return nil, errors.New("chaos: the fault network needs Linux /proc")
	}
	start := time.Now()
	res := &Result{Seed: cfg.Seed, Config: cfg, Dir: cfg.ReportDir}
	if err := os.RemoveAll(cfg.ReportDir); err != nil { // a report of an earlier run of the seed
		return nil, err
	}
	if err := os.MkdirAll(cfg.ReportDir, 0o755); err != nil {
		return nil, err
	}
	security := "TLS and authentication on"
	if cfg.Insecure {
		security = "plaintext (insecure)"
	}
	cfg.Logf("chaos: seed %d, %s, report in %s", cfg.Seed, security, cfg.ReportDir)
	// Read leases of leaseTTL, not the default 10 s: the workload reads its few keys all the time,
	// so under 10 s leases almost every MoveEnd would wait for one (as it must) and the moves would
	// rarely end. Removals meet leases all the same.
	flags := append([]string{"--client-ttl", clientTTL.String(), "--put-discard-timeout", "10m", "--lease-ttl", leaseTTL.String()},
		cfg.MetadFlags...)
	if cfg.Tiers {
		flags = append(flags, tiersMetadFlags...)
	}
	c, err := NewClusterOf(tb, cfg.Release, 3, filepath.Join(cfg.ReportDir, "logs"), cfg.Insecure, flags...)
	if err != nil {
		return nil, err
	}
	hist := newHistory(time.Now())
	hist.tiers = cfg.Tiers
	var dcls []*client.Client
	for _, n := range c.Nodes {
		cl, err := c.direct(n)
		if err != nil {
			return nil, err
		}
		tb.Cleanup(func() { _ = cl.Close() })
		dcls = append(dcls, cl)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.WaitLeader(ctx, dcls); err != nil {
		return nil, err
	}
	admin, err := client.New(c.Root(client.Config{Endpoints: c.Endpoints()}))
	if err != nil {
		return nil, err
	}
	tb.Cleanup(func() { _ = admin.Close() })
	for _, t := range cfg.Tenants {
		if t == "default" {
			continue
		}
		if _, err := admin.RegisterTenant(ctx, t, 0); err != nil {
			return nil, fmt.Errorf("register tenant %s: %w", t, err)
		}
	}
	// Each workload client is its own principal, with the tenant roles of every tenant and an API
	// key (none in a plaintext cluster).
	auths := make([]Auth, cfg.Clients)
	for i := range auths {
		if auths[i], err = c.TenantAuth(ctx, admin, fmt.Sprintf("app%d", i+1), cfg.Tenants); err != nil {
			return nil, err
		}
	}
	for i := range 2 {
		name, size, extra := fmt.Sprintf("worker%d", i+1), "64MiB", []string(nil)
		if cfg.Tiers {
			size, extra = tiersSegmentSize, tiersWorkerFlags(filepath.Join(c.dir, name+"-ssd"))
		}
		if err := c.StartWorker(ctx, admin, name, 2, size, extra...); err != nil {
			return nil, err
		}
	}
	if err := waitSegments(ctx, admin, 4); err != nil {
		return nil, err
	}
	served, why := snapshotServed(ctx, c.Nodes[0], dcls[0])
	if !served {
		res.Notes = append(res.Notes, "snapshot and restore under load: skipped, "+why+
			"; node states are compared by stale reads of every key, tenant, segment and group")
	}
	if cfg.Tiers {
		res.Notes = append(res.Notes, tiersNote)
	} else {
		res.Notes = append(res.Notes, "memory pressure and eviction: not drilled; the segments are large enough "+
			"that the evictor has no work, and the model has no eviction")
	}
	res.DigestBy = "stale reads of every key, tenant, segment and group through each node's own port"
	if served {
		res.DigestBy += ", and SnapshotSave --allow-stale bytes"
	}

	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6d65746164))
	var exclude []FaultKind
	if !served {
		exclude = []FaultKind{Snapshot, Restore}
	}
	faults := plan(rng, cfg.Duration, cfg.Kinds, exclude)
	var levelsBefore map[string]uint32
	if cfg.Release != "" {
		faults = planUpgrade(len(c.Nodes), cfg.UpgradeGap)
		if levelsBefore, err = levels(ctx, admin); err != nil {
			return nil, fmt.Errorf("feature levels before the upgrade: %w", err)
		}
		res.Notes = append(res.Notes, fmt.Sprintf("upgrade drill: the nodes started on %s (%s) and were upgraded one at a time to this tree's metad", cfg.ReleaseName, cfg.Release))
	}
	var planned []string
	for _, f := range faults {
		planned = append(planned, f.String())
	}
	cfg.Logf("chaos: seed %d plans %d faults: %s", cfg.Seed, len(faults), strings.Join(planned, "; "))

	ks := newKeyspace(cfg.Tenants, cfg.Singletons, cfg.Groups)
	ws := newWriters()
	mon := newMonitor(c, dcls, hist, 100*time.Millisecond)
	mon.Start()
	wl := newWorkload(workloadConfig{Clients: cfg.Clients, AttemptLimit: time.Second, ReadLimit: 2 * time.Second, MaxSize: 64 << 10},
		ks, hist, c.Endpoints(), auths, cfg.Seed, ws)
	if err := wl.Start(); err != nil {
		mon.Stop()
		return nil, err
	}
	probeID := client.NewUUID()
	ws.add(probeID, probeClient)
	probeCl, err := client.New(c.Root(client.Config{Endpoints: c.Endpoints(), ClientID: probeID}))
	if err != nil {
		mon.Stop()
		_ = wl.Stop()
		return nil, err
	}
	tb.Cleanup(func() { _ = probeCl.Close() })
	pr := newProbe(probeCl, ks, hist, 2*time.Second, 50*time.Millisecond)
	pr.Start()

	// The fault phase, bounded at twice its planned length plus a minute.
	stop := make(chan struct{})
	deadline := time.AfterFunc(cfg.Warmup+2*cfg.Duration+time.Minute, func() { close(stop) })
	inj := &injector{c: c, mon: mon, admin: admin, direct: dcls, hist: hist, ks: ks, ws: ws, stop: stop,
		logf: func(format string, args ...any) { cfg.Logf("chaos: "+format, args...) }}
	if inj.wait(cfg.Warmup) {
		inj.run(faults)
	}
	if !deadline.Stop() {
		res.Errors = append(res.Errors, "the fault phase ran past its deadline")
	}
	// Only the faults that ran count.
	ran := faults[:0]
	for _, f := range faults {
		if f.Target != "" || f.Err != "" {
			ran = append(ran, f)
		}
	}
	res.Faults = ran
	if err := c.HealAll(); err != nil {
		res.Errors = append(res.Errors, "heal: "+err.Error())
	}
	hctx, hcancel := context.WithTimeout(context.Background(), 30*time.Second)
	if _, err := c.WaitLeader(hctx, dcls); err != nil {
		res.Errors = append(res.Errors, "after heal: "+err.Error())
	}
	hcancel()
	if levelsBefore != nil {
		// Each member records its new binary's level through the leader soon after it starts.
		lctx, lcancel := context.WithTimeout(context.Background(), 15*time.Second)
		why := "not asked"
		for why != "" && lctx.Err() == nil {
			after, err := levels(lctx, admin)
			if why = levelsRose(levelsBefore, after); err != nil {
				why = err.Error()
			}
			if why != "" {
				t := time.NewTimer(100 * time.Millisecond)
				select {
				case <-lctx.Done():
				case <-t.C:
				}
				t.Stop()
			}
		}
		lcancel()
		if why != "" {
			res.Errors = append(res.Errors, "feature levels after the upgrade: "+why)
		}
	}
	healed := hist.since()
	settle := time.NewTimer(cfg.Settle)
	<-settle.C
	if err := wl.Stop(); err != nil {
		res.Errors = append(res.Errors, "workload: "+err.Error())
	}
	pr.Stop()
	cfg.Logf("chaos: faults healed at %.1fs; workload stopped at %.1fs", healed.Seconds(), hist.since().Seconds())

	// Final reads (linearizable, recorded) and the state of every node.
	final, err := finalReads(admin, ks, hist)
	if err != nil {
		res.Errors = append(res.Errors, "final reads: "+err.Error())
	}
	digests, err := finalDigests(c, admin, dcls, ks, served)
	if err != nil {
		res.Errors = append(res.Errors, "digests: "+err.Error())
	}
	mon.Stop()
	end := hist.since()
	res.Errors = append(res.Errors, c.Exits()...)
	expired, err := c.Expiries()
	if err != nil {
		res.Errors = append(res.Errors, "client expiry check: "+err.Error())
	}
	res.Expired = expired

	// Checks.
	ops := hist.Ops()
	parts := ks.partitions()
	res.Ops = len(ops)
	res.ByKind = map[string]int{}
	for _, op := range ops {
		res.ByKind[op.In.Kind.String()+" "+op.Out.String()]++
		if op.Open {
			res.Unknown++
		}
	}
	res.Dropped, res.Noops = wl.dropped.Load(), wl.noops.Load()
	checkStart := time.Now()
	res.Nonlinear = checkLinearizable(ops, parts, cfg.CheckTimeout, cfg.ReportDir)
	cfg.Logf("chaos: checked %d operations in %d partitions in %.1fs", len(ops), len(parts), time.Since(checkStart).Seconds())
	if final != nil {
		res.Lost = lostWrites(ops, parts, final)
	}
	res.Absent = absentWhileWritten(ops, parts)
	if cfg.Tiers {
		res.Tiers = countTiers(ops)
	}
	res.Digests = digests
	if len(digests) > 0 {
		res.Differing, _ = differing(digests)
	}
	samples := mon.Samples()
	res.TwoLeader = twoLeaderTerms(samples, func(i int) string { return c.Nodes[i].Name })
	res.Leaders = leaderSpans(samples, end)
	res.Probe = pr.Writes()
	unavailability(res.Faults, res.Probe)
	res.Elapsed = time.Since(start)
	if err := writeReport(res, cfg, ops, parts, end); err != nil {
		res.Errors = append(res.Errors, "report: "+err.Error())
	}
	return res, nil
}

// clientTTL is the metad client ttl of a drill: metad's default. Leader pauses run past it.
const clientTTL = 10 * time.Second

// leaseTTL is the drills' read lease ttl (--lease-ttl).
const leaseTTL = 2 * time.Second

// waitSegments polls until at least n segments are mounted.
func waitSegments(ctx context.Context, cl *client.Client, n int) error {
	for {
		segs, err := cl.ListSegments(ctx, client.SegmentFilter{})
		if err == nil && len(segs) >= n {
			return nil
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%d segments not mounted: %w (last error %v)", n, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// finalReads reads every key and group once more, linearizably, after the workload stopped, and
// records the reads in the history; it returns what they found per key.
func finalReads(cl *client.Client, ks *keyspace, hist *History) (map[keyRef]finalState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := map[keyRef]finalState{}
	for _, t := range ks.Tenants {
		keys, refs := ks.tenantKeys(t)
		var resp *metadv1.BatchGetResponse
		var call, ret time.Duration
		err := retry(ctx, func(ctx context.Context) error {
			var err error
			rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
			defer rcancel()
			call = hist.since()
			resp, err = cl.BatchGet(rctx, t, keys)
			ret = hist.since()
			if err == nil && len(resp.GetResults()) != len(keys) {
				err = fmt.Errorf("%d results for %d keys", len(resp.GetResults()), len(keys))
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("tenant %s: %w", t, err)
		}
		for i, r := range resp.GetResults() {
			op := batchGetOp(finalClient, refs[i], t+"/"+keys[i], r, call, ret)
			hist.add(op)
			fs := finalState{}
			switch {
			case op.Out.Res == resOK:
				fs = finalState{Kind: present, Size: op.Out.Size}
			case op.Out.Reason == rNotReady:
				fs.Kind = pending
			}
			out[refs[i]] = fs
		}
		for _, g := range ks.Groups[t] {
			var members []string
			var gerr error
			err := retry(ctx, func(ctx context.Context) error {
				rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
				defer rcancel()
				call = hist.since()
				members, gerr = cl.ListGroup(rctx, t, g)
				ret = hist.since()
				if cls, _ := classify(gerr); cls == clsReason {
					return nil
				}
				return gerr
			})
			if err != nil {
				return nil, fmt.Errorf("group %s/%s: %w", t, g, err)
			}
			hist.add(listGroupOp(finalClient, ks.groupPart(t, g), t, g, members, gerr, call, ret))
		}
	}
	return out, nil
}

// retry calls fn until it succeeds or ctx ends, 100 ms apart.
func retry(ctx context.Context, fn func(context.Context) error) error {
	for {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// finalDigests makes one last write, waits until every node applied it, and digests each node.
func finalDigests(c *Cluster, cl *client.Client, direct []*client.Client, ks *keyspace, withSnapshot bool) ([]nodeDigest, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := retry(ctx, func(ctx context.Context) error {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		defer rcancel()
		_, err := cl.Put(rctx, "default", fmt.Sprintf("final-%d", time.Now().UnixNano()), 64, nil)
		return err
	}); err != nil {
		return nil, fmt.Errorf("final write: %w", err)
	}
	leader, err := c.WaitLeader(ctx, direct)
	if err != nil {
		return nil, err
	}
	st, err := direct[leader.Index].Status(ctx, leader.ClientListen)
	if err != nil {
		return nil, err
	}
	ds, err := converge(ctx, c, direct, ks, st.GetCommitIndex(), withSnapshot)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].Node < ds[j].Node })
	return ds, nil
}
