package store

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"metad/store/alloc"
)

// The replicated halves of eviction and of the reaper. The leader selects and revalidates with its
// soft state (leases, marks) and proposes tokens; every node then applies these, which check only
// replicated facts, so all nodes unlink exactly the same objects.

// EvictUnits evicts units all or nothing: a unit is one singleton's token, or the tokens of every
// member of one explicit group. A unit is evicted only if each of its tokens is still that exact
// state (tenant instance, object id, version), is not hard-pinned, has a replica of the tier and no
// PROCESSING replica of it, and, for a group, the unit's tokens name exactly the group's members
// (no member joined or left since the leader checked them). Then the tier's replicas of every
// member are dropped and a member left with no replica is erased; otherwise nothing of the unit
// changes and every token of it gets an error naming why.
//
// A group unit takes the group's lock, then its members' locks in key order (the store's lock order),
// checks all, changes all, and releases quota after unlocking. The extents of a run of one tenant's
// units are freed together at the run's end (alloc.Registry.FreeMany: objects allocated together
// and evicted together are one allocator update, not one per object); nothing else allocates on
// this node while a command applies, and the free space that results is the same as freeing each at
// once. The outcome depends only on the replicated state and the arguments. It returns one error
// per token, units flattened in order (nil = evicted), and the bytes of extents freed.
func (s *Store) EvictUnits(units [][]ObjectToken, tier alloc.Tier) ([]error, uint64) {
	return s.evictUnits(units, tier, false)
}

// EvictRedundant is EvictUnits for offload on evict (TIERS.md: memory eviction "pins one memory
// replica, queues an offload task, and evicts only the redundant replicas"): of every object of a
// unit it drops the MEMORY replicas but the one its offload copies from (offloadKeep), and never
// erases an object. Each unit is one token, a group member's too (no object of the group goes
// away, so the group needs no all-or-nothing). A unit is refused, as by EvictUnits, for a changed token, a hard pin, a
// replica task or a PROCESSING MEMORY replica, and also when one of its objects awaits no offload
// any more (it is on an SSD, or no owner of its memory replicas offloads: plain eviction takes
// it) or has no MEMORY replica besides the kept one.
func (s *Store) EvictRedundant(units [][]ObjectToken) ([]error, uint64) {
	return s.evictUnits(units, alloc.TierMemory, true)
}

// evictUnits is EvictUnits, or with redundant EvictRedundant.
func (s *Store) evictUnits(units [][]ObjectToken, tier alloc.Tier, redundant bool) ([]error, uint64) {
	n := 0
	for _, u := range units {
		n += len(u)
	}
	errs := make([]error, n)
	var freed uint64
	b := evictScratches.Get().(*evictScratch)
	defer b.put()
	off := 0
	for lo := 0; lo < len(units); {
		if len(units[lo]) == 0 {
			lo++
			continue
		}
		// A run of units of one tenant: admitted once, their first keys looked up together.
		hi := lo + 1
		for hi < len(units) && hi-lo < lookupManyMax && len(units[hi]) > 0 && units[hi][0].Tenant == units[lo][0].Tenant {
			hi++
		}
		run := units[lo:hi]
		t, err := s.writable(run[0][0].Tenant)
		if err != nil {
			for _, u := range run {
				for i := range u {
					errs[off+i] = err
				}
				off += len(u)
			}
			lo = hi
			continue
		}
		ents := b.lookup(t, run)
		for i, u := range run {
			freed += s.evictUnit(t, ents[i], u, tier, redundant, errs[off:off+len(u)], &b.frees)
			off += len(u)
			if i%yieldEvery == yieldEvery-1 {
				// A large eviction holds a processor for a millisecond or more; let the node's
				// latency-critical goroutines (heartbeats, reads) in between. Scheduling only: the
				// outcome does not depend on it.
				runtime.Gosched()
			}
		}
		s.freeCollected(t, &b.frees)
		t.release()
		lo = hi
	}
	return errs, freed
}

// yieldEvery is how many eviction units EvictUnits applies between yields of the processor.
const yieldEvery = 64

// evictScratch is EvictUnits' storage for one run's lookups, kept between calls (evictScratches):
// an Evict of 2048 tokens would otherwise allocate about 50 KB of it on every member.
type evictScratch struct {
	keys   []string
	ents   []*ObjectEntry
	shards []uint8
	frees  []alloc.Extent // the run's released extents, freed together at its end (freeCollected)
}

var evictScratches = sync.Pool{New: func() any { return new(evictScratch) }}

// put drops the scratch's references (keys of the command, entries) and returns it to the pool.
func (b *evictScratch) put() {
	clear(b.keys[:cap(b.keys)])
	clear(b.ents[:cap(b.ents)])
	evictScratches.Put(b)
}

// lookup returns the entries under the first keys of run's units (nil: none), with each entry and
// its state already read, so that the misses of a large store overlap instead of coming one at a
// time under the object locks (see GroupDirectory.lookupMany).
func (b *evictScratch) lookup(t *TenantState, run [][]ObjectToken) []*ObjectEntry {
	b.keys = b.keys[:0]
	for _, u := range run {
		b.keys = append(b.keys, u[0].Key)
	}
	b.ents = slices.Grow(b.ents[:0], len(run))[:len(run)]
	b.shards = slices.Grow(b.shards[:0], len(run))[:len(run)]
	t.dir.lookupMany(b.keys, b.ents, b.shards)
	var sink uint64
	for _, e := range b.ents {
		if e != nil {
			if st := e.State(); st != nil {
				sink += st.Version
			}
		}
	}
	lookupSink.Add(sink)
	return b.ents
}

// lookupSink keeps evictScratch.lookup's reads from being optimized away.
var lookupSink atomic.Uint64

// evictUnit applies one unit, found under its first key as e (nil: no entry), with t admitted, and
// fills errs (len(errs) == len(u) > 0). The extents it releases go to fr (see freeReplicas).
func (s *Store) evictUnit(t *TenantState, e *ObjectEntry, u []ObjectToken, tier alloc.Tier, redundant bool, errs []error, fr *[]alloc.Extent) uint64 {
	fail := func(err error) uint64 {
		for i := range errs {
			errs[i] = err
		}
		return 0
	}
	first := u[0]
	for _, tok := range u[1:] {
		if tok.Tenant != first.Tenant || tok.Instance != first.Instance {
			return fail(objErr(InvalidParams, tok.Tenant, tok.Key, "the tokens of one eviction unit name different tenants"))
		}
	}
	if t.instance != first.Instance {
		return fail(objErr(ObjectNotFound, t.name, first.Key, "tenant instance changed"))
	}
	if e == nil {
		return fail(objErr(ObjectNotFound, t.name, first.Key, "object not found"))
	}
	if redundant {
		// Dropping replicas leaves every object readable: a group member goes alone.
		if len(u) != 1 {
			return fail(objErr(InvalidParams, t.name, first.Key, "a redundant-replica eviction takes one object per unit"))
		}
		var n uint64
		n, errs[0] = s.evictEntry(t, e, first, alloc.TierMemory, true, fr)
		return n
	}
	if e.group == nil {
		if len(u) != 1 {
			return fail(objErr(InvalidParams, t.name, first.Key, "an eviction unit of several tokens must be one explicit group"))
		}
		var n uint64
		n, errs[0] = s.evictEntry(t, e, first, tier, false, fr)
		return n
	}
	return s.evictGroupUnit(t, e.group, u, tier, errs, fr)
}

// evictGroupUnit evicts the tokens of g's members all or nothing (see EvictUnits).
func (s *Store) evictGroupUnit(t *TenantState, g *GroupEntry, u []ObjectToken, tier alloc.Tier, errs []error, fr *[]alloc.Extent) uint64 {
	toks := slices.Clone(u)
	slices.SortFunc(toks, func(a, b ObjectToken) int { return compareKeys(a.Key, b.Key) })
	refuse := func(err *Error) uint64 {
		for i, tok := range u {
			errs[i] = objErr(err.Reason, t.name, tok.Key, "group "+quote(g.name)+" is evicted whole or not at all: "+err.Msg)
		}
		return 0
	}
	g.mu.Lock()
	if g.life != groupActive {
		g.mu.Unlock()
		return refuse(objErr(ObjectNotFound, t.name, toks[0].Key, "group removed since it was selected"))
	}
	ms := g.sortedMembersLocked()
	lockAll(ms)
	live := make([]*ObjectEntry, 0, len(ms))
	for _, m := range ms {
		if m.Life() == Active {
			live = append(live, m)
		}
	}
	type change struct {
		e       *ObjectEntry
		st, ns  *ObjectState // ns nil: erase
		dropped []Replica
	}
	plan := make([]change, len(live))
	var freed uint64
	var bad *Error
	if len(live) != len(toks) {
		bad = objErr(ObjectNotFound, t.name, toks[0].Key, "the group's members changed since it was selected")
	}
	for i := 0; bad == nil && i < len(live); i++ {
		m, tok := live[i], toks[i]
		st := m.State()
		if m.key != tok.Key || st.ID != tok.ObjectID || st.Version != tok.Version {
			bad = objErr(ObjectNotFound, t.name, tok.Key, "object changed since it was selected")
			break
		}
		ns, dropped, n, err := s.evictPlan(t, m.key, st, tier, false)
		if err != nil {
			bad = err
			break
		}
		plan[i] = change{e: m, st: st, ns: ns, dropped: dropped}
		freed += n
	}
	if bad != nil {
		unlockAll(ms)
		g.mu.Unlock()
		return refuse(bad)
	}
	for _, c := range plan {
		if c.ns == nil {
			c.e.setLifeLocked(Removing)
			g.removeMemberLocked(c.e)
		} else {
			s.setStateLocked(t, c.e, c.ns)
		}
	}
	unlockAll(ms)
	if len(g.members) == 0 {
		s.dropGroupLocked(t, g)
	}
	g.mu.Unlock()
	for _, c := range plan {
		if c.ns == nil {
			s.unlinkErased(t, c.e, c.st, fr)
		} else {
			s.freeReplicas(t, c.dropped, c.st.Size, fr)
		}
	}
	return freed
}

// evictPlan computes the eviction of st's replicas of the tier: the new state and the dropped
// replicas, or a nil state when no replica would be left and the object is to be erased (the caller
// then frees all of st's replicas); and the extent bytes freed. Refused for a hard pin, a
// PROCESSING replica of the tier, or no replica of the tier. An erase allocates nothing. With
// redundant (EvictRedundant) it drops st's MEMORY replicas but the one offloadKeep names.
func (s *Store) evictPlan(t *TenantState, key string, st *ObjectState, tier alloc.Tier, redundant bool) (*ObjectState, []Replica, uint64, *Error) {
	if st.HardPin {
		return nil, nil, 0, objErr(InvalidWrite, t.name, key, "object is hard-pinned")
	}
	if st.Task != nil {
		return nil, nil, 0, objErr(ObjectHasReplicationTask, t.name, key, "a "+st.Task.Kind.String()+" task is in progress")
	}
	if redundant {
		return s.redundantPlan(t, key, st)
	}
	var freed uint64
	kept, dropped := 0, 0
	for _, r := range st.Replicas {
		switch {
		case r.Tier != tier:
			kept++
		case r.Status == Processing:
			return nil, nil, 0, objErr(ReplicaIsNotReady, t.name, key, "a replica of the tier is PROCESSING")
		default:
			dropped++
			freed += r.Extent.Size
		}
	}
	if dropped == 0 {
		return nil, nil, 0, objErr(ObjectNotFound, t.name, key, "no replica of the tier")
	}
	if kept == 0 {
		return nil, nil, freed, nil
	}
	ns, drop := st.nextKeeping(func(r Replica) bool { return r.Tier != tier })
	return ns, drop, freed, nil
}

// redundantPlan is evictPlan for EvictRedundant: the state that keeps, of st's MEMORY replicas,
// only the one offloadKeep names, the dropped replicas and their extent bytes; never an erase.
func (s *Store) redundantPlan(t *TenantState, key string, st *ObjectState) (*ObjectState, []Replica, uint64, *Error) {
	keep, ok := s.offloadKeep(t, key, st)
	if !ok {
		return nil, nil, 0, objErr(ObjectNotFound, t.name, key, "no memory replica awaits offload")
	}
	var freed uint64
	dropped := 0
	for _, r := range st.Replicas {
		if r.Tier != alloc.TierMemory || r.ID == keep {
			continue
		}
		if r.Status == Processing {
			return nil, nil, 0, objErr(ReplicaIsNotReady, t.name, key, "a replica of the tier is PROCESSING")
		}
		dropped++
		freed += r.Extent.Size
	}
	if dropped == 0 {
		return nil, nil, 0, objErr(ObjectNotFound, t.name, key, "no memory replica besides the one its offload copies from")
	}
	ns, drop := st.nextKeeping(func(r Replica) bool { return r.Tier != alloc.TierMemory || r.ID == keep })
	return ns, drop, freed, nil
}

// EvictTokens evicts each token's object if it is still that exact state (tenant instance, object
// id, version), is not hard-pinned and has no PROCESSING replica of the tier: its COMPLETE replicas
// of the tier are dropped, and the object is erased when none remain. A token whose object moved is
// skipped (its error says why). Each token stands alone: a group member is evicted without its
// group (EvictUnits keeps groups whole). It returns one error per token (nil = evicted) and the
// bytes freed.
func (s *Store) EvictTokens(tokens []ObjectToken, tier alloc.Tier) ([]error, uint64) {
	errs := make([]error, len(tokens))
	var freed uint64
	for i, tok := range tokens {
		t, err := s.writable(tok.Tenant)
		if err != nil {
			errs[i] = err
			continue
		}
		var n uint64
		n, errs[i] = s.evictOne(t, tok, tier)
		freed += n
		t.release()
	}
	return errs, freed
}

// evictOne evicts one token's object on its own (t's gate held).
func (s *Store) evictOne(t *TenantState, tok ObjectToken, tier alloc.Tier) (uint64, error) {
	if t.instance != tok.Instance {
		return 0, objErr(ObjectNotFound, t.name, tok.Key, "tenant instance changed")
	}
	e := t.dir.lookup(tok.Key)
	if e == nil {
		return 0, objErr(ObjectNotFound, t.name, tok.Key, "object not found")
	}
	return s.evictEntry(t, e, tok, tier, false, nil)
}

// evictEntry is evictOne on the entry found under tok.Key (t's gate held, tenant instance checked):
// a route lookup misses the cache on a large store, and apply has already paid for one.
func (s *Store) evictEntry(t *TenantState, e *ObjectEntry, tok ObjectToken, tier alloc.Tier, redundant bool, fr *[]alloc.Extent) (uint64, error) {
	e.mu.Lock()
	st := e.State()
	if e.Life() != Active || st.ID != tok.ObjectID || st.Version != tok.Version {
		e.mu.Unlock()
		return 0, objErr(ObjectNotFound, t.name, tok.Key, "object changed since it was selected")
	}
	ns, dropped, freed, err := s.evictPlan(t, tok.Key, st, tier, redundant)
	if err != nil {
		e.mu.Unlock()
		return 0, err
	}
	if ns == nil {
		e.setLifeLocked(Removing)
		e.mu.Unlock()
		s.finishErase(t, e, st, fr)
		return freed, nil
	}
	s.setStateLocked(t, e, ns)
	e.mu.Unlock()
	s.freeReplicas(t, dropped, st.Size, fr)
	return freed, nil
}

// RevokeTokens revokes, for each token whose object is still that exact state, every PROCESSING
// replica (the reaper of writes and replica tasks PROCESSING longer than put_release_timeout): a
// write's replicas, the object erased when nothing is left, or a copy's or move's targets, with
// the task. One error per token, nil = revoked.
func (s *Store) RevokeTokens(tokens []ObjectToken) []error {
	errs := make([]error, len(tokens))
	for i, tok := range tokens {
		t, err := s.writable(tok.Tenant)
		if err != nil {
			errs[i] = err
			continue
		}
		errs[i] = s.revokeOne(t, tok)
		t.release()
	}
	return errs
}

func (s *Store) revokeOne(t *TenantState, tok ObjectToken) error {
	if t.instance != tok.Instance {
		return objErr(ObjectNotFound, t.name, tok.Key, "tenant instance changed")
	}
	e := t.dir.lookup(tok.Key)
	if e == nil {
		return objErr(ObjectNotFound, t.name, tok.Key, "object not found")
	}
	e.mu.Lock()
	st := e.State()
	if e.Life() != Active || st.ID != tok.ObjectID || st.Version != tok.Version {
		e.mu.Unlock()
		return objErr(ObjectNotFound, t.name, tok.Key, "object changed since it was selected")
	}
	if st.Task != nil {
		s.dropTaskLocked(t, e, st) // a task is revoked as RevokeReplicaTask would
		return nil
	}
	return s.revokeLocked(t, e, st, 0)
}
