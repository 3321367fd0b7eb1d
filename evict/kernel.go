package evict

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// Kind is the policy that started an eviction (SEMANTICS section 7).
type Kind uint8

const (
	KindMemory      Kind = 1 // MEMORY over its high watermark, or an allocation failed
	KindTenantQuota Kind = 2 // a PutStart over its tenant's quota
	KindNOF         Kind = 3 // NOF over its high watermark
	KindDisk        Kind = 4 // a shared root (DISK) over its high watermark
	KindDFS         Kind = 5 // DFS pools over their high watermark
)

// String returns the metric label of the kind.
func (k Kind) String() string {
	switch k {
	case KindMemory:
		return "memory"
	case KindTenantQuota:
		return "tenant_quota"
	case KindNOF:
		return "nof"
	case KindDisk:
		return "disk"
	case KindDFS:
		return "dfs"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

func (k Kind) proto() metadv1.EvictKind {
	switch k {
	case KindMemory:
		return metadv1.EvictKind_EVICT_KIND_MEMORY
	case KindTenantQuota:
		return metadv1.EvictKind_EVICT_KIND_TENANT_QUOTA
	case KindNOF:
		return metadv1.EvictKind_EVICT_KIND_NOF
	case KindDisk:
		return metadv1.EvictKind_EVICT_KIND_DISK
	case KindDFS:
		return metadv1.EvictKind_EVICT_KIND_DFS
	}
	return metadv1.EvictKind_EVICT_KIND_UNSPECIFIED
}

// skipReason is why the census or the revalidation passed an object over.
type skipReason uint8

const (
	skipLifecycle       skipReason = iota // creating or removing
	skipTenantClosed                      // its tenant is being unregistered, or was registered again
	skipMarked                            // marked for unlink by another eviction or a remove
	skipLeased                            // read lease (or the new leader's lease floor) not expired
	skipHardPinned                        // hard pin: never evicted
	skipSoftPinned                        // soft pin while allow_evict_soft_pinned is off
	skipProcessing                        // a replica of the tier is PROCESSING
	skipNoReplica                         // no COMPLETE replica of the tier
	skipGroupMember                       // evictable itself, but another member of its group is not
	skipChanged                           // its id or version moved between census and revalidation
	skipGroupChanged                      // its group gained or lost a member since the census
	skipReplicaTask                       // a copy or move is in progress (store.ReplicaTask)
	skipAwaitingOffload                   // offload on evict keeps it until it is on its owner's SSD
	numSkipReasons
)

var skipNames = [numSkipReasons]string{"lifecycle", "tenant_closed", "marked", "leased", "hard_pinned",
	"soft_pinned", "processing", "no_replica", "group_member", "changed", "group_changed", "replica_task",
	"awaiting_offload"}

func (r skipReason) String() string { return skipNames[r] }

// skips counts passed-over objects by reason; a round adds them to the metric once, off-lock.
type skips [numSkipReasons]uint64

// spec is one round of the kernel: which objects are candidates, what one unit weighs, and how much
// weight it should free.
type spec struct {
	kind   Kind
	tier   alloc.Tier
	tenant string // KindTenantQuota: only this tenant's objects (normalized name)
	// target is the weight to free: bytes of tier extents, or for KindTenantQuota bytes of quota
	// (size x MEMORY replicas).
	target uint64
	// lower: soft-pinned candidates are tried only when pass 1 freed less than this.
	lower     uint64
	allowSoft bool
	// detach: wait for each proposal's outcome even when ctx ends (a synchronous caller's request
	// context must not leave marks behind).
	detach bool
	// offload: offload on evict (Config.OffloadOnEvict) for a memory round with an offloading SSD
	// registration mounted: an object its owner would offload (store.Store.AwaitsOffload) is no
	// candidate; the round queues the offloads of the oldest of them instead (QueueOffload), and
	// evicts their redundant MEMORY replicas (trim).
	offload bool
	// redundant: the round's Evict commands drop only redundant MEMORY replicas
	// (store.Store.EvictRedundant): the spec of a round's trims.
	redundant bool
}

func (sp *spec) weight(st *store.ObjectState) uint64 {
	if sp.kind == KindTenantQuota {
		return st.MemoryBytes()
	}
	return tierBytes(st, sp.tier)
}

// offloadWeight is what an object awaiting offload weighs in the census's selection of them: what
// its trim frees now when it has several MEMORY replicas (one kept, the others of about its
// extent's size each; trimUnit weighs the chosen exactly), else what evicting it frees once it
// is offloaded.
func (sp *spec) offloadWeight(st *store.ObjectState) uint64 {
	n := uint64(0)
	for _, r := range st.Replicas {
		if r.Tier == alloc.TierMemory {
			n++
		}
	}
	if n < 2 {
		return sp.weight(st)
	}
	return sp.weight(st) / n * (n - 1)
}

// tierBytes is the extent bytes of st's replicas of the tier: what evicting them frees in segments.
func tierBytes(st *store.ObjectState, tier alloc.Tier) uint64 {
	var n uint64
	for _, r := range st.Replicas {
		if r.Tier == tier {
			n += r.Extent.Size
		}
	}
	return n
}

// member is one object of a unit as the census saw it: its handle, the immutable state it had, and
// its lease deadline then.
type member struct {
	h     store.ObjectHandle
	st    *store.ObjectState
	lease int64
}

func (m member) token() store.ObjectToken {
	return store.ObjectToken{Tenant: m.h.Tenant.Name(), Instance: m.h.Tenant.Instance(), Key: m.h.Key(),
		ObjectID: m.st.ID, Version: m.st.Version}
}

// unit is what eviction takes or leaves whole: a singleton object, or every member of an explicit
// group. Its rank is its lease (for a group the latest of its members': a group is as recently used
// as its most recently used member), then its tenant instance, then its id (see rank.cmp).
type unit struct {
	one     member   // a singleton's object
	members []member // a group's members in key order (nil for a singleton)
	group   *store.GroupEntry
	lease   int64  // lease deadline or last write time, unix ns (see store.ObjectHandle.LeaseDeadline)
	inst    uint64 // tenant instance id
	id      uint64 // object id of a singleton; group id | groupBit for a group
	weight  uint64 // what evicting it frees (see spec.target)
	bytes   uint64 // extent bytes of the tier it frees
	soft    bool   // soft-pinned (a group: any member): pass 2
}

// groupBit sets a group's ids apart from object ids in unit.id (the two counters overlap).
const groupBit = 1 << 63

func (u *unit) size() int {
	if u.group == nil {
		return 1
	}
	return len(u.members)
}

func (u *unit) tenant() *store.TenantState {
	if u.group == nil {
		return u.one.h.Tenant
	}
	return u.members[0].h.Tenant
}

// groupAcc gathers the census's view of one explicit group.
type groupAcc struct {
	members []member
	blocked bool
}

// check is the eviction predicate on one object's state, shared by the census (on lock-free reads)
// and the revalidation (under the object's lock).
func (sp *spec) check(st *store.ObjectState, now int64, leased, marked bool) (soft bool, why skipReason, ok bool) {
	if marked {
		return false, skipMarked, false
	}
	if leased {
		return false, skipLeased, false
	}
	if st.HardPin {
		return false, skipHardPinned, false
	}
	if st.Task != nil {
		return false, skipReplicaTask, false
	}
	complete := false
	for _, r := range st.Replicas {
		if r.Tier != sp.tier {
			continue
		}
		if r.Status == store.Processing {
			return false, skipProcessing, false
		}
		complete = true
	}
	if !complete {
		return false, skipNoReplica, false
	}
	soft = st.SoftPinned(now)
	if soft && !sp.allowSoft {
		return false, skipSoftPinned, false
	}
	return soft, 0, true
}

// census is steps 1 to 3: it reads every handle (of one tenant for KindTenantQuota) in chunks with
// no lock held, keeps the candidates, maps group members to their group (a group is a candidate
// only if every member is), and returns the units of pass 1 (unpinned) and pass 2 (soft-pinned),
// each oldest first and only as many as cover the target, and with sp.offload the tokens of the
// objects to offload first, oldest first, as many as would cover it, and the units of those that
// have MEMORY replicas besides the one their offload copies from (trim, weighing what dropping
// those frees; their own storage). The units of pass 1 and 2 live in storage the round gives back by
// calling release once it is done with them.
func (e *Evictor) census(s *store.Store, sp *spec, now int64, sk *skips) (pass1, pass2 []*unit, offload []store.ObjectToken, trim []*unit, release func()) {
	need := sp.target + sp.target/4 + 1 // spares for candidates that fail revalidation
	// A watermark round's selection is sized for about the handles the census will visit. A quota
	// round's need is a tenant's deficit, usually a few objects: its selection grows as it must.
	var objects int64
	if sp.kind != KindTenantQuota {
		objects = s.Totals().Objects
	}
	p1 := newSelection(need, e.cfg.RoundLimit, e.bufs.get(0), int(objects))
	p2 := newSelection(need, e.cfg.RoundLimit, e.bufs.get(1), 0) // soft-pinned objects are few
	p3 := newSelection(need, e.cfg.RoundLimit, new(selBuf), 0)   // objects to offload first (sp.offload)
	groups := map[*store.GroupEntry]*groupAcc{}
	floor := s.LeaseFloor()
	var sts []*store.ObjectState
	visit := func(hs []store.ObjectHandle) bool {
		sts = loadStates(hs, sts)
		for i, h := range hs {
			g := h.Entry.Group()
			st := sts[i]
			var why skipReason
			var m member
			ok, soft := false, false
			switch {
			case st == nil || h.Life() != store.Active:
				why = skipLifecycle
			case h.Tenant.Life() != store.TenantOpen:
				why = skipTenantClosed
			default:
				lease := h.LeaseDeadline()
				soft, why, ok = sp.check(st, now, now < max(lease, floor), h.Marked())
				if ok && sp.offload && s.AwaitsOffload(st) {
					// Its offload first: ranked as a singleton (a group waits for each member's).
					u := unit{one: member{h, st, lease}, lease: lease, inst: h.Tenant.Instance(), id: st.ID,
						weight: sp.offloadWeight(st), bytes: tierBytes(st, sp.tier)}
					p3.add(&u)
					ok, why = false, skipAwaitingOffload
				}
				if ok && g == nil {
					u := unit{one: member{h, st, lease}, lease: lease, inst: h.Tenant.Instance(), id: st.ID,
						weight: sp.weight(st), bytes: tierBytes(st, sp.tier), soft: soft}
					if soft {
						p2.add(&u)
					} else {
						p1.add(&u)
					}
					continue
				}
				if ok {
					m = member{h, st, lease}
				}
			}
			if g == nil {
				sk[why]++
				continue
			}
			acc := groups[g]
			if acc == nil {
				acc = &groupAcc{}
				groups[g] = acc
			}
			switch {
			case !ok:
				sk[why]++
				if !acc.blocked {
					sk[skipGroupMember] += uint64(len(acc.members))
					acc.blocked, acc.members = true, nil
				}
			case acc.blocked:
				sk[skipGroupMember]++
			default:
				acc.members = append(acc.members, m)
			}
		}
		return true // VisitHandles yields the processor between chunks
	}
	if sp.kind == KindTenantQuota {
		s.VisitTenantHandles(sp.tenant, e.cfg.CensusChunk, visit)
	} else {
		s.VisitHandles(e.cfg.CensusChunk, visit)
	}
	// The selection keeps the same units whatever order the groups arrive in, so map order does not
	// reach the selection.
	for g, acc := range groups {
		if acc.blocked {
			continue
		}
		u := unit{group: g, members: acc.members, inst: acc.members[0].h.Tenant.Instance(), id: g.ID() | groupBit}
		slices.SortFunc(u.members, func(a, b member) int { return strings.Compare(a.h.Key(), b.h.Key()) })
		for _, m := range u.members {
			u.lease = max(u.lease, m.lease)
			u.weight += sp.weight(m.st)
			u.bytes += tierBytes(m.st, sp.tier)
			u.soft = u.soft || m.st.SoftPinned(now)
		}
		if u.soft {
			p2.add(&u)
		} else {
			p1.add(&u)
		}
	}
	offloads := p3.sorted()
	toks := make([]store.ObjectToken, len(offloads))
	for i, u := range offloads {
		toks[i] = u.one.token()
		if c, ok := trimUnit(s, sp, u); ok {
			trim = append(trim, c)
		}
	}
	p3.release()
	return p1.sorted(), p2.sorted(), toks, trim, func() { e.bufs.put(0, p1.release()); e.bufs.put(1, p2.release()) }
}

// trimUnit returns a copy of u, an object awaiting offload, weighing what dropping its redundant
// MEMORY replicas frees (store.Store.RedundantBytes); false when it has none.
func trimUnit(s *store.Store, sp *spec, u *unit) (*unit, bool) {
	st := u.one.st
	bytes, n := s.RedundantBytes(u.one.h.Tenant, u.one.h.Key(), st)
	if n == 0 {
		return nil, false
	}
	c := *u
	c.bytes, c.weight = bytes, bytes
	if sp.kind == KindTenantQuota {
		c.weight = uint64(n) * st.Size
	}
	return &c, true
}

// loadStates returns the states of a chunk's handles (in buf's storage) with their memory already
// read. On a loaded store an entry and its state sit far apart and far from their neighbours, so
// reading them handle by handle waits for memory twice per object, one miss after the other: about
// two thirds of a census. Read here in passes over the chunk, loads that do not depend on each
// other, the misses overlap (a processor keeps several in flight).
func loadStates(hs []store.ObjectHandle, buf []*store.ObjectState) []*store.ObjectState {
	buf = buf[:0]
	for _, h := range hs {
		buf = append(buf, h.State())
	}
	var sink uint64
	for _, st := range buf {
		if st != nil && len(st.Replicas) > 0 {
			sink += uint64(st.SoftPinDeadline) + uint64(st.Replicas[len(st.Replicas)-1].Status)
		}
	}
	statesSink.Add(sink) // once per chunk
	return buf
}

// touchUnits reads the entries and states of units a batch is about to revalidate, with no lock
// held, for the reason loadStates does: since the census read them, a million other objects went
// through the cache, and revalidation takes each object's lock before it reads it, so each miss
// would wait for the one before it.
func touchUnits(units []*unit) {
	var sink uint64
	touch := func(m member) {
		if st := m.h.State(); st != nil {
			sink += st.Version
		}
	}
	for _, u := range units {
		if u.group == nil {
			touch(u.one)
			continue
		}
		for _, m := range u.members {
			touch(m)
		}
	}
	statesSink.Add(sink)
}

// statesSink keeps the reads of loadStates and touchUnits from being optimized away.
var statesSink atomic.Uint64

// revalidate is step 5 for one unit: under the group's lock and then its members' in key order (a
// singleton: its own lock), it checks that the unit is what the census saw (tenant instance, object
// ids, versions, the same members) and still evictable at now (lease, pins, lifecycle, PROCESSING,
// marks), and if so marks every member for unlink and appends their tokens and handles, in key
// order, to b.
func (e *Evictor) revalidate(s *store.Store, sp *spec, u *unit, now int64, sk *skips, b *marked) bool {
	t := u.tenant()
	if cur := s.Tenants().Lookup(t.Name()); cur != t || t.Life() != store.TenantOpen {
		sk[skipTenantClosed] += uint64(u.size())
		return false
	}
	pass2 := u.soft
	why := skipChanged
	checkOne := func(o *store.LockedObject, m member) bool {
		tok := o.Token()
		if tok.Key != m.h.Key() || tok.Instance != t.Instance() || tok.ObjectID != m.st.ID || tok.Version != m.st.Version {
			why = skipChanged
			return false
		}
		soft, r, ok := sp.check(o.State(), now, o.Leased(now), o.Marked())
		if !ok || (soft && !pass2) {
			why = r
			if ok {
				why = skipSoftPinned // pinned since the census: wait for pass 2 of a later round
			}
			return false
		}
		return true
	}
	ok := false
	if u.group == nil {
		err := s.WithHandle(u.one.h, func(o *store.LockedObject) error {
			if checkOne(o, u.one) {
				o.SetMark(true)
				b.add(o)
				ok = true
			}
			return nil
		})
		if err != nil {
			why = skipChanged
		}
	} else {
		err := s.WithGroup(t.Name(), u.group.Name(), func(os []*store.LockedObject) error {
			if len(os) != len(u.members) {
				why = skipGroupChanged
				return nil
			}
			for i, o := range os {
				if !checkOne(o, u.members[i]) {
					return nil
				}
			}
			for _, o := range os {
				o.SetMark(true)
				b.add(o)
			}
			ok = true
			return nil
		})
		if err != nil {
			why = skipGroupChanged
		}
	}
	if !ok {
		sk[why]++
		if n := u.size(); n > 1 {
			sk[skipGroupMember] += uint64(n - 1)
		}
		return false
	}
	return true
}

// marked is a batch's marked objects: their tokens (for the Evict command) and the entries that
// carry the marks (to clear them without looking the keys up again).
type marked struct {
	toks []store.ObjectToken
	hs   []store.ObjectHandle
}

func (b *marked) add(o *store.LockedObject) {
	b.toks = append(b.toks, o.Token())
	b.hs = append(b.hs, o.Handle())
}

func (b *marked) reset() { b.toks, b.hs = b.toks[:0], b.hs[:0] }

// clear clears the batch's marks.
func (b *marked) clear(s *store.Store) { s.ClearHandleMarks(b.hs, b.toks) }

// outcome is what a round did, in the spec's weight.
type outcome struct {
	freed     uint64 // weight freed (spec.target units)
	bytes     uint64 // extent bytes freed
	objects   int    // objects evicted
	units     int    // units evicted
	proposals int    // Evict commands proposed
	offloads  int    // objects with a live offload task after the round's QueueOffload (offload on evict)
}

// commit is steps 4 to 7 for a list of units, oldest first, until out.freed reaches goal: take a
// proposer slot before any lock (none free, or not leader: stop holding nothing), revalidate and
// mark a batch of units, propose one Evict with their tokens in units, clear the marks once the
// outcome is known (the evicted are gone, the rest must be readable again), and count.
func (e *Evictor) commit(ctx context.Context, s *store.Store, sp *spec, units []*unit, goal uint64, out *outcome, sk *skips) error {
	// A batch's lists, reused by the next batch once its proposal's outcome is known.
	var mk marked
	var sizes []uint32
	var batch []*unit
	for i := 0; i < len(units) && out.freed < goal; {
		if err := ctx.Err(); err != nil {
			return err
		}
		slot, ok := e.node.TryReserve()
		if !ok {
			if !e.node.IsLeader() {
				return ErrNotLeader
			}
			return ErrNoSlot
		}
		now := e.now()
		floor := s.LeaseFloor()
		mk.reset()
		sizes, batch = sizes[:0], batch[:0]
		var pending uint64
		touchUnits(units[i:min(len(units), i+e.cfg.BatchSize)])
		for i < len(units) && len(mk.toks) < e.cfg.BatchSize && out.freed+pending < goal {
			u := units[i]
			i++
			if i%revalidateYield == 0 {
				runtime.Gosched() // a batch of revalidations takes milliseconds; see store.VisitHandles
			}
			n0 := len(mk.toks)
			if !e.revalidate(s, sp, u, now, sk, &mk) {
				continue
			}
			sizes = append(sizes, uint32(len(mk.toks)-n0))
			batch = append(batch, u)
			pending += u.weight
		}
		if len(mk.toks) == 0 {
			slot.Release()
			continue
		}
		// A new term's ResetSoftState (lease floor raised, marks cleared) ran while this batch was
		// being marked: its marks may be gone and reads may lease these objects; drop the batch.
		if s.LeaseFloor() != floor {
			slot.Release()
			mk.clear(s)
			return ErrNotLeader
		}
		if e.beforePropose != nil {
			e.beforePropose(mk.toks)
		}
		cmd := &metadv1.Command{Op: &metadv1.Command_Evict{Evict: &metadv1.Evict{
			Columns: wire.ColumnsTo(mk.toks), Tier: wire.TierTo(sp.tier), Kind: sp.kind.proto(), UnitSizes: sizes, StateEpoch: s.Epoch(),
			Redundant: sp.redundant}}}
		pctx := ctx
		if sp.detach {
			pctx = context.WithoutCancel(ctx)
		}
		// The marks settle by the entry's outcome (ha.ProposeMarked): cleared once it is
		// known, kept while it is not (so no Get leases an object the entry may still evict),
		// and the next term's ResetSoftState drops them if it never becomes known here.
		res, err := ha.ProposeMarked(pctx, func(c context.Context) (store.Result, error) { return slot.Propose(c, cmd) },
			definite, func() { mk.clear(s) })
		out.proposals++
		e.m.attempts.WithLabelValues(sp.kind.String()).Add(float64(len(batch)))
		if err != nil {
			if !definite(err) {
				e.m.marksKept.Add(float64(len(mk.toks)))
				return fmt.Errorf("evict: propose %d objects, outcome unknown, marks kept until it is known: %w", len(mk.toks), err)
			}
			return fmt.Errorf("evict: propose %d objects: %w", len(mk.toks), err)
		}
		if res.Reason != store.OK || len(res.Units) != len(batch) {
			return fmt.Errorf("%w: %s: %s (%d results for %d units)", ErrRejected, res.Reason, res.Message, len(res.Units), len(batch))
		}
		for i, u := range batch {
			if res.Units[i] == store.OK {
				out.freed += u.weight
				out.bytes += u.bytes
				out.objects += u.size()
				out.units++
			} else {
				sk[skipChanged]++
			}
		}
	}
	return nil
}

// queueOffloads proposes QueueOffload for toks (the objects a round with offload on evict keeps
// until they are on an SSD) in batches of BatchSize, each on a slot taken without waiting, and
// counts the tasks live afterwards. Nothing is marked: the command only queues tasks.
func (e *Evictor) queueOffloads(ctx context.Context, s *store.Store, toks []store.ObjectToken, out *outcome) error {
	for len(toks) > 0 {
		n := min(len(toks), e.cfg.BatchSize)
		slot, ok := e.node.TryReserve()
		if !ok {
			if !e.node.IsLeader() {
				return ErrNotLeader
			}
			return ErrNoSlot
		}
		cmd := &metadv1.Command{Op: &metadv1.Command_QueueOffload{QueueOffload: &metadv1.QueueOffload{Tokens: tokensTo(toks[:n]), StateEpoch: s.Epoch()}}}
		res, err := slot.Propose(ctx, cmd)
		if err != nil {
			return fmt.Errorf("evict: propose QueueOffload of %d objects: %w", n, err)
		}
		if res.Reason != store.OK {
			return fmt.Errorf("%w: %s: %s", ErrRejected, res.Reason, res.Message)
		}
		out.offloads += res.Count
		e.m.offloads.Add(float64(res.Count))
		toks = toks[n:]
	}
	return nil
}

// revalidateYield is how many units commit revalidates between yields of the processor.
const revalidateYield = 256

// definite reports whether a failed proposal certainly never reached the log. A slot's proposal
// fails only as Raft does (Slot.Propose), so ha.NoEntry says it all.
func definite(err error) bool { return ha.NoEntry(err) }

func tokensTo(toks []store.ObjectToken) []*metadv1.ObjectToken {
	out := make([]*metadv1.ObjectToken, len(toks))
	for i, t := range toks {
		out[i] = wire.TokenTo(t)
	}
	return out
}

// round runs the kernel once: census and selection, pass 1 (unpinned) until the target, and pass 2
// (soft-pinned) when pass 1 freed less than the lower bound and soft-pinned eviction is allowed.
func (e *Evictor) round(ctx context.Context, s *store.Store, sp *spec) (outcome, error) {
	var out outcome
	var sk skips
	kind := sp.kind.String()
	defer func() {
		e.m.addSkips(&sk)
		e.m.successes.WithLabelValues(kind).Add(float64(out.units))
		e.m.keys.WithLabelValues(kind).Add(float64(out.objects))
		e.m.bytes.WithLabelValues(kind).Add(float64(out.bytes))
	}()
	start := time.Now()
	now := e.now()
	pass1, pass2, offload, trim, release := e.census(s, sp, now, &sk)
	defer release()
	e.m.census.WithLabelValues(kind).Observe(time.Since(start).Seconds())
	if e.afterCensus != nil {
		e.afterCensus(pass1, pass2)
	}
	if err := e.queueOffloads(ctx, s, offload, &out); err != nil {
		return out, err
	}
	if len(trim) > 0 {
		// The objects awaiting offload lose their redundant MEMORY replicas first, keeping the
		// one their offload copies from; pass 1 then covers what is left of the target.
		tsp := *sp
		tsp.redundant = true
		trimmed := out.objects
		if err := e.commit(ctx, s, &tsp, trim, sp.target, &out, &sk); err != nil {
			return out, err
		}
		e.m.trimmed.Add(float64(out.objects - trimmed))
	}
	if err := e.commit(ctx, s, sp, pass1, sp.target, &out, &sk); err != nil {
		return out, err
	}
	if out.freed < sp.lower && sp.allowSoft && len(pass2) > 0 {
		if err := e.commit(ctx, s, sp, pass2, sp.target, &out, &sk); err != nil {
			return out, err
		}
	}
	return out, nil
}
