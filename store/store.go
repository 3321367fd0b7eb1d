package store

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"metad/store/alloc"
)

// Config holds the store's local settings. None of them reaches the replicated state: settings that
// change the outcome of a replicated operation (discard timeout, placement strategy) travel in the
// operation's request, stamped by the leader.
type Config struct {
	// LeaseTTL is the read lease granted by Get and Exist (leader soft state). Default 10 s.
	LeaseTTL time.Duration
}

// DefaultConfig returns the defaults of SEMANTICS section 4.
func DefaultConfig() Config { return Config{LeaseTTL: 10 * time.Second} }

// Validate checks the config.
func (c Config) Validate() error {
	if c.LeaseTTL <= 0 {
		return fmt.Errorf("store: lease_ttl must be positive, got %s", c.LeaseTTL)
	}
	return nil
}

// DefaultDiscardAfter is put_discard_timeout: a PutStart on a key whose previous write has no COMPLETE
// replica and started longer ago than this discards that attempt.
const DefaultDiscardAfter = 30 * time.Second

// Store is the tenant-first metadata store: the Raft state machine's state and the read path's
// source. Safe for concurrent use. It reads no clock and draws no randomness: every operation that
// depends on time or chance takes `now` (unix ns, the leader's time) and a seed as arguments.
//
// Methods fall in two sets. Replicated operations (tenants, segments, PutStart/End/Revoke, upserts,
// EraseTokens, EraseGroup, RemoveObject) depend only on the replicated state and their arguments;
// the FSM calls them on every node. Leader operations (Get, Exist, Prepare*, ClearMarks,
// ResetSoftState and the Remove composites) read or write leader soft state: read leases and
// pending-unlink marks, which never reach the replicated state.
//
// Lock order, written once (see doc.go): registry shard writer < tenant gate < group < objects in key
// order. Route shard and catalog locks are leaves: held for one map access, nothing taken under
// them. The segment registry's lock (alloc.Registry) is never taken while an object or group lock is
// held.
type Store struct {
	cfg      Config
	tenants  *TenantRegistry
	segs     *alloc.Registry
	leaseTTL int64
	epoch    uint64 // replicated, fixed for the store's life: which restore made this state (0: none)

	nextInstance atomic.Uint64 // replicated: last tenant instance id handed out
	tasks        *TaskQueue    // replicated: the master-scheduled tasks (taskqueue.go)
	drains       *DrainTable   // replicated: the drain jobs (drain.go)
	arenas       *ArenaTable   // replicated: the allocation arenas (arena.go)
	quotaMu      sync.Mutex    // serializes effective-quota recomputation

	leaseFloor atomic.Int64 // soft: every object counts as leased until this time (new leader)
	// evictWanted (soft): 0, or 1 + the MEMORY tier's used bytes (alloc.Registry.Allocatable) when a
	// MEMORY placement last found no room that eviction could make: the memory eviction loop
	// should run, unless memory has been freed since.
	evictWanted atomic.Uint64
	waits       LockWaits  // sampled lock waits of the read path (metrics)
	sink        ChangeSink // told every change of an object's replicated state (change.go); nil: none
	tiers       tierTally  // objects by tier, kept as states change (tiercount.go)
}

// New returns an empty store with the tenant `default` registered (instance 1, no quota), as every
// new cluster has it.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := newEmpty(cfg, alloc.NewRegistry())
	if _, err := s.RegisterTenant(DefaultTenant, 0); err != nil {
		return nil, err
	}
	return s, nil
}

func newEmpty(cfg Config, segs *alloc.Registry) *Store {
	s := &Store{cfg: cfg, tenants: newTenantRegistry(), segs: segs, leaseTTL: int64(cfg.LeaseTTL), arenas: newArenaTable(segs)}
	s.tasks, s.drains = newTaskQueue(s), newDrainTable(s)
	return s
}

// Tenants returns the tenant registry.
func (s *Store) Tenants() *TenantRegistry { return s.tenants }

// Segments returns the segment registry (its own lock; never call it under an object lock).
func (s *Store) Segments() *alloc.Registry { return s.segs }

// Tasks returns the queue of master-scheduled tasks (taskqueue.go).
func (s *Store) Tasks() *TaskQueue { return s.tasks }

// Drains returns the table of drain jobs (drain.go).
func (s *Store) Drains() *DrainTable { return s.drains }

// Arenas returns the table of allocation arenas (arena.go).
func (s *Store) Arenas() *ArenaTable { return s.arenas }

// LeaseTTL returns the configured read lease.
func (s *Store) LeaseTTL() time.Duration { return s.cfg.LeaseTTL }

// Epoch returns the store's state epoch: 0 for a new cluster's state, and the epoch a snapshot
// restore wrote into its file for a restored one (each restore advances it). A store's epoch never
// changes: a restore builds a new store. The leader puts the epoch of the store it checked into
// every command it prepared (removals, eviction, the reaper), and apply refuses a command prepared
// against another epoch (STATE_REPLACED), so nothing checked against a replaced state commits.
func (s *Store) Epoch() uint64 { return s.epoch }

// NextInstance returns the last tenant instance id handed out (replicated counter).
func (s *Store) NextInstance() uint64 { return s.nextInstance.Load() }

// EvictionWanted reports and clears the flag raised when a placement found no room on the MEMORY
// tier for an object that some MEMORY segment is large enough to hold (so that freeing memory can
// help; an object larger than every segment raises nothing), with the tier's used bytes (as
// Segments().Allocatable counts them) when the last such placement failed: used bytes below that
// now mean memory was freed since, and the room the placement lacked may be there.
func (s *Store) EvictionWanted() (usedAt uint64, wanted bool) {
	v := s.evictWanted.Swap(0)
	if v == 0 {
		return 0, false
	}
	return v - 1, true
}

// writable looks up an open tenant for a write and takes its gate shared; the caller must call
// t.release() when it returns a tenant.
func (s *Store) writable(name string) (*TenantState, error) {
	t := s.tenants.Lookup(name)
	if t == nil {
		return nil, errf(TenantNotRegistered, "tenant %q is not registered", name)
	}
	if !t.admit() {
		t.release()
		return nil, errf(TenantNotRegistered, "tenant %q is being unregistered", name)
	}
	return t, nil
}

// CheckWritable reports whether a write to the tenant is refused: TENANT_NOT_REGISTERED unless it
// is registered and open (what every write checks first). It changes nothing.
func (s *Store) CheckWritable(tenant string) error {
	t, err := s.writable(NormalizeTenant(tenant))
	if err != nil {
		return err
	}
	t.release()
	return nil
}

// ---- tenants -------------------------------------------------------------------------------------

// RegisterTenant registers a tenant with a requested quota in bytes (0 = none) and returns its new
// instance id.
func (s *Store) RegisterTenant(name string, quota uint64) (uint64, error) {
	name = NormalizeTenant(name)
	if err := s.registrable(name); err != nil {
		return 0, err
	}
	t := &TenantState{name: name, instance: s.nextInstance.Add(1), dir: newGroupDirectory()}
	t.quota.requested.Store(quota)
	if !s.tenants.insert(t) {
		return 0, errf(TenantAlreadyExists, "tenant %q is already registered", name)
	}
	s.recomputeQuotas()
	return t.instance, nil
}

// registrable is RegisterTenant's verdict on the (normalized) name: INVALID_PARAMS for a bad name,
// TENANT_ALREADY_EXISTS for a taken one.
func (s *Store) registrable(name string) error {
	if err := ValidateTenant(name); err != nil {
		return err
	}
	if s.tenants.Lookup(name) != nil {
		return errf(TenantAlreadyExists, "tenant %q is already registered", name)
	}
	return nil
}

// CheckRegisterTenant reports whether the state refuses RegisterTenant(name): a bad name or a taken
// one. The leader refuses from it without a log entry; it changes nothing.
func (s *Store) CheckRegisterTenant(name string) error { return s.registrable(NormalizeTenant(name)) }

// UnregisterTenant tears a tenant down: it closes admission and waits for writes in flight (the gate),
// refuses with TENANT_NOT_EMPTY unless force or empty, erases every object and group, and unregisters
// that instance. It returns the number of objects erased.
func (s *Store) UnregisterTenant(name string, force bool) (int, error) {
	name = NormalizeTenant(name)
	t := s.tenants.Lookup(name)
	if t == nil {
		return 0, errf(TenantNotRegistered, "tenant %q is not registered", name)
	}
	t.gate.Lock()
	defer t.gate.Unlock()
	if err := unregistrable(t, force); err != nil {
		return 0, err
	}
	t.life.Store(uint32(TenantClosing))
	erased := 0
	t.dir.visit(t, nil, func(hs []ObjectHandle) bool {
		for _, h := range hs {
			if s.eraseEntry(t, h.Entry) {
				erased++
			}
		}
		return true
	})
	t.life.Store(uint32(TenantRemoved))
	s.tenants.removeIfMatch(t)
	s.recomputeQuotas()
	return erased, nil
}

// unregistrable is UnregisterTenant's verdict on the registered instance t (its gate held):
// TENANT_NOT_REGISTERED once it is being torn down, TENANT_NOT_EMPTY while it has objects unless
// force.
func unregistrable(t *TenantState, force bool) error {
	if t.Life() != TenantOpen {
		return errf(TenantNotRegistered, "tenant %q is not registered", t.name)
	}
	if n := t.dir.Objects(); n > 0 && !force {
		return errf(TenantNotEmpty, "tenant %q still has %d objects", t.name, n)
	}
	return nil
}

// CheckUnregisterTenant reports whether the state refuses UnregisterTenant(name, force): a tenant
// not registered, or one with objects without force. The leader refuses from it without a log
// entry; it changes nothing.
func (s *Store) CheckUnregisterTenant(name string, force bool) error {
	name = NormalizeTenant(name)
	t := s.tenants.Lookup(name)
	if t == nil {
		return errf(TenantNotRegistered, "tenant %q is not registered", name)
	}
	t.gate.RLock()
	defer t.gate.RUnlock()
	return unregistrable(t, force)
}

// SetQuota changes a tenant's requested quota (0 = none) and recomputes effective quotas.
func (s *Store) SetQuota(name string, quota uint64) error {
	t, err := s.quotaTarget(name)
	if err != nil {
		return err
	}
	t.quota.requested.Store(quota)
	s.recomputeQuotas()
	return nil
}

// quotaTarget is the tenant whose quota SetQuota(name) changes: TENANT_NOT_REGISTERED if none.
func (s *Store) quotaTarget(name string) (*TenantState, error) {
	name = NormalizeTenant(name)
	t := s.tenants.Lookup(name)
	if t == nil {
		return nil, errf(TenantNotRegistered, "tenant %q is not registered", name)
	}
	return t, nil
}

// CheckSetQuota reports whether the state refuses SetQuota(name, ...): a tenant not registered.
// The leader refuses from it without a log entry; it changes nothing.
func (s *Store) CheckSetQuota(name string) error {
	_, err := s.quotaTarget(name)
	return err
}

// recomputeQuotas derives every tenant's effective quota from the requests and the mounted MEMORY
// capacity (SEMANTICS section 6).
func (s *Store) recomputeQuotas() {
	s.quotaMu.Lock()
	defer s.quotaMu.Unlock()
	ts := s.tenants.List()
	reqs := make([]alloc.QuotaRequest, len(ts))
	for i, t := range ts {
		reqs[i] = alloc.QuotaRequest{Tenant: t.name, Requested: t.quota.requested.Load()}
	}
	eff := alloc.EffectiveQuotas(s.segs.Capacity(alloc.TierMemory), reqs)
	for i, t := range ts {
		t.quota.effective.Store(eff[i])
	}
}

// ---- segments ------------------------------------------------------------------------------------

// MountSegment mounts a segment for its owner client. Idempotent for the same id, owner and fields.
// The segment must meet SEMANTICS section 1 (alloc.ValidateSegment), and the tier's total capacity
// must not overflow: a refusal is INVALID_PARAMS (SEGMENT_OWNED_BY_OTHER_CLIENT for another
// client's id), with nothing changed.
func (s *Store) MountSegment(seg alloc.Segment) (created bool, err error) {
	created, err = s.segs.Mount(seg)
	return s.mounted(seg.ID, created, err)
}

// MountRecordedSegment is MountSegment for a segment that was mounted before the limits it may
// break existed (alloc.Registry.MountRecorded): the FSM replaying a log entry written then. The
// tier's capacity is still checked.
func (s *Store) MountRecordedSegment(seg alloc.Segment) (created bool, err error) {
	created, err = s.segs.MountRecorded(seg)
	return s.mounted(seg.ID, created, err)
}

// CheckMountSegment returns the rejection MountSegment(seg) would return now, changing nothing:
// the leader refuses a mount from its applied state without a log entry.
func (s *Store) CheckMountSegment(seg alloc.Segment) error {
	return mountErr(s.segs.CheckMount(seg))
}

// mounted ends a mount of segment id: the rejection, or the quotas it changes and its change.
func (s *Store) mounted(id alloc.ID, created bool, err error) (bool, error) {
	if err != nil {
		return false, mountErr(err)
	}
	if created {
		s.recomputeQuotas()
		if info, ok := s.segs.Get(id); ok {
			s.segmentChanged(info.Segment, false)
		}
	}
	return created, nil
}

// mountErr is the rejection of a refused mount.
func mountErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, alloc.ErrSegmentOwned):
		return errf(SegmentOwnedByOtherClient, "%v", err)
	}
	return errf(InvalidParams, "%v", err)
}

// UnmountResult says what an unmount dropped.
type UnmountResult struct {
	Segments int // segments unmounted
	Replicas int // replicas dropped
	Erased   int // objects erased because no replica was left
	// UnmountAt (CloseSegment): the leader time (unix ns) at which the segment, left mounted and
	// closing, will be unmounted; 0 when it was unmounted at once.
	UnmountAt int64
}

// UnmountSegment unmounts one segment: its replicas are dropped at once, an object left with no
// replica is erased, quota is released and effective quotas are recomputed.
func (s *Store) UnmountSegment(id alloc.ID) (UnmountResult, error) {
	seg, err := s.segs.Unmount(id)
	if err != nil {
		return UnmountResult{}, errf(SegmentNotFound, "segment %s is not mounted", id)
	}
	s.segmentChanged(seg, true)
	gone := map[alloc.ID]struct{}{id: {}}
	s.arenas.dropOn(gone)
	r := s.dropReplicasOn(gone)
	r.Segments = 1
	s.recomputeQuotas()
	return r, nil
}

// CheckUnmount reports whether the state refuses the unmount of the client's segments ids (all of
// them when ids is empty, which is never refused): SEGMENT_NOT_FOUND for an id not mounted,
// SEGMENT_OWNED_BY_OTHER_CLIENT for one another client owns, for the first such id. The replicated
// unmount checks every id with it before it unmounts any, and the leader refuses from it without a
// log entry; it changes nothing.
func (s *Store) CheckUnmount(client alloc.ID, ids []alloc.ID) error {
	for _, id := range ids {
		info, ok := s.segs.Get(id)
		if !ok {
			return errf(SegmentNotFound, "segment %s is not mounted", id)
		}
		if info.Owner != client {
			return errf(SegmentOwnedByOtherClient, "segment %s is owned by client %s", id, info.Owner)
		}
	}
	return nil
}

// CloseSegment starts the graceful unmount of the client's segment id (the owner's call, with
// CheckUnmount's refusals): a segment that holds no replica is unmounted at once, as
// UnmountSegment does; any other stops taking allocations now (alloc.Registry.ScheduleUnmount),
// keeps its replicas readable, and is unmounted by UnmountClosed once the leader time passes at
// (unix ns, > 0). A segment closing already keeps the earlier of its deadline and at. The result
// says which: Segments 1, or UnmountAt the deadline in force.
func (s *Store) CloseSegment(client, id alloc.ID, at int64) (UnmountResult, error) {
	if err := s.CheckUnmount(client, []alloc.ID{id}); err != nil {
		return UnmountResult{}, err
	}
	if at <= 0 {
		return UnmountResult{}, errf(InvalidParams, "segment %s: unmount time %d not positive", id, at)
	}
	s.arenas.retireOn(id)
	if info, _ := s.segs.Get(id); info.Used == 0 {
		return s.UnmountSegment(id)
	}
	eff, err := s.segs.ScheduleUnmount(id, at)
	if err != nil {
		return UnmountResult{}, errf(SegmentNotFound, "segment %s is not mounted", id)
	}
	return UnmountResult{UnmountAt: eff}, nil
}

// UnmountClosed ends the graceful unmount of segment id scheduled for at: it unmounts the segment,
// as UnmountSegment does (its replicas dropped, objects left with none erased), when the segment
// is still scheduled for exactly at and either now (the leader time of the entry) has reached at
// or it holds no replica any more. Otherwise it changes nothing and returns the zero result: the
// segment was unmounted meanwhile (and perhaps mounted again), or its deadline moved.
func (s *Store) UnmountClosed(id alloc.ID, at, now int64) UnmountResult {
	info, ok := s.segs.Get(id)
	if !ok || at <= 0 || info.UnmountAt != at || (now < at && info.Used != 0) {
		return UnmountResult{}
	}
	r, err := s.UnmountSegment(id)
	if err != nil {
		return UnmountResult{}
	}
	return r
}

// UnmountClient unmounts every segment the client owns (its explicit unmount of all of them), or
// with expired (the client's expiry) every one but the Shared ones (DISK roots, DFS pools): their
// replicas are the cluster's files, intact whatever became of the client that mounted them.
func (s *Store) UnmountClient(client alloc.ID, expired bool) UnmountResult {
	ids := s.segs.SegmentsOf(client)
	gone := make(map[alloc.ID]struct{}, len(ids))
	for _, id := range ids {
		if info, ok := s.segs.Get(id); expired && ok && info.Tier.Shared() {
			continue
		}
		if seg, err := s.segs.Unmount(id); err == nil {
			gone[id] = struct{}{}
			s.segmentChanged(seg, true)
		}
	}
	if len(gone) == 0 {
		return UnmountResult{}
	}
	s.arenas.dropOn(gone)
	r := s.dropReplicasOn(gone)
	r.Segments = len(gone)
	s.recomputeQuotas()
	return r
}

// dropReplicasOn removes, from every object, the replicas that live on the given (already unmounted)
// segments; a copy or move that loses its source or a target ends, its other targets dropped too. The outcome does not depend on visiting order: each object is changed on its own.
func (s *Store) dropReplicasOn(gone map[alloc.ID]struct{}) UnmountResult {
	var r UnmountResult
	on := func(rep Replica) bool { _, ok := gone[rep.Extent.Segment]; return ok }
	s.VisitHandles(0, func(hs []ObjectHandle) bool {
		for _, h := range hs {
			st := h.State()
			if st == nil || !anyReplica(st, on) {
				continue
			}
			t, e := h.Tenant, h.Entry
			e.mu.Lock()
			st = e.State()
			if e.Life() != Active {
				e.mu.Unlock()
				continue
			}
			if !anyReplica(st, func(rep Replica) bool { return !on(rep) }) {
				// Every replica was on the gone segments (a worker's unmount): the object goes, and
				// its task with it, without a next state.
				r.Replicas += len(st.Replicas)
				e.setLifeLocked(Removing)
				e.mu.Unlock()
				s.finishErase(t, e, st, nil)
				r.Erased++
				continue
			}
			ns, dropped := st.nextKeeping(func(rep Replica) bool { return !on(rep) })
			if task := st.Task; task != nil && slices.ContainsFunc(dropped, func(rep Replica) bool {
				return rep.ID == task.Source || task.IsTarget(rep.ID)
			}) {
				// The task lost its source or a target: it ends, and its remaining targets go.
				ns.Task = nil
				kept := ns.Replicas[:0]
				for _, rep := range ns.Replicas {
					if task.IsTarget(rep.ID) {
						dropped = append(dropped, rep)
					} else {
						kept = append(kept, rep)
					}
				}
				ns.Replicas = kept
			}
			r.Replicas += len(dropped)
			if len(ns.Replicas) == 0 {
				e.setLifeLocked(Removing)
				e.mu.Unlock()
				s.finishErase(t, e, st, nil)
				r.Erased++
				continue
			}
			s.setStateLocked(t, e, ns)
			e.mu.Unlock()
			s.freeReplicas(t, dropped, st.Size, nil)
		}
		return true
	})
	return r
}

func anyReplica(st *ObjectState, pred func(Replica) bool) bool {
	for _, r := range st.Replicas {
		if pred(r) {
			return true
		}
	}
	return false
}

// ---- erase ---------------------------------------------------------------------------------------

// eraseEntry erases e if it is active. It reports whether this call erased it. The caller holds no
// group or object lock.
func (s *Store) eraseEntry(t *TenantState, e *ObjectEntry) bool {
	e.mu.Lock()
	if e.Life() != Active {
		e.mu.Unlock()
		return false
	}
	st := e.State()
	e.setLifeLocked(Removing)
	e.mu.Unlock()
	s.finishErase(t, e, st, nil)
	return true
}

// finishErase completes an erase after e was marked removing and its lock released: leave the group
// (dropping it when empty), then unlinkErased. The caller holds no group or object lock.
func (s *Store) finishErase(t *TenantState, e *ObjectEntry, st *ObjectState, fr *[]alloc.Extent) {
	if g := e.group; g != nil {
		g.mu.Lock()
		if g.removeMemberLocked(e) && g.life == groupActive {
			s.dropGroupLocked(t, g)
		}
		g.mu.Unlock()
	}
	s.unlinkErased(t, e, st, fr)
}

// unlinkErased unlinks the route of an erased entry if it still points at it, then frees its extents
// (see freeReplicas for fr) and quota. The entry has already left its group.
func (s *Store) unlinkErased(t *TenantState, e *ObjectEntry, st *ObjectState, fr *[]alloc.Extent) {
	t.dir.EraseIfMatch(e.key, e)
	t.dir.objects.Add(-1)
	s.erased(t, e, st)
	s.freeReplicas(t, st.Replicas, st.Size, fr)
}

// freeReplicas returns replicas' extents to their segments and their memory charge to the tenant.
// With fr the extents are appended to it instead, for its owner to free together with others
// (freeCollected) before its command's apply ends. A segment already unmounted has nothing to
// free; any other allocator error means the replicated state is broken.
func (s *Store) freeReplicas(t *TenantState, reps []Replica, size uint64, fr *[]alloc.Extent) {
	var mem uint64
	for _, r := range reps {
		if r.Tier == alloc.TierMemory {
			mem += size
		}
		if fr != nil {
			*fr = append(*fr, r.Extent)
			continue
		}
		if err := s.segs.FreeIfMounted(r.Extent); err != nil {
			panic(fmt.Sprintf("store: tenant %q: free of replica %d extent %+v: %v", t.name, r.ID, r.Extent, err))
		}
	}
	if mem > 0 {
		t.quota.Release(mem)
	}
}

// freeCollected frees the extents freeReplicas collected for t's objects (alloc.Registry.FreeMany:
// a run of neighbours is one allocator update) and empties the list.
func (s *Store) freeCollected(t *TenantState, fr *[]alloc.Extent) {
	if len(*fr) == 0 {
		return
	}
	if err := s.segs.FreeMany(*fr); err != nil {
		panic(fmt.Sprintf("store: tenant %q: free of evicted extents: %v", t.name, err))
	}
	*fr = (*fr)[:0]
}

// create publishes a new entry for key with state st, joining the explicit group if groupName is not
// empty. It returns false, changing nothing, when a live entry already holds the key. Order: group
// (get or create, lock), then the new object's lock, then the route (a leaf) inserted in creating
// state; readers that find it block on the object lock and see it active.
func (s *Store) create(t *TenantState, key, groupName string, st *ObjectState) bool {
	d := t.dir
	var g *GroupEntry
	if groupName != "" {
		for {
			g, _ = d.groupGetOrCreate(groupName)
			g.mu.Lock()
			if g.life == groupActive {
				break
			}
			g.mu.Unlock()
		}
	}
	e := &ObjectEntry{key: key, group: g}
	e.state.Store(st)
	e.mu.Lock()
	if !d.publish(e) {
		e.setLifeLocked(Removing)
		e.mu.Unlock()
		if g != nil {
			if len(g.members) == 0 {
				d.dropGroupLocked(g)
			}
			g.mu.Unlock()
		}
		return false
	}
	d.objects.Add(1)
	if g != nil {
		g.members = append(g.members, e)
		g.gen.Add(1)
		if len(g.members) == 1 {
			s.groupJoined(t, g)
		}
	}
	s.created(t, e, st)
	e.setLifeLocked(Active)
	e.mu.Unlock()
	if g != nil {
		g.mu.Unlock()
	}
	return true
}

// ---- census --------------------------------------------------------------------------------------

// DefaultCensusChunk is the number of handles VisitHandles hands to its callback at once: a chunk
// of the eviction census costs a few hundred microseconds.
const DefaultCensusChunk = 256

// VisitHandles is the census: it copies the handles of every tenant's objects, one route shard at a
// time under that shard's read lock (no other lock), and hands them to fn in chunks of at most chunk
// (0 = DefaultCensusChunk), tenants in id order. fn runs with no lock held and may lock objects; it
// returns false to stop. Objects created or erased during the census may or may not be seen.
//
// It yields the processor after every chunk: a census of a million objects takes one for a second
// or more, and goroutines woken meanwhile (Raft's heartbeats, reads, apply) would otherwise wait in
// its run queue until the runtime preempts it, 10 ms at a time. Scheduling only: what fn sees does
// not depend on it.
func (s *Store) VisitHandles(chunk int, fn func([]ObjectHandle) bool) {
	var buf []ObjectHandle
	for _, t := range s.tenants.List() {
		var ok bool
		buf, ok = t.dir.visit(t, buf, chunked(chunk, fn))
		if !ok {
			return
		}
	}
}

// chunked hands a shard's handles to fn in chunks of at most chunk (0 = DefaultCensusChunk),
// yielding the processor after each.
func chunked(chunk int, fn func([]ObjectHandle) bool) func([]ObjectHandle) bool {
	if chunk <= 0 {
		chunk = DefaultCensusChunk
	}
	return func(hs []ObjectHandle) bool {
		for len(hs) > 0 {
			n := min(chunk, len(hs))
			if !fn(hs[:n:n]) {
				return false
			}
			hs = hs[n:]
			runtime.Gosched()
		}
		return true
	}
}
