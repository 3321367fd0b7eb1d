package store

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"

	"metad/store/alloc"
)

// Allocation arenas: the replicated half of a PutStart without a log entry.
//
// An arena is a span of one segment granted to the leader of a term through the log
// (ArenaTable.Grant; the table is reached as Store.Arenas()). Its bytes are allocated in the segment's allocator, so no replicated placement (UpsertStart, a
// copy or move, a PutStart through the log) can take them; the leader carves new objects' replicas
// from its own term's arenas in its soft state and answers the PutStart at once. The write's one
// replicated command, PutCommit (CommitPuts), names the exact ranges: apply takes them from the
// arenas' free spans (an arena's allocator here) and hands them to the new object, whose extents
// they are from then on; freeing the object returns them to the segment, not to the arena.
// ArenaTable.Retire returns an arena's unused bytes to its segment. An arena on a segment that
// closes (graceful unmount, drain) is retired at once, and one on a segment that is unmounted is
// dropped with it. CommitPuts is a method of the Store, not of the table: it creates objects.
//
// Apply never asks which leader or term carved a range: a range is committed once, by whichever
// PutCommit names it first while it is free in an arena. The safety of a range across a leader
// change (no old writer still writing into bytes a new object gets) is the leader's rule: it
// carves only from its own term's arenas and retires an older term's only after the fence
// (docs/design.md, "Allocation arenas").

// Arena is one allocation arena as the state holds it (a copy: changing it changes nothing).
type Arena struct {
	ID      uint64
	Term    uint64       // the term of the leader it was granted to
	Segment alloc.ID     // its segment
	Tier    alloc.Tier   // its segment's tier
	Offset  uint64       // the granted span
	Size    uint64       //
	Free    []alloc.Span // the spans no object took yet, by offset
}

// FreeBytes sums the arena's free spans.
func (a *Arena) FreeBytes() uint64 {
	var n uint64
	for _, s := range a.Free {
		n += s.Size
	}
	return n
}

// ArenaSpec asks ArenaTable.Grant for one arena.
type ArenaSpec struct {
	Segment alloc.ID
	Size    uint64 // a positive multiple of alloc.Align
}

// arena is an Arena held by ArenaTable; its fields are guarded by ArenaTable.mu.
type arena struct {
	id, term     uint64
	seg          alloc.ID
	tier         alloc.Tier
	offset, size uint64
	// free holds the arena's unused bytes: an allocator over [0, offset+size) whose free spans lie
	// inside the arena's span ([0, offset) is reserved when the arena is made).
	free *alloc.RangeAllocator
}

func (a *arena) end() uint64 { return a.offset + a.size }

func (a *arena) export() Arena {
	return Arena{ID: a.id, Term: a.term, Segment: a.seg, Tier: a.tier, Offset: a.offset, Size: a.size, Free: a.free.FreeSpans()}
}

// ArenaTable holds the arenas. Concurrency contract: mu guards every field but segs; it is a leaf
// lock like the allocator's, and ordered before it: a method may call alloc.Registry with mu held,
// never the other way round, and never with a tenant, group or object lock held (a commit takes its
// ranges before it locks the key's entry). segs, fixed at construction, is the store's segment
// registry, in which the arenas' bytes are allocated.
type ArenaTable struct {
	segs  *alloc.Registry
	mu    sync.Mutex
	last  uint64                // replicated: the id the last arena got
	byID  map[uint64]*arena     // lookups only: nothing iterates it into a result
	bySeg map[alloc.ID][]*arena // each segment's arenas by offset
}

func newArenaTable(segs *alloc.Registry) *ArenaTable {
	return &ArenaTable{segs: segs, byID: map[uint64]*arena{}, bySeg: map[alloc.ID][]*arena{}}
}

func (t *ArenaTable) addLocked(a *arena) {
	t.byID[a.id] = a
	list := t.bySeg[a.seg]
	i, _ := slices.BinarySearchFunc(list, a.offset, func(x *arena, off uint64) int { return cmp.Compare(x.offset, off) })
	t.bySeg[a.seg] = slices.Insert(list, i, a)
}

func (t *ArenaTable) removeLocked(a *arena) {
	delete(t.byID, a.id)
	list := slices.DeleteFunc(t.bySeg[a.seg], func(x *arena) bool { return x == a })
	if len(list) == 0 {
		delete(t.bySeg, a.seg)
	} else {
		t.bySeg[a.seg] = list
	}
}

func newArena(id, term uint64, tier alloc.Tier, e alloc.Extent) *arena {
	free := alloc.NewRangeAllocator(e.Offset + e.Size)
	if e.Offset > 0 {
		if err := free.Reserve(0, e.Offset); err != nil {
			panic(fmt.Sprintf("store: arena %d: %v", id, err))
		}
	}
	return &arena{id: id, term: term, seg: e.Segment, tier: tier, offset: e.Offset, size: e.Size, free: free}
}

// Grant grants one arena per spec to the leader of term, in spec order, each allocated best
// fit in its segment (alloc.Registry.AllocIn). A spec whose segment is not mounted, is closing or
// is of a tier that takes no arena (ArenaTier), whose size is 0 or not a multiple of alloc.Align,
// or whose segment has no free span that large, or that names a segment an earlier spec of the
// call named, is skipped. It returns the arenas
// granted. Deterministic: the outcome depends on the state and the arguments alone.
func (t *ArenaTable) Grant(term uint64, specs []ArenaSpec) []Arena {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Arena
	seen := make(map[alloc.ID]struct{}, len(specs))
	for _, sp := range specs {
		if _, dup := seen[sp.Segment]; dup || sp.Size == 0 || sp.Size%alloc.Align != 0 {
			continue
		}
		seen[sp.Segment] = struct{}{}
		info, ok := t.segs.Get(sp.Segment)
		if !ok || !ArenaTier(info.Tier) {
			continue
		}
		e, err := t.segs.AllocIn(sp.Segment, sp.Size)
		if err != nil {
			continue
		}
		t.last++
		a := newArena(t.last, term, info.Tier, e)
		t.addLocked(a)
		out = append(out, a.export())
	}
	return out
}

// ArenaTier reports whether arenas are granted on segments of tier t: the tiers a put places in
// (alloc.Tier.Placeable, and DISK). A LOCAL_DISK registration is its owner's SSD: only offload
// reports place into it.
func ArenaTier(t alloc.Tier) bool { return t.Placeable() || t == alloc.TierDisk }

// Retire returns the free spans of the named arenas to their segments and forgets the arenas; an
// id not held is skipped. It returns how many it retired.
func (t *ArenaTable) Retire(ids []uint64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, id := range ids {
		if a, ok := t.byID[id]; ok {
			t.retireLocked(a)
			n++
		}
	}
	return n
}

// retireLocked frees a's unused bytes in its segment and forgets it (t.mu held).
func (t *ArenaTable) retireLocked(a *arena) {
	spans := a.free.FreeSpans()
	es := make([]alloc.Extent, len(spans))
	for i, sp := range spans {
		es[i] = alloc.Extent{Segment: a.seg, Offset: sp.Offset, Size: sp.Size}
	}
	if err := t.segs.FreeMany(es); err != nil {
		panic(fmt.Sprintf("store: retire arena %d: %v", a.id, err))
	}
	t.removeLocked(a)
}

// retireOn retires every arena of a segment that stops taking allocations.
func (t *ArenaTable) retireOn(seg alloc.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range slices.Clone(t.bySeg[seg]) {
		t.retireLocked(a)
	}
}

// dropOn forgets the arenas of segments already unmounted (their bytes went with them).
func (t *ArenaTable) dropOn(gone map[alloc.ID]struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for seg := range gone { // each segment's arenas are dropped on their own: order does not matter
		for _, a := range slices.Clone(t.bySeg[seg]) {
			t.removeLocked(a)
		}
	}
}

// List returns every arena, by id.
func (t *ArenaTable) List() []Arena {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Arena, 0, len(t.byID))
	for _, a := range t.byID {
		out = append(out, a.export())
	}
	slices.SortFunc(out, func(a, b Arena) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Last returns the id the last arena got.
func (t *ArenaTable) Last() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// FreeBytes returns the bytes of the tier's segments that arenas hold and no object took yet:
// allocated in the segments' allocators (alloc.Registry.Used counts them) but free for the
// leader's reservations.
func (t *ArenaTable) FreeBytes(tier alloc.Tier) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var n uint64
	for _, a := range t.byID {
		if a.tier == tier {
			n += a.free.FreeBytes()
		}
	}
	return n
}

// errRangeTaken is why takeRangesLocked refused a range.
var errRangeTaken = errors.New("range not free in any arena")

// arenaPiece is part of an extent taken from one arena.
type arenaPiece struct {
	a         *arena
	off, size uint64
}

// takeRangesLocked takes each extent from the free spans of the arenas that hold it (an extent may
// straddle arenas), all or none: the pieces taken, or errRangeTaken when some byte of some extent
// is free in no arena, and then nothing changes (t.mu held). Arenas' spans may overlap (a byte an
// object of one arena took and gave back to its segment may lie in a later arena's span), but
// their free spans never do: every free byte of an arena is allocated to it in the segment.
func (t *ArenaTable) takeRangesLocked(es []alloc.Extent) ([]arenaPiece, error) {
	var taken []arenaPiece
	for _, e := range es {
		end := e.Offset + e.Size
		if e.Size == 0 || e.Offset%alloc.Align != 0 || e.Size%alloc.Align != 0 || end < e.Offset {
			t.giveBackLocked(taken)
			return nil, errRangeTaken
		}
		var pieces []arenaPiece
		var covered uint64
		for _, a := range t.bySeg[e.Segment] {
			if a.end() <= e.Offset || a.offset >= end {
				continue
			}
			for _, sp := range a.free.FreeWithin(e.Offset, end) {
				pieces = append(pieces, arenaPiece{a, sp.Offset, sp.Size})
				covered += sp.Size
			}
		}
		if covered != e.Size { // free spans are disjoint, so the sum says whether they cover e
			t.giveBackLocked(taken)
			return nil, errRangeTaken
		}
		for _, p := range pieces {
			if err := p.a.free.Reserve(p.off, p.size); err != nil {
				panic(fmt.Sprintf("store: arena %d: take of a free span: %v", p.a.id, err))
			}
			taken = append(taken, p)
		}
	}
	return taken, nil
}

// giveBackLocked returns pieces that takeRangesLocked took to their arenas (t.mu held).
func (t *ArenaTable) giveBackLocked(pieces []arenaPiece) {
	for _, p := range pieces {
		if err := p.a.free.Free(p.off, p.size); err != nil {
			panic(fmt.Sprintf("store: arena %d: give back: %v", p.a.id, err))
		}
	}
}

// ---- PutCommit -----------------------------------------------------------------------------------

// CommitReplica is one range of a committed object.
type CommitReplica struct {
	Tier   alloc.Tier
	Extent alloc.Extent // Size: the allocated size, alloc.RoundUp of the object's size
}

// CommitItem is one object of a CommitPuts call.
type CommitItem struct {
	Key      string
	Group    string
	Size     uint64
	Config   ReplicaConfig // pins and data type as the PutStart gave them; the counts are not used
	Replicas []CommitReplica
	PutStart int64 // leader time of the PutStart the reservation answered
}

// CommitRequest is a PutCommit: objects of one tenant and writer, the replicas of Tier (0: all)
// COMPLETE and the others PROCESSING.
type CommitRequest struct {
	Tenant string
	Client alloc.ID
	Tier   alloc.Tier
	Items  []CommitItem
}

// CommitPuts creates each item's object from the ranges its leader reserved in its arenas, at the
// leader time now, and returns one error per item (nil: created, or a repeat of the same commit).
// An item with no replicas ends a write the state holds instead, as PutEnd of its key and the
// request's tier does (PutEnd's refusals).
// An item is refused, changing nothing, with INVALID_PARAMS (malformed), TENANT_NOT_REGISTERED
// (every item, when the tenant takes no writes), RESERVATION_LOST (a range not free in an arena:
// retired, dropped with its segment, or taken by another commit), OBJECT_ALREADY_EXISTS (the key
// holds another object) or TENANT_QUOTA_EXCEEDED (the quota was lowered since the reservation).
func (s *Store) CommitPuts(now int64, req CommitRequest) []error {
	out := make([]error, len(req.Items))
	req.Tenant = NormalizeTenant(req.Tenant)
	fail := func(err error) []error {
		for i := range out {
			out[i] = err
		}
		return out
	}
	if err := ValidateTenant(req.Tenant); err != nil {
		return fail(err)
	}
	if err := ValidateClient(req.Client); err != nil {
		return fail(err)
	}
	if req.Tier != 0 && !req.Tier.Valid() {
		return fail(errf(InvalidParams, "tier: unknown %d", req.Tier))
	}
	t, err := s.writable(req.Tenant)
	if err != nil {
		return fail(err)
	}
	defer t.release()
	for i := range req.Items {
		if it := &req.Items[i]; len(it.Replicas) == 0 {
			out[i] = s.putEnd(now, t, &PutEndRequest{Tenant: req.Tenant, Client: req.Client, Key: it.Key, Tier: req.Tier})
		} else {
			out[i] = s.commitOne(now, t, &req, it)
		}
	}
	return out
}

func (it *CommitItem) validate() error {
	if err := ValidateKey(it.Key); err != nil {
		return err
	}
	if err := ValidateGroup(it.Group); err != nil {
		return err
	}
	if err := ValidateSize(it.Size); err != nil {
		return err
	}
	const most = MaxMemReplicas + MaxNOFReplicas + MaxDFSReplicas + 1 // + the DISK one
	if len(it.Replicas) == 0 || len(it.Replicas) > most {
		return errf(InvalidParams, "replicas: %d not in 1..%d", len(it.Replicas), most)
	}
	mem := 0
	segs := make(map[alloc.ID]struct{}, len(it.Replicas))
	for _, r := range it.Replicas {
		if !r.Tier.Valid() || r.Tier == alloc.TierLocalDisk || r.Extent.Size != alloc.RoundUp(it.Size) {
			return errf(InvalidParams, "replicas: tier %d, size %d for an object of %d bytes", r.Tier, r.Extent.Size, it.Size)
		}
		if _, dup := segs[r.Extent.Segment]; dup {
			return errf(InvalidParams, "replicas: segment %s named twice", r.Extent.Segment)
		}
		segs[r.Extent.Segment] = struct{}{}
		if r.Tier == alloc.TierMemory {
			mem++
		}
	}
	if mem == 0 {
		return errf(InvalidParams, "replicas: no MEMORY replica")
	}
	return nil
}

// commitOne is CommitPuts for one item with t's gate held.
func (s *Store) commitOne(now int64, t *TenantState, req *CommitRequest, it *CommitItem) error {
	if err := it.validate(); err != nil {
		return err
	}
	if e := t.dir.lookup(it.Key); e != nil {
		e.mu.Lock()
		var st *ObjectState
		if e.Life() == Active {
			st = e.State()
		}
		e.mu.Unlock()
		if st != nil {
			if st.Writer == req.Client && sameExtents(st.Replicas, it.Replicas) {
				return nil // a repeat of this commit
			}
			return objErr(ObjectAlreadyExists, t.name, it.Key, "object already exists")
		}
	}
	es := make([]alloc.Extent, len(it.Replicas))
	mem := uint64(0)
	for i, r := range it.Replicas {
		es[i] = r.Extent
		if info, ok := s.segs.Describe(r.Extent.Segment); !ok || info.Tier != r.Tier {
			return objErr(ReservationLost, t.name, it.Key, "segment "+r.Extent.Segment.String()+" of a reserved range is gone")
		}
		if r.Tier == alloc.TierMemory {
			mem += it.Size
		}
	}
	a := s.arenas
	a.mu.Lock()
	pieces, err := a.takeRangesLocked(es)
	a.mu.Unlock()
	if err != nil {
		return objErr(ReservationLost, t.name, it.Key, "the write's reserved ranges are no longer held for it (a leader change or an unmount): place it again")
	}
	giveBack := func() {
		a.mu.Lock()
		a.giveBackLocked(pieces)
		a.mu.Unlock()
	}
	if !t.quota.TryCharge(mem) {
		giveBack()
		return objErr(TenantQuotaExceeded, t.name, it.Key, quotaMsg(t, mem))
	}
	st := newState(len(it.Replicas))
	st.Size, st.DataType, st.HardPin = it.Size, it.Config.DataType, it.Config.HardPin
	completes := false
	for _, r := range it.Replicas {
		status := Processing
		if req.Tier == 0 || r.Tier == req.Tier {
			status, completes = Complete, true
		}
		st.Replicas = append(st.Replicas, Replica{ID: t.dir.nextReplicaID.Add(1), Extent: r.Extent, Tier: r.Tier, Status: status})
	}
	if it.Config.SoftPin == SoftPinEnable {
		ttl := int64(it.Config.SoftPinTTL)
		if ttl <= 0 {
			ttl = int64(DefaultSoftPin)
		}
		if completes {
			st.SoftPinDeadline = now + ttl
		} else {
			st.SoftPinTTL = ttl
		}
	}
	st.ID = t.dir.nextObjectID.Add(1)
	st.Version = 1
	st.Writer = req.Client
	st.PutStart = it.PutStart
	if !s.create(t, it.Key, it.Group, st) {
		t.quota.Release(mem)
		giveBack()
		return objErr(ObjectAlreadyExists, t.name, it.Key, "object already exists")
	}
	if completes {
		if e := t.dir.lookup(it.Key); e != nil {
			e.mu.Lock()
			if e.State() == st {
				e.stampWriteLocked(now)
				s.queueOffload(now, t, it.Key, st)
			}
			e.mu.Unlock()
		}
	}
	return nil
}

// sameExtents reports whether an object's replicas are exactly the ranges of a commit (any order).
func sameExtents(reps []Replica, crs []CommitReplica) bool {
	if len(reps) != len(crs) {
		return false
	}
	for _, c := range crs {
		if !slices.ContainsFunc(reps, func(r Replica) bool { return r.Extent == c.Extent && r.Tier == c.Tier }) {
			return false
		}
	}
	return true
}

// ---- snapshots ---------------------------------------------------------------------------------

// Restore installs the arenas of a snapshot into a store being built, and the arena id
// counter: each arena's free spans are reserved in its segment's allocator (the rest of its span
// belongs to objects, or went back to the segment with one; spans of arenas may overlap, their
// free spans may not). An arena on a segment not mounted, with free spans outside its span or
// overlapping an object's extent or another arena's free span, or an id above last or repeated is
// refused, as a corrupt snapshot.
func (t *ArenaTable) Restore(arenas []Arena, last uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, x := range arenas {
		if x.ID == 0 || x.ID > last {
			return fmt.Errorf("arena %d: id not in 1..%d", x.ID, last)
		}
		if _, dup := t.byID[x.ID]; dup {
			return fmt.Errorf("arena %d: repeated", x.ID)
		}
		info, ok := t.segs.Get(x.Segment)
		if !ok || info.Tier != x.Tier && x.Tier != 0 {
			return fmt.Errorf("arena %d: segment %s not mounted (or of another tier)", x.ID, x.Segment)
		}
		if x.Size == 0 || x.Offset+x.Size < x.Offset || x.Offset+x.Size > info.Size {
			return fmt.Errorf("arena %d: span [%d,+%d) not inside segment %s", x.ID, x.Offset, x.Size, x.Segment)
		}
		a := newArena(x.ID, x.Term, info.Tier, alloc.Extent{Segment: x.Segment, Offset: x.Offset, Size: x.Size})
		// The arena's allocator starts all free; reserve what objects took (the gaps between its
		// free spans), then reserve its free spans in the segment.
		at := x.Offset
		spans := append(slices.Clone(x.Free), alloc.Span{Offset: x.Offset + x.Size}) // and a sentinel at its end
		for i, sp := range spans {
			if (sp.Size == 0) != (i == len(spans)-1) || sp.Offset < at || sp.Offset > x.Offset+x.Size || sp.Offset+sp.Size > x.Offset+x.Size {
				return fmt.Errorf("arena %d: free span [%d,+%d) out of order or outside its span", x.ID, sp.Offset, sp.Size)
			}
			if sp.Offset > at {
				if err := a.free.Reserve(at, sp.Offset-at); err != nil {
					return fmt.Errorf("arena %d: %v", x.ID, err)
				}
			}
			at = sp.Offset + sp.Size
			if sp.Size == 0 {
				continue
			}
			if err := t.segs.Reserve(alloc.Extent{Segment: x.Segment, Offset: sp.Offset, Size: sp.Size}); err != nil {
				return fmt.Errorf("arena %d: free span [%d,+%d): %v", x.ID, sp.Offset, sp.Size, err)
			}
		}
		t.addLocked(a)
	}
	t.last = last
	return nil
}

// Holds reports whether the tenant's key routes to an object (any state): a PutStart of the key
// is then the state's to decide, through the log.
func (s *Store) Holds(tenant, key string) bool {
	t := s.tenants.Lookup(NormalizeTenant(tenant))
	return t != nil && t.dir.lookup(key) != nil
}
