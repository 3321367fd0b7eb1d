package store

import (
	"errors"
	"math"
	"time"

	"metad/store/alloc"
)

// SoftPinAction is the soft pin requested at PutStart.
type SoftPinAction uint8

const (
	SoftPinNone SoftPinAction = iota
	SoftPinEnable
	SoftPinDisable
)

// ReplicaConfig is how many replicas of each tier a put wants, where, and how the object is pinned.
type ReplicaConfig struct {
	Memory     int        // MEMORY replicas, 1..8
	NOF        int        // NOF replicas, 0..8
	DFS        int        // DFS replicas, 0..8
	Preferred  []alloc.ID // segments to try first, in order
	SoftPin    SoftPinAction
	SoftPinTTL time.Duration // with SoftPinEnable: 0 < ttl <= 24 h (0 = 30 min)
	HardPin    bool
	DataType   uint32
}

// PutStartRequest starts a write (or, through UpsertStart, an overwrite). Strategy and DiscardAfter
// are cluster settings the leader stamps into the command, so every replica decides alike.
type PutStartRequest struct {
	Tenant       string
	Client       alloc.ID
	Key          string
	Group        string // empty: a singleton
	Size         uint64
	Config       ReplicaConfig
	Strategy     alloc.Strategy
	DiscardAfter time.Duration // 0 = DefaultDiscardAfter
}

// PutEndRequest completes (PutEnd) or revokes (PutRevoke) a write, for one tier or all (Tier 0).
type PutEndRequest struct {
	Tenant string
	Client alloc.ID
	Key    string
	Tier   alloc.Tier
}

func (r *PutStartRequest) validate() error {
	r.Tenant = NormalizeTenant(r.Tenant)
	if err := ValidateTenant(r.Tenant); err != nil {
		return err
	}
	if err := ValidateClient(r.Client); err != nil {
		return err
	}
	if err := ValidateKey(r.Key); err != nil {
		return err
	}
	if err := ValidateGroup(r.Group); err != nil {
		return err
	}
	if err := ValidateSize(r.Size); err != nil {
		return err
	}
	if r.DiscardAfter < 0 {
		return errf(InvalidParams, "discard_after: negative")
	}
	if r.DiscardAfter == 0 {
		r.DiscardAfter = DefaultDiscardAfter
	}
	return r.Config.Validate()
}

func (r *PutEndRequest) validate() error {
	r.Tenant = NormalizeTenant(r.Tenant)
	if err := ValidateTenant(r.Tenant); err != nil {
		return err
	}
	if err := ValidateClient(r.Client); err != nil {
		return err
	}
	if err := ValidateKey(r.Key); err != nil {
		return err
	}
	if r.Tier != 0 && (!r.Tier.Valid() || r.Tier == alloc.TierLocalDisk) {
		return errf(InvalidParams, "tier: unknown %d", r.Tier)
	}
	return nil
}

// PutStart validates, charges quota, allocates the replicas as PROCESSING and returns them. A key that
// is present is OBJECT_ALREADY_EXISTS unless its previous write has no COMPLETE replica and started
// more than DiscardAfter before now: that attempt is then discarded and the put proceeds.
func (s *Store) PutStart(now int64, seed uint64, req PutStartRequest) ([]Replica, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	t, err := s.writable(req.Tenant)
	if err != nil {
		return nil, err
	}
	defer t.release()
	return s.putStart(now, seed, t, &req)
}

// putStart is PutStart on a validated request with t's gate held.
func (s *Store) putStart(now int64, seed uint64, t *TenantState, req *PutStartRequest) ([]Replica, error) {
	if e := t.dir.lookup(req.Key); e != nil {
		if err := s.discardStale(now, t, e, req); err != nil {
			return nil, err
		}
	}
	st, err := s.allocate(t, seed, req)
	if err != nil {
		return nil, err
	}
	st.ID = t.dir.nextObjectID.Add(1)
	st.Version = 1
	st.Writer = req.Client
	st.PutStart = now
	if !s.create(t, req.Key, req.Group, st) {
		s.freeReplicas(t, st.Replicas, st.Size, nil)
		return nil, objErr(ObjectAlreadyExists, t.name, req.Key, "object already exists")
	}
	return st.Replicas, nil
}

// discardStale checks an existing entry for a PutStart: a live object is OBJECT_ALREADY_EXISTS unless
// its write is stale, in which case it is erased here.
func (s *Store) discardStale(now int64, t *TenantState, e *ObjectEntry, req *PutStartRequest) error {
	e.mu.Lock()
	if e.Life() != Active {
		e.mu.Unlock()
		return nil
	}
	st := e.State()
	if err := putBlocked(now, t, st, req); err != nil {
		e.mu.Unlock()
		return err
	}
	e.setLifeLocked(Removing)
	e.mu.Unlock()
	s.finishErase(t, e, st, nil)
	return nil
}

// putBlocked is PutStart's verdict on the live object st that holds its key, at time now:
// OBJECT_ALREADY_EXISTS unless the object's write has no COMPLETE replica and started more than
// DiscardAfter before now (the put then discards that attempt).
func putBlocked(now int64, t *TenantState, st *ObjectState, req *PutStartRequest) error {
	if st.HasComplete() || now-st.PutStart <= int64(req.DiscardAfter) {
		return objErr(ObjectAlreadyExists, t.name, req.Key, "object already exists")
	}
	return nil
}

// anyTime is the time at which the Check* methods ask PutStart's question: the latest possible,
// since a write in progress becomes discardable with time, so that a check never refuses a put
// that the mere passing of time would let through.
const anyTime = math.MaxInt64

// CheckPutStart reports whether the state refuses req (PutStart), at any later time as far as the
// passing of time goes (anyTime): an invalid request, a tenant not registered, or a key held by
// an object with a COMPLETE replica. nil means it may succeed; only apply decides (quota, space, a
// write that becomes discardable). The leader refuses from it without a log entry; it changes
// nothing.
func (s *Store) CheckPutStart(req PutStartRequest) error {
	return s.checkStart(&req, func(t *TenantState) error { return s.checkPutStart(t, &req) })
}

// checkStart runs check for a PutStart or UpsertStart request: validated first, then with its
// tenant's gate held (a tenant that takes no writes refuses it).
func (s *Store) checkStart(req *PutStartRequest, check func(*TenantState) error) error {
	if err := req.validate(); err != nil {
		return err
	}
	t, err := s.writable(req.Tenant)
	if err != nil {
		return err
	}
	defer t.release()
	return check(t)
}

// checkPutStart is CheckPutStart on a validated request with t's gate held.
func (s *Store) checkPutStart(t *TenantState, req *PutStartRequest) error {
	e := t.dir.lookup(req.Key)
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.Life() != Active {
		return nil
	}
	return putBlocked(anyTime, t, e.State(), req)
}

// allocate charges the tenant's quota and places the replicas; on failure nothing is left charged
// or allocated. It returns a state with Size, pins and PROCESSING replicas filled in.
func (s *Store) allocate(t *TenantState, seed uint64, req *PutStartRequest) (*ObjectState, error) {
	c := &req.Config
	want := uint64(c.Memory) * req.Size
	if !t.quota.TryCharge(want) {
		return nil, objErr(TenantQuotaExceeded, t.name, req.Key, quotaMsg(t, want))
	}
	pl, err := s.segs.Place(alloc.PlaceRequest{Size: req.Size, Memory: c.Memory, NOF: c.NOF, DFS: c.DFS,
		Preferred: c.Preferred, Strategy: req.Strategy, Seed: seed})
	if err != nil {
		t.quota.Release(want)
		// Raise the memory eviction flag only when eviction could help: the MEMORY tier had no room,
		// yet some MEMORY segment is large enough for the object. An object larger than every
		// segment, or a full NOF or DFS tier, would drain memory for nothing.
		var ns *alloc.NoSpaceError
		if errors.As(err, &ns) && ns.Tier == alloc.TierMemory && ns.Fits {
			_, used := s.segs.Allocatable(alloc.TierMemory)
			s.evictWanted.Store(used + 1)
		}
		return nil, objErr(NoAvailableHandle, t.name, req.Key, err.Error())
	}
	if short := uint64(c.Memory-len(pl.Memory)) * req.Size; short > 0 {
		t.quota.Release(short)
	}
	st := newState(len(pl.Memory) + len(pl.NOF) + len(pl.DFS) + len(pl.Disk))
	st.Size, st.DataType, st.HardPin = req.Size, c.DataType, c.HardPin
	if c.SoftPin == SoftPinEnable {
		st.SoftPinTTL = int64(c.SoftPinTTL)
	}
	for _, x := range pl.Memory {
		st.Replicas = append(st.Replicas, Replica{ID: t.dir.nextReplicaID.Add(1), Extent: x, Tier: alloc.TierMemory, Status: Processing})
	}
	for _, tier := range [...]struct {
		t    alloc.Tier
		exts []alloc.Extent
	}{{alloc.TierNOF, pl.NOF}, {alloc.TierDisk, pl.Disk}, {alloc.TierDFS, pl.DFS}} { // alloc.Tiers order
		for _, x := range tier.exts {
			st.Replicas = append(st.Replicas, Replica{ID: t.dir.nextReplicaID.Add(1), Extent: x, Tier: tier.t, Status: Processing})
		}
	}
	return st, nil
}

func quotaMsg(t *TenantState, want uint64) string {
	q := &t.quota
	return "tenant quota exceeded: needs " + itoa(want) + " bytes, charged " + itoa(q.Charged()) +
		" of effective " + itoa(q.Effective())
}

func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// writeTarget looks up the entry of a PutEnd/PutRevoke and locks it; the caller unlocks e.mu.
func (s *Store) writeTarget(t *TenantState, req *PutEndRequest) (*ObjectEntry, *ObjectState, error) {
	e := t.dir.lookup(req.Key)
	if e == nil {
		return nil, nil, objErr(ObjectNotFound, t.name, req.Key, "object not found")
	}
	e.mu.Lock()
	if e.Life() != Active {
		e.mu.Unlock()
		return nil, nil, objErr(ObjectNotFound, t.name, req.Key, "object not found")
	}
	st := e.State()
	if st.Writer != req.Client {
		e.mu.Unlock()
		return nil, nil, objErr(IllegalClient, t.name, req.Key, "written by client "+st.Writer.String()+", not "+req.Client.String())
	}
	return e, st, nil
}

func tierMatch(tier alloc.Tier, r Replica) bool { return tier == 0 || r.Tier == tier }

// PutEnd turns the PROCESSING replicas of the tier (or all) COMPLETE and commits a staged soft pin on
// the first completion. Repeating a PutEnd whose replicas are all COMPLETE is OK. Quota needs no
// settling: PutStart charged exactly the MEMORY replicas it placed.
//
// A PutEnd that succeeds (a repeated one too) sets lease = max(lease, now), now being the leader's
// time from the log entry: leader soft state that protects nothing (see stampWriteLocked) but makes
// eviction rank the object by its last write when that is later than its last read's lease, so
// that a block just written goes after blocks whose leases ran out before it was written. Every
// node applies it alike; only the leader's copy is ever consulted.
func (s *Store) PutEnd(now int64, req PutEndRequest) error {
	if err := req.validate(); err != nil {
		return err
	}
	t, err := s.writable(req.Tenant)
	if err != nil {
		return err
	}
	defer t.release()
	return s.putEnd(now, t, &req)
}

// putEnd is PutEnd with t's gate held; it validates the request.
func (s *Store) putEnd(now int64, t *TenantState, req *PutEndRequest) error {
	if err := req.validate(); err != nil {
		return err
	}
	e, st, err := s.writeTarget(t, req)
	if err != nil {
		return err
	}
	defer e.mu.Unlock()
	if change, err := putEndVerdict(t, st, req); !change {
		if err == nil {
			e.stampWriteLocked(now) // a repeated PutEnd: every selected replica is already COMPLETE
		}
		return err
	}
	ns := st.next()
	for i := range ns.Replicas {
		if r := &ns.Replicas[i]; tierMatch(req.Tier, *r) && st.writing(*r) {
			r.Status = Complete
		}
	}
	if !st.HasComplete() && ns.SoftPinTTL > 0 {
		ns.SoftPinDeadline = now + ns.SoftPinTTL
		ns.SoftPinTTL = 0
	}
	s.setStateLocked(t, e, ns)
	e.stampWriteLocked(now)
	if !st.HasComplete() {
		s.queueOffload(now, t, e.key, ns)
	}
	return nil
}

// putEndVerdict is PutEnd's verdict on st, the state of the object it names: change when it has
// PROCESSING replicas of the tier to complete; otherwise nil when every replica of the tier is
// already COMPLETE (a repeated PutEnd, OK) or INVALID_WRITE when the object has none of that tier.
func putEndVerdict(t *TenantState, st *ObjectState, req *PutEndRequest) (change bool, err error) {
	selected := false
	for _, r := range st.Replicas {
		if tierMatch(req.Tier, r) {
			if st.writing(r) {
				return true, nil
			}
			selected = true
		}
	}
	if selected {
		return false, nil
	}
	return false, objErr(InvalidWrite, t.name, req.Key, "no write in progress for that tier")
}

// CheckPutEnd reports whether the state refuses req (PutEnd, UpsertEnd): an invalid request, a
// tenant not registered, no such object, another writer, or no replica of the tier. A repeated
// PutEnd is not refused. The leader refuses from it without a log entry; it changes nothing.
func (s *Store) CheckPutEnd(req PutEndRequest) error {
	return s.checkEnd(&req, func(t *TenantState, st *ObjectState) error {
		_, err := putEndVerdict(t, st, &req)
		return err
	})
}

// CheckPutRevoke reports whether the state refuses req (PutRevoke, UpsertRevoke): an invalid
// request, a tenant not registered, no such object, another writer, or no PROCESSING replica of
// the tier. The leader refuses from it without a log entry; it changes nothing.
func (s *Store) CheckPutRevoke(req PutEndRequest) error {
	return s.checkEnd(&req, func(t *TenantState, st *ObjectState) error { return revokeVerdict(t, st, req.Tier, req.Key) })
}

// checkEnd runs the checks PutEnd and PutRevoke share (validate, writable, writeTarget) and then
// verdict on the object's state, with its lock held.
func (s *Store) checkEnd(req *PutEndRequest, verdict func(*TenantState, *ObjectState) error) error {
	if err := req.validate(); err != nil {
		return err
	}
	t, err := s.writable(req.Tenant)
	if err != nil {
		return err
	}
	defer t.release()
	e, st, err := s.writeTarget(t, req)
	if err != nil {
		return err
	}
	defer e.mu.Unlock()
	return verdict(t, st)
}

// PutRevoke drops the PROCESSING replicas of the tier (or all), refunds their quota and frees their
// extents; the object is erased when nothing is left.
func (s *Store) PutRevoke(now int64, req PutEndRequest) error {
	if err := req.validate(); err != nil {
		return err
	}
	t, err := s.writable(req.Tenant)
	if err != nil {
		return err
	}
	defer t.release()
	e, st, err := s.writeTarget(t, &req)
	if err != nil {
		return err
	}
	return s.revokeLocked(t, e, st, req.Tier)
}

// revokeLocked drops the PROCESSING replicas of the tier (or all) of e, whose lock the caller holds
// and which it releases; st is e's current state.
func (s *Store) revokeLocked(t *TenantState, e *ObjectEntry, st *ObjectState, tier alloc.Tier) error {
	if err := revokeVerdict(t, st, tier, e.key); err != nil {
		e.mu.Unlock()
		return err
	}
	ns := st.next()
	ns.Replicas = ns.Replicas[:0]
	var dropped []Replica
	for _, r := range st.Replicas {
		if tierMatch(tier, r) && st.writing(r) {
			dropped = append(dropped, r)
		} else {
			ns.Replicas = append(ns.Replicas, r)
		}
	}
	if len(ns.Replicas) == 0 {
		e.setLifeLocked(Removing)
		e.mu.Unlock()
		s.finishErase(t, e, st, nil)
		return nil
	}
	s.setStateLocked(t, e, ns)
	e.mu.Unlock()
	s.freeReplicas(t, dropped, st.Size, nil)
	return nil
}

// revokeVerdict is PutRevoke's verdict on st, the state of the object under key: INVALID_WRITE
// when it has no PROCESSING replica of the tier.
func revokeVerdict(t *TenantState, st *ObjectState, tier alloc.Tier, key string) error {
	if !anyReplica(st, func(r Replica) bool { return tierMatch(tier, r) && st.writing(r) }) {
		return objErr(InvalidWrite, t.name, key, "no write in progress for that tier")
	}
	return nil
}

// UpsertStart inserts or overwrites. An absent key is a PutStart. A present object must have no write
// in progress and the same group; with the same size and no LOCAL_DISK replica its extents are
// reused (all replicas turn PROCESSING, so it is unreadable until UpsertEnd), otherwise new replicas
// are placed by the request's config and the old ones freed.
func (s *Store) UpsertStart(now int64, seed uint64, req PutStartRequest) ([]Replica, error) {
	reps, _, err := s.Upsert(now, seed, req)
	return reps, err
}

// Upsert is UpsertStart that also reports whether the object's extents were reused (same size).
func (s *Store) Upsert(now int64, seed uint64, req PutStartRequest) (reps []Replica, reused bool, err error) {
	if err := req.validate(); err != nil {
		return nil, false, err
	}
	t, err := s.writable(req.Tenant)
	if err != nil {
		return nil, false, err
	}
	defer t.release()
	e := t.dir.lookup(req.Key)
	if e == nil {
		reps, err = s.putStart(now, seed, t, &req)
		return reps, false, err
	}
	e.mu.Lock()
	if e.Life() != Active {
		e.mu.Unlock()
		reps, err = s.putStart(now, seed, t, &req)
		return reps, false, err
	}
	st := e.State()
	if err := upsertBlocked(t, e, st, &req); err != nil {
		e.mu.Unlock()
		return nil, false, err
	}
	restart := func(ns *ObjectState) {
		ns.Writer = req.Client
		ns.PutStart = now
		ns.HardPin = req.Config.HardPin
		ns.DataType = req.Config.DataType
		ns.SoftPinTTL, ns.SoftPinDeadline = 0, 0
		if req.Config.SoftPin == SoftPinEnable {
			ns.SoftPinTTL = int64(req.Config.SoftPinTTL)
		}
		for i := range ns.Replicas {
			ns.Replicas[i].Status = Processing
		}
	}
	// A LOCAL_DISK replica is its owner's file of the old bytes, never rewritten by the writer: an
	// object with one is upserted as one of another size (fresh replicas, every old one freed).
	if st.Size == req.Size && !anyReplica(st, func(r Replica) bool { return r.Tier == alloc.TierLocalDisk }) {
		ns := st.next()
		restart(ns)
		s.setStateLocked(t, e, ns)
		e.mu.Unlock()
		s.tasks.cancelOffload(now, t.name, req.Key)
		return ns.Replicas, true, nil
	}
	// Another size: place new replicas with no object lock held, then swap if nothing moved.
	e.mu.Unlock()
	fresh, err := s.allocate(t, seed, &req)
	if err != nil {
		return nil, false, err
	}
	e.mu.Lock()
	if e.Life() != Active || e.State() != st {
		e.mu.Unlock()
		s.freeReplicas(t, fresh.Replicas, fresh.Size, nil)
		return nil, false, objErr(InvalidWrite, t.name, req.Key, "object changed during upsert")
	}
	ns := st.next()
	ns.Size = req.Size
	ns.Replicas = fresh.Replicas
	restart(ns)
	s.setStateLocked(t, e, ns)
	e.mu.Unlock()
	s.freeReplicas(t, st.Replicas, st.Size, nil)
	s.tasks.cancelOffload(now, t.name, req.Key)
	return ns.Replicas, false, nil
}

// upsertBlocked is UpsertStart's verdict on the live object e (state st) that holds its key:
// OBJECT_ALREADY_EXISTS in another group (membership is fixed), OBJECT_HAS_REPLICATION_TASK while
// a copy or move runs, INVALID_WRITE with a write in progress. e.mu is held.
func upsertBlocked(t *TenantState, e *ObjectEntry, st *ObjectState, req *PutStartRequest) error {
	if g := groupName(e); g != req.Group {
		return objErr(ObjectAlreadyExists, t.name, req.Key, "object exists in group "+quote(g))
	}
	if st.Task != nil {
		return objErr(ObjectHasReplicationTask, t.name, req.Key, "a "+st.Task.Kind.String()+" task is in progress")
	}
	if st.HasProcessing() {
		return objErr(InvalidWrite, t.name, req.Key, "a write is already in progress")
	}
	return nil
}

// CheckUpsertStart reports whether the state refuses req (UpsertStart), at any later time as far
// as the passing of time goes: an invalid request, a tenant not registered, or a key held by an
// object in another group or with a write in progress (for a key with no live object, as
// CheckPutStart). The leader refuses from it without a log entry; it changes nothing.
func (s *Store) CheckUpsertStart(req PutStartRequest) error {
	return s.checkStart(&req, func(t *TenantState) error {
		e := t.dir.lookup(req.Key)
		if e == nil {
			return s.checkPutStart(t, &req)
		}
		e.mu.Lock()
		if e.Life() != Active {
			e.mu.Unlock()
			return s.checkPutStart(t, &req)
		}
		defer e.mu.Unlock()
		return upsertBlocked(t, e, e.State(), &req)
	})
}

// UpsertEnd completes an upsert (the same transition as PutEnd).
func (s *Store) UpsertEnd(now int64, req PutEndRequest) error { return s.PutEnd(now, req) }

// UpsertRevoke abandons an upsert (the same transition as PutRevoke): the overwritten replicas are
// dropped, since their old bytes may already be gone.
func (s *Store) UpsertRevoke(now int64, req PutEndRequest) error { return s.PutRevoke(now, req) }

func groupName(e *ObjectEntry) string {
	if e.group == nil {
		return ""
	}
	return e.group.name
}

func quote(s string) string { return "\"" + s + "\"" }
