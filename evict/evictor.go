package evict

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"metad/store"
	"metad/store/alloc"
)

// Evictor is the leader's eviction: the memory and NOF watermark loop, the tenant-quota eviction the
// service calls, and the reaper of stale writes, all over one kernel (kernel.go). Concurrency
// contract: Run is called at most once at a time, on its own goroutine, and owns the loop's state;
// EvictTenant and Kick are safe from any goroutine, also while Run works. Two rounds never propose
// the same object: the first marks it, and a marked object fails the other's revalidation.
type Evictor struct {
	cfg  Config
	node Node
	log  *slog.Logger
	m    *metrics
	now  func() int64 // the leader's clock, unix ns (tests fix it)

	// kick wakes Run early: Kick sends without blocking (buffered 1), Run receives; never closed.
	kick chan struct{}

	bufs bufCache // selection storage kept between busy rounds

	// Owned by Run's goroutine.
	flagged  bool      // a MEMORY placement found no room (store.EvictionWanted) and no memory round has completed since
	flagUsed uint64    // the MEMORY tier's used bytes when that placement failed
	lastReap time.Time // when the reaper last looked

	// Test hooks, set before Run or any round and never changed while one runs.
	afterCensus   func(pass1, pass2 []*unit)     // after selection, before the first slot is taken
	beforePropose func(toks []store.ObjectToken) // after marking, before proposing
}

// New returns an evictor for node. Its metrics are registered on reg (nil: not registered); log may
// be nil.
func New(cfg Config, node Node, reg prometheus.Registerer, log *slog.Logger) (*Evictor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if node == nil {
		return nil, errors.New("evict: nil node")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Evictor{cfg: cfg, node: node, log: log, m: newMetrics(), kick: make(chan struct{}, 1),
		now: func() int64 { return time.Now().UnixNano() }}
	if reg != nil {
		if err := e.m.register(reg); err != nil {
			return nil, fmt.Errorf("evict: register metrics: %w", err)
		}
	}
	return e, nil
}

// Kick makes Run look at once instead of at its next tick (after an allocation failure, or on a
// leadership change: the service kicks it from the node's leadership hook, ha.Config.OnLeadership).
func (e *Evictor) Kick() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// Run is the eviction loop; it returns ctx's error when ctx ends. It works only while this node is
// the leader and idles otherwise, so it may run on every node for the process's whole life (or be
// started and cancelled by leadership hooks). While a tier is over its high watermark, or an
// allocation failed, it runs a round every BusyInterval as long as rounds make progress; otherwise
// it looks every IdleInterval. A round stops, holding nothing, as soon as the node is not leader or
// the pipeline has no free slot. The reaper runs every ReapInterval, later (up to three intervals)
// while a drain is making progress.
func (e *Evictor) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		case <-e.kick:
		}
		wait := e.cfg.IdleInterval
		if e.node.IsLeader() {
			if e.step(ctx) {
				wait = e.cfg.BusyInterval
			} else {
				e.bufs.drop()
			}
		} else {
			e.bufs.drop()
			// A follower's placements raise the flag too (apply runs everywhere); it is stale by
			// the time this node leads, so drop it.
			e.node.Store().EvictionWanted()
			e.flagged, e.flagUsed = false, 0
			e.lastReap = time.Time{}
		}
		t.Reset(wait)
	}
}

// reapPatience is how many reap intervals the reaper waits, at most, while eviction is busy.
const reapPatience = 3

// reapDue reports whether the reaper should run, since its last run and with eviction busy or not.
// The reaper reads every object, as a census does; while a drain makes progress it waits, up to
// reapPatience intervals, so that the two do not compete for the leader's processors. A drain that
// stops making progress (say, memory held by stale writes, which eviction never takes) lets it run
// at once.
func (e *Evictor) reapDue(since time.Duration, busy bool) bool {
	return since >= e.cfg.ReapInterval && (!busy || since >= reapPatience*e.cfg.ReapInterval)
}

// step runs what is due on the leader and reports whether to come back after BusyInterval.
func (e *Evictor) step(ctx context.Context) bool {
	s := e.node.Store()
	if used, wanted := s.EvictionWanted(); wanted {
		e.flagged, e.flagUsed = true, used
	}
	if e.flagged {
		// A round asked for by a failed placement outlives its cause once memory has been freed
		// since (a removal, an unmount, an eviction, an idle arena retired): the room that put
		// lacked may be there now, and the watermark alone decides.
		if _, used := s.Segments().Allocatable(alloc.TierMemory); used < e.flagUsed {
			e.flagged = false
			e.m.flagsDropped.Inc()
		}
	}
	busy := e.tierStep(ctx, s, KindMemory)
	for _, kind := range [...]Kind{KindNOF, KindDisk, KindDFS} {
		if e.tierStep(ctx, s, kind) {
			busy = true
		}
	}
	if e.lastReap.IsZero() {
		// First step as leader: the reaper is due now, and patient like any other time.
		e.lastReap = time.Now().Add(-e.cfg.ReapInterval)
	}
	if e.reapDue(time.Since(e.lastReap), busy) {
		if _, err := e.reap(ctx, s); err != nil && !errors.Is(err, context.Canceled) {
			e.log.Warn("reaper round stopped", "err", err)
		}
		e.lastReap = time.Now()
	}
	return busy
}

// tierStep runs one watermark round of the kind if its tier needs one, and reports whether another
// should follow soon.
func (e *Evictor) tierStep(ctx context.Context, s *store.Store, kind Kind) bool {
	sp := e.watermarkSpec(s, kind, kind == KindMemory && e.flagged)
	if sp == nil {
		return false
	}
	if e.now() < s.LeaseFloor() {
		return false // a new leader: every object counts as leased for one ttl
	}
	out, err := e.round(ctx, s, sp)
	switch {
	case errors.Is(err, ErrNoSlot):
		e.m.rounds.WithLabelValues(kind.String(), "no_slot").Inc()
		return true
	case errors.Is(err, ErrNotLeader):
		e.m.rounds.WithLabelValues(kind.String(), "not_leader").Inc()
		return false
	case err != nil:
		e.m.rounds.WithLabelValues(kind.String(), "failed").Inc()
		if ctx.Err() == nil {
			e.log.Warn("eviction round failed", "kind", kind.String(), "freed", out.bytes, "err", err)
		}
		return false
	}
	e.m.rounds.WithLabelValues(kind.String(), "done").Inc()
	if kind == KindMemory {
		e.flagged = false
	}
	e.log.Debug("eviction round", "kind", kind.String(), "target", sp.target, "lower", sp.lower,
		"freed", out.bytes, "objects", out.objects, "proposals", out.proposals)
	// Come back soon only while the round helped: with nothing evictable (all leased, pinned or
	// PROCESSING) a census every BusyInterval would only load the leader.
	return out.freed > 0 && e.watermarkSpec(s, kind, false) != nil
}

// watermarkSpec returns the round a tier needs (nil: none): over its high watermark, or flagged.
// With capacity C and used U of the tier's segments that take allocations (alloc.Registry.Allocatable), high watermark h and ratio r (h and r turned into bytes of C once):
// target = max(r, U - h + r), lower = max(target/2, U - h).
func (e *Evictor) watermarkSpec(s *store.Store, kind Kind, flagged bool) *spec {
	tier, hwm, ratio := alloc.TierMemory, e.cfg.HighWatermark, e.cfg.EvictRatio
	switch kind {
	case KindNOF:
		tier, hwm, ratio = alloc.TierNOF, e.cfg.NOFHighWatermark, e.cfg.NOFEvictRatio
	case KindDisk:
		tier, hwm, ratio = alloc.TierDisk, e.cfg.DiskHighWatermark, e.cfg.DiskEvictRatio
	case KindDFS:
		tier, hwm, ratio = alloc.TierDFS, e.cfg.DFSHighWatermark, e.cfg.DFSEvictRatio
	}
	// Measured over the segments that take allocations: a closing segment's free space is no room
	// for a new write (alloc's package doc).
	capacity, used := s.Segments().Allocatable(tier)
	if capacity == 0 {
		return nil
	}
	h := uint64(math.Round(hwm * float64(capacity)))
	r := max(1, uint64(math.Round(ratio*float64(capacity))))
	if used <= h && !flagged {
		return nil
	}
	var over uint64
	if used > h {
		over = used - h
	}
	target := max(r, over+r)
	return &spec{kind: kind, tier: tier, target: target, lower: max(target/2, over), allowSoft: e.cfg.AllowEvictSoftPinned,
		offload: tier == alloc.TierMemory && e.offloadOnEvict(s)}
}

// offloadOnEvict reports whether a memory round waits for offloads (Config.OffloadOnEvict): an
// offloading SSD registration is mounted, and the offload queue has room or ForceEvict is off.
func (e *Evictor) offloadOnEvict(s *store.Store) bool {
	if !e.cfg.OffloadOnEvict || s.Segments().Offloaders() == 0 {
		return false
	}
	return !e.cfg.ForceEvict || s.Tasks().PendingTotal() < store.MaxPendingTasks
}

// EvictTenant is the tenant-quota eviction (SEMANTICS sections 6 and 7). The service calls it on the
// leader, synchronously, when a PutStart is rejected with TENANT_QUOTA_EXCEEDED (or is over the
// quota with what the arenas' reservations hold), passing the deficit (QuotaDeficit), and then
// retries the put, at most twice. It evicts only that tenant's
// MEMORY replicas, with the same checks as every eviction (never a leased, hard-pinned, marked or
// PROCESSING object; a group whole or not at all), unpinned objects oldest lease first and then
// soft-pinned ones if AllowEvictSoftPinned, until deficit bytes of the tenant's quota (size x
// MEMORY replicas) are released or no candidate is left. It returns the bytes released; an error
// only when it could not run (ErrNotLeader, ErrNoSlot, a failed proposal), having then released
// what it returns and holding nothing. Each proposal is waited for to its end even if ctx ends
// first (Raft bounds the wait: the entry commits, or leadership is lost), so a cancelled request
// never strands unlink marks; ctx only stops the eviction between proposals.
func (e *Evictor) EvictTenant(ctx context.Context, tenant string, deficit uint64) (uint64, error) {
	if deficit == 0 {
		return 0, nil
	}
	if !e.node.IsLeader() {
		return 0, ErrNotLeader
	}
	s := e.node.Store()
	if e.now() < s.LeaseFloor() {
		return 0, nil
	}
	sp := &spec{kind: KindTenantQuota, tier: alloc.TierMemory, tenant: store.NormalizeTenant(tenant),
		target: deficit, lower: deficit, allowSoft: e.cfg.AllowEvictSoftPinned, detach: true, offload: e.offloadOnEvict(s)}
	out, err := e.round(ctx, s, sp)
	outcome := "done"
	switch {
	case errors.Is(err, ErrNoSlot):
		outcome = "no_slot"
	case errors.Is(err, ErrNotLeader):
		outcome = "not_leader"
	case err != nil:
		outcome = "failed"
	}
	e.m.rounds.WithLabelValues(KindTenantQuota.String(), outcome).Inc()
	return out.freed, err
}

// QuotaDeficit returns how many bytes of its quota the tenant must release before a put charging
// want bytes (size x MEMORY replicas) fits: charged + want - effective, or 0 when it fits, the
// tenant has no quota, or it is not registered.
func QuotaDeficit(s *store.Store, tenant string, want uint64) uint64 {
	t := s.Tenants().Lookup(store.NormalizeTenant(tenant))
	if t == nil || t.Quota().Requested() == 0 {
		return 0
	}
	q := t.Quota()
	need, have := q.Charged()+want, q.Effective()
	if need <= have {
		return 0
	}
	return need - have
}
