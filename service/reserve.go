package service

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// Reservations: a PutStart without a log entry (docs/design.md, "Allocation arenas").
//
// The leader holds arenas (store.Arena) granted to its term through the log. A PutStart of a key
// the state does not hold is answered from them: the leader carves the replicas from its pool (the
// free bytes of its term's arenas that no reservation holds), charges the tenant's quota in soft
// state, records the reservation and answers at once. The write's PutEnd proposes PutCommit, which
// creates the object with exactly those ranges on every node. PutRevoke drops the reservation; the
// keeper drops one older than the fence (put_release_timeout) as the reaper revokes a write.
//
// A reservation lives only in this leader's memory: a leader change loses it, and the write's
// PutEnd on the new leader answers RESERVATION_LOST while an earlier term's arenas are still
// fenced (OBJECT_NOT_FOUND after that, as for any unknown write). The bytes stay safe because
//   - the leader reserves only while it holds the leader lease (ha.Node.LeaseTerm): no other node
//     can lead meanwhile, so a reservation is only ever made by the one leader;
//   - it carves only from its own term's arenas, and a new leader retires an earlier term's arenas
//     only after the fence (put_release_timeout since it became ready, plus the lease), when no
//     writer an old leader answered can still be writing into them: until then no object can get
//     their bytes.
//
// What does not fit is not refused but goes through the log as before (PutStart): a key the state
// holds (the state decides about a stale write), a key with a PutStart or UpsertStart in flight,
// a placement the pool cannot make whole (no arena with room on enough segments), a put over the
// tenant's quota (tenant-quota eviction runs there), no lease.

// reserveKey names a reservation.
type reserveKey struct{ tenant, key string }

// reservation is one PutStart answered from the arenas.
type reservation struct {
	client alloc.ID
	size   uint64
	group  []byte
	cfg    *metadv1.ReplicaConfig // as the PutStart command would carry it; shared, never changed
	// exts (MEMORY first, in placement order) and their tiers: replaced, never changed in place,
	// since answers and PutCommit commands slice their segment ids.
	exts    []alloc.Extent
	tiers   []alloc.Tier
	start   int64  // leader time of the PutStart, unix ns
	charged uint64 // quota bytes held: size x MEMORY replicas
	// session and seq of the PutStart that made it, a session of its caller's (ownSession): a
	// retry of that request gets the same answer.
	session, seq uint64
	// committing: a PutCommit of it is in flight or its outcome is unknown; it is not revoked,
	// reaped or given to anyone else meanwhile.
	committing bool
}

// reservations is the leader's soft state of reservations and its pool. Safe for concurrent use:
// mu guards every field (held for map and pool updates only, never across a proposal or a Raft
// call). Nothing of it is replicated; a new term starts it empty.
type reservations struct {
	s  *Service
	m  *reserveMetrics
	mu sync.Mutex
	// term is the term the pool serves (0: none).
	term uint64
	// readyAt is when this node, leading in term, started the table: arenas of earlier terms are
	// retired from readyAt + fence on.
	readyAt time.Time
	// pool holds this term's arena bytes no reservation holds: every mounted segment, all of it
	// reserved except those bytes (known).
	pool  *alloc.Registry
	known map[uint64]arenaSpan // this term's arenas whose free spans went into pool, by id
	byKey map[reserveKey]*reservation
	// held is each tenant's quota bytes that reservations hold.
	held map[string]uint64
	// inFlight counts the PutStart, UpsertStart and BatchPutStart proposals in flight per key:
	// while one is, the key is the log's to decide.
	inFlight map[reserveKey]int
	// sizeAvg is a moving average of reserved replica sizes (arena sizing).
	sizeAvg float64
	// asked is the replica bytes per tier that puts asked the pool for since the keeper's last
	// round, answered or not; roundAsked is the keeper's estimate of a round's demand from it
	// (arenaSize).
	asked      [alloc.NumTiers]uint64
	roundAsked [alloc.NumTiers]float64
	// failedAt is when a grant last left a segment without an arena (it has no room): none is
	// asked for there again for a second.
	failedAt map[alloc.ID]time.Time
	// demand: a PutStart arrived in this term. Until one does the keeper neither confirms the
	// lease nor asks for arenas (a leader that takes no puts holds none).
	demand bool
	// droppedAt is when an online restore dropped reservations of this term (zero: none did).
	droppedAt time.Time
}

func newReservations(s *Service, reg prometheus.Registerer) (*reservations, error) {
	m, err := newReserveMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &reservations{s: s, m: m}, nil
}

// Sizing of arenas, as multiples of the recent replica size and shares of a segment.
const (
	// arenaObjects is how many replicas of the recent size an arena is granted for: a grant is at
	// most one entry in that many.
	arenaObjects = 256
	// arenaMinBytes and arenaShare bound an arena: at least this, at most this share of its
	// segment (1/arenaShare), so that the bytes arenas hold apart from the replicated placements
	// stay a small share of every segment. An object larger than its segment's arenas goes
	// through the log.
	arenaMinBytes = 64 << 10
	arenaShare    = 64
	// refillBelow: a segment gets another arena when the pool's free bytes on it fall below this
	// share of the arena size (1/refillBelow).
	refillBelow = 2
	// arenaRounds is how many keeper rounds of the recent demand on its segment an arena holds at
	// least: a segment is refilled once a round, when its pool is below half an arena, and the
	// grant takes a Raft round of its own, so half an arena must last a round and a grant.
	arenaRounds = 4
	// demandDecay is how much of a round's demand estimate carries into the next when less is
	// asked: it follows a rise at once and a fall over a few rounds.
	demandDecay = 0.75
)

// resetLocked starts the table afresh for term (0: not leading): every reservation is dropped
// (their PutEnds meet RESERVATION_LOST or the state) and the pool is empty (mu held).
func (r *reservations) resetLocked(term uint64, now time.Time) {
	r.term, r.readyAt = term, now
	r.pool = alloc.NewRegistry()
	r.known = map[uint64]arenaSpan{}
	r.byKey = map[reserveKey]*reservation{}
	r.held = map[string]uint64{}
	r.inFlight = map[reserveKey]int{}
	r.failedAt = map[alloc.ID]time.Time{}
	r.asked, r.roundAsked = [alloc.NumTiers]uint64{}, [alloc.NumTiers]float64{}
	r.demand = false
	r.droppedAt = time.Time{}
	r.m.reservations.Set(0)
	r.m.reservedBytes.Set(0)
}

// restored starts the table afresh after an online snapshot restore replaced the state (its arenas
// included): reservations made against the old state are dropped, the pool is rebuilt from the
// restored arenas of this term, and the fence of every other arena counts from now.
func (r *reservations) restored() {
	r.lock()
	defer r.mu.Unlock()
	if r.term != 0 {
		dropped := len(r.byKey) > 0
		now := r.s.cfg.Now()
		r.resetLocked(r.term, now)
		if dropped {
			r.droppedAt = now
		}
	}
}

// lock takes mu and first starts the table afresh if the term the service leads in (its
// leadership hook's, 0 when it does not lead) is not the table's: every method takes mu through
// it, so no reservation of an earlier term is ever seen, even if the node lost and regained
// leadership between two rounds of the keeper.
func (r *reservations) lock() {
	r.mu.Lock()
	if cur := r.s.term.Load(); cur != r.term {
		r.resetLocked(cur, r.s.cfg.Now())
	}
}

// leaseTerm returns the term in which this node may reserve now: it holds the leader lease in the
// term the table serves. One read-barrier round renews a lease that ran out (a leader with no
// traffic); 0 when there is still none.
func (r *reservations) leaseTerm(ctx context.Context) uint64 {
	r.lock()
	term := r.term
	r.demand = true
	r.mu.Unlock()
	if term == 0 {
		return 0
	}
	if t := r.s.b.LeaseTerm(); t == term {
		return t
	}
	if err := r.s.b.ReadBarrier(ctx); err != nil {
		return 0
	}
	if t := r.s.b.LeaseTerm(); t == term {
		return t
	}
	return 0
}

// tryReserve answers a PutStart from the arenas: its replicas, or ok false when it must go through
// the log (nothing changed then). err is a refusal this table owns: OBJECT_ALREADY_EXISTS for a
// key another live reservation holds.
func (r *reservations) tryReserve(ctx context.Context, ps *metadv1.PutStart) (reps []*metadv1.Replica, ok bool, err error) {
	if !r.levelReached() {
		return nil, false, nil
	}
	if r.leaseTerm(ctx) == 0 {
		r.m.fallback("no_lease")
		return nil, false, nil
	}
	h, own := r.s.ownSession(ctx)
	if !own {
		return nil, false, nil // through the log, which answers SESSION_EXPIRED
	}
	st := r.s.state()
	r.lock()
	defer r.mu.Unlock()
	return r.reserveLocked(st, ps, reservedConfig(ps.GetConfig()), h, r.s.cfg.nowNano())
}

// tryReserveBatch is tryReserve for the items of a BatchPutStart (one config for all): one answer
// per item, in order; an item with ok false goes through the log.
func (r *reservations) tryReserveBatch(ctx context.Context, m *metadv1.BatchPutStart) []reserveAnswer {
	out := make([]reserveAnswer, len(m.Items))
	if !r.levelReached() {
		return out
	}
	if r.leaseTerm(ctx) == 0 {
		r.m.fallback("no_lease")
		return out
	}
	h, own := r.s.ownSession(ctx)
	if !own {
		return out // through the log, which answers SESSION_EXPIRED
	}
	st := r.s.state()
	now := r.s.cfg.nowNano()
	r.lock()
	defer r.mu.Unlock()
	ps := &metadv1.PutStart{Tenant: m.Tenant, ClientId: m.ClientId, Config: m.Config, Placement: m.Placement,
		PutDiscardTimeoutMs: m.PutDiscardTimeoutMs} // each item's in turn: reserveLocked keeps no reference to it
	rc := reservedConfig(m.Config) // shared by the batch's reservations, never changed
	for i, it := range m.Items {
		ps.Key, ps.Group, ps.Size = it.Key, it.Group, it.Size
		a := &out[i]
		a.reps, a.ok, a.err = r.reserveLocked(st, ps, rc, h, now)
	}
	return out
}

// levelReached reports whether every member records the feature level of the arena commands
// (fsm.LevelArenas): until then a member of an older binary could not apply a PutCommit or an
// ArenaGrant, so every PutStart goes through the log (counted as fallback "feature_level").
func (r *reservations) levelReached() bool {
	if l, _ := r.s.b.ClusterLevel(); l < fsm.LevelArenas {
		r.m.fallback("feature_level")
		return false
	}
	return true
}

// reserveAnswer is tryReserve's answer for one item.
type reserveAnswer struct {
	reps []*metadv1.Replica
	ok   bool
	err  error
}

// reservedConfig is the replica config a reservation of a put with cfg keeps (reservation.cfg).
func reservedConfig(cfg *metadv1.ReplicaConfig) *metadv1.ReplicaConfig {
	return &metadv1.ReplicaConfig{MemoryReplicas: max(cfg.GetMemoryReplicas(), 1), NofReplicas: cfg.GetNofReplicas(), DfsReplicas: cfg.GetDfsReplicas(),
		SoftPin: cfg.GetSoftPin(), SoftPinTtlMs: cfg.GetSoftPinTtlMs(), HardPin: cfg.GetHardPin(), DataType: cfg.GetDataType()}
}

// reserveLocked is tryReserve with the lease checked and mu held, at leader time now; rc is
// reservedConfig(ps.GetConfig()), which the reservation keeps.
func (r *reservations) reserveLocked(st *store.Store, ps *metadv1.PutStart, rc *metadv1.ReplicaConfig, h *metadv1.SessionHeader, now int64) (reps []*metadv1.Replica, ok bool, err error) {
	rk := reserveKey{ps.Tenant, string(ps.Key)}
	if r.term == 0 {
		r.m.fallback("no_lease")
		return nil, false, nil
	}
	if r.inFlight[rk] > 0 {
		r.m.fallback("key_in_flight")
		return nil, false, nil
	}
	if old := r.byKey[rk]; old != nil {
		if h != nil && old.session == h.GetSessionId() && old.seq == h.GetSeq() && old.client == wire.ID16(ps.ClientId) {
			return r.replicasTo(st, old), true, nil // a retry of the request that made it
		}
		if old.committing || now-old.start <= int64(time.Duration(ps.PutDiscardTimeoutMs)*time.Millisecond) {
			return nil, false, inProgress(ps.Tenant, ps.Key)
		}
		r.dropLocked(rk, old) // a stale write, discarded as the state discards one
	}
	if st.Holds(ps.Tenant, string(ps.Key)) {
		r.m.fallback("key_held")
		return nil, false, nil
	}
	t := st.Tenants().Lookup(ps.Tenant)
	if t == nil || t.Life() != store.TenantOpen {
		r.m.fallback("tenant")
		return nil, false, nil
	}
	cfg := ps.GetConfig()
	mem := int(max(cfg.GetMemoryReplicas(), 1))
	want := uint64(mem) * ps.Size
	if q := t.Quota(); quotaOver(q, r.held[ps.Tenant], want) > 0 {
		if r.held[ps.Tenant] == 0 {
			// Over by the state's charge alone (objects committed since the service checked):
			// the log's check and its tenant-quota eviction decide.
			r.m.fallback("quota")
			return nil, false, nil
		}
		return nil, false, quotaErr(ps.Tenant, ps.Key, q, r.held[ps.Tenant], want)
	}
	pref := make([]alloc.ID, len(cfg.GetPreferredSegmentIds()))
	for i, p := range cfg.GetPreferredSegmentIds() {
		pref[i] = wire.ID16(p)
	}
	r.askLocked(st, ps.Size, mem, cfg)
	pl, perr := r.pool.Place(alloc.PlaceRequest{Size: ps.Size, Memory: mem, NOF: int(cfg.GetNofReplicas()),
		DFS: int(cfg.GetDfsReplicas()), Preferred: pref, Strategy: r.s.cfg.Strategy, Seed: rand.Uint64()})
	if perr != nil || pl.Short > 0 {
		if perr == nil {
			r.freeLocked(pl.All())
		}
		r.m.fallback("no_arena_room")
		return nil, false, nil
	}
	// The pool has arena room only on segments the keeper has stocked: a preferred segment it has
	// not (one mounted a moment ago, or full of arenas' reservations) would be skipped here where
	// the log would place on it, so the put goes through the log.
	if !preferencesHeld(st, pref, pl) {
		r.freeLocked(pl.All())
		r.m.fallback("preference")
		return nil, false, nil
	}
	// A put through the log lands on a shared root (DISK) whenever one has room for it; without
	// arena room on one, it goes through the log rather than lose that copy. A full root gives the
	// log's put no copy either, and the arenas answer.
	if len(pl.Disk) == 0 && st.Segments().Roots() > 0 && st.Segments().Fits(alloc.TierDisk, ps.Size) {
		r.freeLocked(pl.All())
		r.m.fallback("no_arena_room")
		return nil, false, nil
	}
	// The pool follows the state a keeper round late: a segment that closed or went since (its
	// arenas retired or dropped with it) leaves the pool now, and the put goes through the log.
	for _, exts := range [...][]alloc.Extent{pl.Memory, pl.NOF, pl.DFS, pl.Disk} { // no allocation: every reserved put passes here
		for _, e := range exts {
			if info, found := st.Segments().Get(e.Segment); !found || info.Closing {
				r.freeLocked(pl.All())
				_ = r.pool.SetClosing(e.Segment, true)
				r.m.fallback("segment_closed")
				return nil, false, nil
			}
		}
	}
	res := &reservation{client: wire.ID16(ps.ClientId), size: ps.Size, group: ps.Group, start: now, charged: want,
		cfg: rc}
	n := len(pl.Memory) + len(pl.NOF) + len(pl.Disk) + len(pl.DFS)
	res.exts, res.tiers = make([]alloc.Extent, 0, n), make([]alloc.Tier, 0, n)
	for _, e := range pl.Memory {
		res.exts, res.tiers = append(res.exts, e), append(res.tiers, alloc.TierMemory)
	}
	for _, tier := range [...]struct {
		t    alloc.Tier
		exts []alloc.Extent
	}{{alloc.TierNOF, pl.NOF}, {alloc.TierDisk, pl.Disk}, {alloc.TierDFS, pl.DFS}} { // as the state orders them (store.allocate)
		for _, e := range tier.exts {
			res.exts, res.tiers = append(res.exts, e), append(res.tiers, tier.t)
		}
	}
	if h != nil {
		res.session, res.seq = h.GetSessionId(), h.GetSeq()
	}
	r.byKey[rk] = res
	r.held[ps.Tenant] += want
	r.sizeAvg += (float64(alloc.RoundUp(ps.Size)) - r.sizeAvg) / 64
	r.m.reserved(1, int64(want))
	return r.replicasTo(st, res), true, nil
}

// askLocked counts a put's replica bytes per tier, as the pool is asked for them, in the demand
// the keeper sizes arenas by (mu held).
func (r *reservations) askLocked(st *store.Store, size uint64, mem int, cfg *metadv1.ReplicaConfig) {
	b := alloc.RoundUp(size)
	r.asked[alloc.TierMemory] += uint64(mem) * b
	r.asked[alloc.TierNOF] += uint64(cfg.GetNofReplicas()) * b
	r.asked[alloc.TierDFS] += uint64(cfg.GetDfsReplicas()) * b
	if st.Segments().Roots() > 0 {
		r.asked[alloc.TierDisk] += b
	}
}

// preferencesHeld reports whether placement pl, made in the pool, honours the preferred segments
// as a placement in the state would: per tier, no preferred segment that the state could place on
// (mounted, open, of the tier) is passed over while a replica lies on a later preferred segment or
// on one not preferred. Whether the state's segment has room is not asked: a preferred segment
// that is full sends puts through the log, which then places elsewhere.
func preferencesHeld(st *store.Store, pref []alloc.ID, pl alloc.Placement) bool {
	if len(pref) == 0 {
		return true
	}
	rank := func(id alloc.ID) int {
		for i, p := range pref {
			if p == id {
				return i
			}
		}
		return len(pref)
	}
	for _, exts := range [][]alloc.Extent{pl.Memory, pl.NOF, pl.DFS, pl.Disk} {
		if len(exts) == 0 {
			continue
		}
		tier, _ := st.Segments().Get(exts[0].Segment)
		used, worst := map[alloc.ID]bool{}, -1
		for _, e := range exts {
			used[e.Segment] = true
			worst = max(worst, rank(e.Segment))
		}
		for i, p := range pref[:min(worst, len(pref))] {
			if used[p] || slices.Index(pref[:i], p) >= 0 {
				continue
			}
			if info, ok := st.Segments().Get(p); ok && !info.Closing && info.Tier == tier.Tier {
				return false
			}
		}
	}
	return true
}

// quotaErr is TENANT_QUOTA_EXCEEDED for a put of want bytes that the quota cannot hold beside what
// the state charges and reservations hold.
func quotaErr(tenant string, key []byte, q *store.QuotaAccount, held, want uint64) error {
	return &Error{Err: &store.Error{Reason: store.TenantQuotaExceeded, Msg: fmt.Sprintf(
		"tenant quota exceeded: needs %d bytes, charged %d and reserved %d of effective %d", want, q.Charged(), held, q.Effective())},
		Tenant: tenant, Key: key}
}

// heldOver reports how many bytes a put of want bytes would pass the tenant's quota by, counting
// what reservations hold beside what the state charges (0: it fits, or no quota), and what the
// reservations hold. With arenas off (Config.NoArenas) no reservation is ever held, and it answers
// 0: every put goes through the log, which checks it with all there is (and evicts for it).
func (r *reservations) heldOver(st *store.Store, tenant string, want uint64) (over, held uint64) {
	t := st.Tenants().Lookup(tenant)
	if t == nil {
		return 0, 0
	}
	r.lock()
	held = r.held[tenant]
	r.mu.Unlock()
	if r.s.cfg.NoArenas {
		return 0, held
	}
	return quotaOver(t.Quota(), held, want), held
}

// quotaOver is how many bytes a put of want bytes passes quota q by, with held bytes of
// reservations beside what the state charges; 0 when it fits or the tenant has no quota.
func quotaOver(q *store.QuotaAccount, held, want uint64) uint64 {
	if need := q.Charged() + held + want; q.Requested() != 0 && need > q.Effective() {
		return need - q.Effective()
	}
	return 0
}

// inProgress is OBJECT_ALREADY_EXISTS for a key whose write is in progress (a live reservation).
func inProgress(tenant string, key []byte) error {
	return &Error{Err: &store.Error{Reason: store.ObjectAlreadyExists, Msg: "object already exists (a write is in progress)"},
		Tenant: tenant, Key: key}
}

// illegalClient is ILLEGAL_CLIENT for an end of a reservation another client made.
func illegalClient(res *reservation, client alloc.ID) store.Result {
	return store.Result{Reason: store.IllegalClient, Message: "written by client " + res.client.String() + ", not " + client.String()}
}

// holdsTier reports whether the reservation has a range of tier (0: any).
func (res *reservation) holdsTier(tier alloc.Tier) bool {
	return tier == 0 || slices.Contains(res.tiers, tier)
}

// noWriteOfTier is INVALID_WRITE for an end of a reserved write that names a tier it has no range
// of, as the state answers one of a write with no replica of the tier: nothing changes, and the
// reservation stays for an end that names its tiers.
func noWriteOfTier(tier alloc.Tier) store.Result {
	return store.Result{Reason: store.InvalidWrite, Message: "no write in progress for that tier (" + wire.TierTo(tier).String() + ")"}
}

// replicasTo is a reservation's PutStart answer: its ranges, PROCESSING, with no replica id yet
// (PutCommit draws the ids).
func (r *reservations) replicasTo(st *store.Store, res *reservation) []*metadv1.Replica {
	out := make([]*metadv1.Replica, len(res.exts))
	reps := make([]metadv1.Replica, len(res.exts))
	for i := range res.exts {
		e := &res.exts[i] // the segment id is a slice of res.exts, not of a copy that would escape
		rp := &reps[i]
		rp.Tier, rp.SegmentId, rp.Offset, rp.Size = wire.TierTo(res.tiers[i]), e.Segment[:], e.Offset, res.size
		rp.Status = metadv1.ReplicaStatus_REPLICA_STATUS_PROCESSING
		if info, ok := st.Segments().Describe(e.Segment); ok {
			rp.SegmentEndpoint, rp.BaseAddress = info.Endpoint, info.Base
		}
		out[i] = rp
	}
	return out
}

// freeLocked returns extents to the pool; one whose segment left the pool went with it (mu held).
func (r *reservations) freeLocked(es []alloc.Extent) {
	for _, e := range es {
		_ = r.pool.Free(e) // ErrSegmentNotFound: the segment was unmounted meanwhile
	}
}

// dropLocked forgets a reservation and returns its bytes and quota (mu held).
func (r *reservations) dropLocked(rk reserveKey, res *reservation) {
	delete(r.byKey, rk)
	r.freeLocked(res.exts)
	r.releaseLocked(rk, res)
}

// releaseLocked forgets a reservation's quota (mu held); its bytes went to an object or stay out.
func (r *reservations) releaseLocked(rk reserveKey, res *reservation) {
	delete(r.byKey, rk)
	if r.held[rk.tenant] -= res.charged; r.held[rk.tenant] == 0 {
		delete(r.held, rk.tenant)
	}
	r.m.reserved(-1, -int64(res.charged))
}

// holds reports whether a live reservation holds the key (Get answers REPLICA_IS_NOT_READY).
func (r *reservations) holds(tenant, key string) bool {
	r.lock()
	defer r.mu.Unlock()
	return r.byKey[reserveKey{tenant, key}] != nil
}

// retireIdle retires this term's arenas on segments of tier (0: any) that no reservation has a
// range in, so that their free bytes coalesce with the segments' other free spans: a put that
// found no span large enough may fit then. It reports whether any was retired. The arenas are the
// state's, not only those the pool has taken in (one granted a moment ago may not be yet). Their
// bytes leave the pool at once, and they stay in known until they leave the state, so that no
// keeper round gives their bytes back to the pool while the retire is in flight; a retire that
// fails hands them back to the next round. A segment that had one retired gets no new arena for a
// second (failedAt), so the room goes to the put that asked for it.
func (r *reservations) retireIdle(ctx context.Context, tier alloc.Tier) bool {
	now := r.s.cfg.Now()
	arenas := r.s.state().Arenas().List() // by id
	r.lock()
	var ids []uint64
	for _, a := range arenas {
		sp := arenaSpan{a.Segment, a.Offset, a.Size}
		if a.Term != r.term || r.term == 0 || (tier != 0 && a.Tier != tier) || r.busyLocked(sp) {
			continue
		}
		if _, inPool := r.known[a.ID]; inPool {
			r.withdrawLocked(sp)
		}
		r.known[a.ID] = sp
		r.failedAt[a.Segment] = now
		ids = append(ids, a.ID)
	}
	r.mu.Unlock()
	if len(ids) == 0 {
		return false
	}
	res, ok := r.propose(ctx, &metadv1.Command{Op: &metadv1.Command_ArenaRetire{ArenaRetire: &metadv1.ArenaRetire{ArenaIds: ids}}})
	if !ok {
		r.lock()
		for _, id := range ids {
			delete(r.known, id) // still in the state: the next round takes its free spans in again
		}
		r.mu.Unlock()
		return false
	}
	r.m.idleRetires.Add(float64(res.Count))
	return res.Count > 0
}

// busyLocked reports whether a live reservation has a range inside arena a (mu held).
func (r *reservations) busyLocked(a arenaSpan) bool {
	for _, res := range r.byKey { // any order: a yes or no
		for _, e := range res.exts {
			if e.Segment == a.seg && e.Offset < a.offset+a.size && a.offset < e.Offset+e.Size {
				return true
			}
		}
	}
	return false
}

// keysOf lists, in byte order, the keys of the tenant that live reservations hold after after
// and that pass filter (nil = all; a cheap test, run under the reservations' lock): writes in
// progress a listing names, as it names PROCESSING objects.
func (r *reservations) keysOf(tenant, after string, filter func(string) bool) []string {
	r.lock()
	defer r.mu.Unlock()
	var out []string
	for rk := range r.byKey { // sorted below
		if rk.tenant == tenant && rk.key > after && (filter == nil || filter(rk.key)) {
			out = append(out, rk.key)
		}
	}
	slices.Sort(out)
	return out
}

// countOf is how many live reservations the tenant has.
func (r *reservations) countOf(tenant string) int {
	r.lock()
	defer r.mu.Unlock()
	n := 0
	for rk := range r.byKey {
		if rk.tenant == tenant {
			n++
		}
	}
	return n
}

// holdsGroup reports whether a live reservation holds a key of the tenant's explicit group: a
// member whose write is in progress.
func (r *reservations) holdsGroup(tenant string, group []byte) bool {
	r.lock()
	defer r.mu.Unlock()
	for rk, res := range r.byKey {
		if rk.tenant == tenant && string(res.group) == string(group) {
			return true
		}
	}
	return false
}

// lostPossible reports whether reservations may have been lost here: this node leads, and arenas
// of another term (an earlier one, or one a restored snapshot brought) are still held, or an
// online restore dropped reservations less than the fence ago.
func (r *reservations) lostPossible() bool {
	r.lock()
	term, dropped := r.term, r.droppedAt
	r.mu.Unlock()
	if term == 0 {
		return false
	}
	if !dropped.IsZero() && r.s.cfg.Now().Sub(dropped) < r.s.cfg.ArenaFence+r.s.b.LeaseDuration() {
		return true
	}
	for _, a := range r.s.state().Arenas().List() {
		if a.Term != term {
			return true
		}
	}
	return false
}

// startClassic marks keys whose PutStart, UpsertStart or BatchPutStart goes through the log, so
// that no reservation is made for them until it is decided; it returns the function that unmarks
// them. A key a live reservation holds is refused as the state refuses a key whose write is in
// progress: blocked returns the refusal for the reservation of the i-th key, or nil when that
// write is to be discarded (it is dropped, and the key marked). refused holds the refusals by
// index; the other keys are marked.
func (r *reservations) startClassic(tenant string, keys [][]byte, blocked func(i int, res *reservation, now int64) error) (refused map[int]error, done func()) {
	now := r.s.cfg.nowNano()
	r.lock()
	var marked []reserveKey
	for i, k := range keys {
		rk := reserveKey{tenant, string(k)}
		if res := r.byKey[rk]; res != nil {
			if err := blocked(i, res, now); err != nil {
				if refused == nil {
					refused = map[int]error{}
				}
				refused[i] = err
				continue
			}
			r.dropLocked(rk, res)
		}
		if r.inFlight != nil {
			r.inFlight[rk]++
			marked = append(marked, rk)
		}
	}
	r.mu.Unlock()
	return refused, func() {
		r.lock()
		for _, rk := range marked {
			if r.inFlight[rk]--; r.inFlight[rk] <= 0 {
				delete(r.inFlight, rk)
			}
		}
		r.mu.Unlock()
	}
}

// putBlocked is the verdict of a PutStart or BatchPutStart of keys on a reservation of its i-th
// key (startClassic), as the state's on a PROCESSING object: OBJECT_ALREADY_EXISTS, unless that
// write started more than discard ago and is not being committed (then it is discarded).
func putBlocked(tenant string, keys [][]byte, discard time.Duration) func(int, *reservation, int64) error {
	return func(i int, res *reservation, now int64) error {
		if res.committing || now-res.start <= int64(discard) {
			return inProgress(tenant, keys[i])
		}
		return nil
	}
}

// upsertBlocked is an UpsertStart's verdict on a reservation of its key (startClassic), as the
// state's on an object with a write in progress (store's upsertBlocked): OBJECT_ALREADY_EXISTS in
// another group (membership is fixed), else INVALID_WRITE, however old the write. An upsert does
// not pre-empt a write in progress: its writer may still be writing into the reserved ranges, and
// an upsert that took them over (same size) or freed them (another size) would let two writers,
// or a writer and a new object, share bytes.
func upsertBlocked(tenant string, key, group []byte) func(int, *reservation, int64) error {
	return func(_ int, res *reservation, _ int64) error {
		if string(res.group) != string(group) {
			return &Error{Err: &store.Error{Reason: store.ObjectAlreadyExists, Msg: fmt.Sprintf("object exists in group %q (a write is in progress)", res.group)},
				Tenant: tenant, Key: key}
		}
		return &Error{Err: &store.Error{Reason: store.InvalidWrite, Msg: "a write is already in progress"}, Tenant: tenant, Key: key}
	}
}
