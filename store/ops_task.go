package store

import (
	"errors"
	"slices"

	"metad/store/alloc"
)

// TaskKind is the kind of a replica task: what its End does.
type TaskKind uint8

const (
	// TaskCopy adds replicas: End makes the targets COMPLETE.
	TaskCopy TaskKind = 1
	// TaskMove relocates one replica: End makes the target COMPLETE and frees the source.
	TaskMove TaskKind = 2
	// TaskOffload copies an object to its worker's local SSD (store/offload.go): queued by the PutEnd
	// that completes the object, never started or ended by a copy's or move's calls. As a
	// ReplicaTask it is the pin of its source replica while the worker holds the task: no targets.
	TaskOffload TaskKind = 3
	// TaskPromote copies a disk-only object back to memory (store/promote.go): queued by the leader
	// when reads hit it, its target placed by PromotionStart, ended by PromotionEnd. As a
	// ReplicaTask its source is the holder's LOCAL_DISK replica and its target a MEMORY replica.
	TaskPromote TaskKind = 4
)

func (k TaskKind) String() string {
	switch k {
	case TaskCopy:
		return "copy"
	case TaskMove:
		return "move"
	case TaskOffload:
		return "offload"
	case TaskPromote:
		return "promote"
	}
	return "unknown"
}

// Valid reports whether k is a known kind.
func (k TaskKind) Valid() bool { return k >= TaskCopy && k <= TaskPromote }

// replicaKind reports whether k is a kind the copy and move calls start, end and create: TaskCopy
// or TaskMove.
func (k TaskKind) replicaKind() bool { return k == TaskCopy || k == TaskMove }

// ReplicaTask is a copy or move in progress on one object, started by a client that writes the
// bytes of the source replica into the targets. It is replicated state, part of the immutable
// ObjectState: never modified once published. While an object carries one:
//   - its Source replica is on the object and COMPLETE, and every Target is on the object and
//     PROCESSING (an unmount that drops the source or a target ends the task, dropping its
//     remaining targets);
//   - the object has no write in progress (a task starts only on an object without one, and
//     UpsertStart is refused), so its PROCESSING replicas are exactly the targets;
//   - it is neither evicted nor removed (OBJECT_HAS_REPLICATION_TASK, force or not), and PutEnd and
//     PutRevoke of its writer never touch the targets.
type ReplicaTask struct {
	Kind    TaskKind
	Client  alloc.ID // the client that started it; only it may End or Revoke
	Started int64    // leader time (unix ns) of the Start; the reaper revokes it after put_release_timeout
	Source  uint64   // replica id of the COMPLETE source
	Targets []uint64 // replica ids of the PROCESSING targets, in placement order
}

// IsTarget reports whether replica id is one of the task's targets.
func (t *ReplicaTask) IsTarget(id uint64) bool { return slices.Contains(t.Targets, id) }

// ReplicaTaskRequest starts a copy or move of the object's replica on segment Source. The targets
// are placed on the named Targets segments, in order (a copy skips a named segment that already
// holds a replica of the object), or, with none named, on Count segments of the source's tier
// that hold no replica of the object, in Strategy order (Seed from the command). Strategy is the
// cluster setting the leader stamps into the command.
type ReplicaTaskRequest struct {
	Tenant   string
	Client   alloc.ID
	Key      string
	Kind     TaskKind
	Source   alloc.ID
	Targets  []alloc.ID
	Count    int // with no Targets: targets to place, copy 1..8 (0 = 1), move 1 (0 = 1)
	Strategy alloc.Strategy
}

// ReplicaTaskEndRequest ends (End) or abandons (Revoke) the object's task of Kind.
type ReplicaTaskEndRequest struct {
	Tenant string
	Client alloc.ID
	Key    string
	Kind   TaskKind
}

func (r *ReplicaTaskRequest) validate() error {
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
	if !r.Kind.replicaKind() {
		return errf(InvalidParams, "kind: %s is not a copy or a move", r.Kind)
	}
	if r.Source.IsZero() {
		return errf(InvalidParams, "source_segment_id: must be a non-zero UUID")
	}
	limit := MaxMemReplicas
	if r.Kind == TaskMove {
		limit = 1
	}
	if len(r.Targets) > limit {
		return errf(InvalidParams, "target_segment_ids: %d named, at most %d for a %s", len(r.Targets), limit, r.Kind)
	}
	for i, id := range r.Targets {
		switch {
		case id.IsZero():
			return errf(InvalidParams, "target_segment_ids[%d]: must be a non-zero UUID", i)
		case id == r.Source:
			return errf(InvalidParams, "target_segment_ids[%d]: %s is the source segment", i, id)
		case slices.Contains(r.Targets[:i], id):
			return errf(InvalidParams, "target_segment_ids[%d]: %s named twice", i, id)
		}
	}
	if len(r.Targets) > 0 {
		if r.Count != 0 && r.Count != len(r.Targets) {
			return errf(InvalidParams, "replicas: %d, but %d target segments named", r.Count, len(r.Targets))
		}
		r.Count = len(r.Targets)
	}
	if r.Count == 0 {
		r.Count = 1
	}
	if r.Count < 1 || r.Count > limit {
		return errf(InvalidParams, "replicas: %d not in 1..%d for a %s", r.Count, limit, r.Kind)
	}
	return nil
}

func (r *ReplicaTaskEndRequest) validate() error {
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
	if !r.Kind.replicaKind() {
		return errf(InvalidParams, "kind: %s is not a copy or a move", r.Kind)
	}
	return nil
}

// taskStartVerdict is a task Start's verdict on st, the state of the live object under req.Key:
// OBJECT_HAS_REPLICATION_TASK while a task runs, REPLICA_IS_NOT_READY while a write is in
// progress, REPLICA_NOT_FOUND when no COMPLETE replica is on the source segment, and INVALID_PARAMS
// when a move's target segment, or every named target segment of a copy, already holds a replica
// of the object. It returns the source replica and the named targets left to place.
func taskStartVerdict(t *TenantState, st *ObjectState, req *ReplicaTaskRequest) (Replica, []alloc.ID, error) {
	if err := st.busy(t.name, req.Key); err != nil {
		if err.Reason == ReplicaIsNotReady {
			err.Msg = "a write is in progress"
		}
		return Replica{}, nil, err
	}
	i := slices.IndexFunc(st.Replicas, func(r Replica) bool { return r.Extent.Segment == req.Source })
	if i < 0 || st.Replicas[i].Status != Complete || !st.Replicas[i].Tier.Placeable() {
		return Replica{}, nil, objErr(ReplicaNotFound, t.name, req.Key, "no COMPLETE MEMORY, NOF or DFS replica on source segment "+req.Source.String())
	}
	holds := func(id alloc.ID) bool {
		return slices.ContainsFunc(st.Replicas, func(r Replica) bool { return r.Extent.Segment == id })
	}
	named := slices.DeleteFunc(slices.Clone(req.Targets), holds)
	switch {
	case len(req.Targets) > 0 && req.Kind == TaskMove && len(named) == 0:
		return Replica{}, nil, objErr(InvalidParams, t.name, req.Key, "target_segment_ids: segment "+req.Targets[0].String()+" already holds a replica of the object")
	case len(req.Targets) > 0 && len(named) == 0:
		return Replica{}, nil, objErr(InvalidParams, t.name, req.Key, "target_segment_ids: every target segment already holds a replica of the object")
	}
	return st.Replicas[i], named, nil
}

// taskTarget looks up and locks the live object of a task request; the caller unlocks e.mu.
func (s *Store) taskTarget(t *TenantState, key string) (*ObjectEntry, *ObjectState, error) {
	e := t.dir.lookup(key)
	if e == nil {
		return nil, nil, objErr(ObjectNotFound, t.name, key, "object not found")
	}
	e.mu.Lock()
	if e.Life() != Active {
		e.mu.Unlock()
		return nil, nil, objErr(ObjectNotFound, t.name, key, "object not found")
	}
	return e, e.State(), nil
}

// TaskStarted is what a task Start returns: the source replica to read, the targets to write and
// the object's size.
type TaskStarted struct {
	Source  Replica
	Targets []Replica
	Size    uint64
}

// StartReplicaTask starts a copy or move (ReplicaTaskRequest): it charges the tenant's quota for
// the MEMORY targets, places them as PROCESSING replicas of the object, records the task on the
// object and returns the source replica and the targets. Refusals, with nothing changed: those
// of taskStartVerdict, SEGMENT_NOT_FOUND for a named target segment not mounted, INVALID_PARAMS
// when the object would hold more than 8 replicas of a tier, TENANT_QUOTA_EXCEEDED, and
// NO_AVAILABLE_HANDLE when a named target has no room or no segment of the tier has.
func (s *Store) StartReplicaTask(now int64, seed uint64, req ReplicaTaskRequest) (TaskStarted, error) {
	if err := req.validate(); err != nil {
		return TaskStarted{}, err
	}
	t, err := s.writable(req.Tenant)
	if err != nil {
		return TaskStarted{}, err
	}
	defer t.release()
	e, st, err := s.taskTarget(t, req.Key)
	if err != nil {
		return TaskStarted{}, err
	}
	src, named, err := taskStartVerdict(t, st, &req)
	e.mu.Unlock() // the allocator's lock is never taken under an object lock
	if err != nil {
		return TaskStarted{}, err
	}
	exts, tiers, err := s.placeTargets(t, st, &req, src, named, seed)
	if err != nil {
		return TaskStarted{}, err
	}
	targets := make([]Replica, len(exts))
	for i, x := range exts {
		targets[i] = Replica{Extent: x, Tier: tiers[i], Status: Processing}
	}
	e.mu.Lock()
	if e.Life() != Active || e.State() != st {
		e.mu.Unlock()
		s.freeReplicas(t, targets, st.Size, nil)
		return TaskStarted{}, objErr(InvalidWrite, t.name, req.Key, "object changed while its targets were placed")
	}
	task := &ReplicaTask{Kind: req.Kind, Client: req.Client, Started: now, Source: src.ID, Targets: make([]uint64, len(targets))}
	ns := st.next()
	for i := range targets {
		targets[i].ID = t.dir.nextReplicaID.Add(1)
		task.Targets[i] = targets[i].ID
		ns.Replicas = append(ns.Replicas, targets[i])
	}
	ns.Task = task
	s.setStateLocked(t, e, ns)
	e.mu.Unlock()
	return TaskStarted{Source: src, Targets: targets, Size: st.Size}, nil
}

// placeTargets charges and places the targets of a task Start (no object lock held): on the named
// segments, or on req.Count segments of the source's tier that hold no replica of st. On failure
// nothing is left charged or allocated.
func (s *Store) placeTargets(t *TenantState, st *ObjectState, req *ReplicaTaskRequest, src Replica, named []alloc.ID, seed uint64) ([]alloc.Extent, []alloc.Tier, error) {
	var (
		exts  []alloc.Extent
		tiers []alloc.Tier
		err   error
	)
	if len(req.Targets) > 0 {
		exts, tiers, err = s.segs.PlaceOn(st.Size, named)
	} else {
		held := make([]alloc.ID, len(st.Replicas))
		for i, r := range st.Replicas {
			held[i] = r.Extent.Segment
		}
		exts, err = s.segs.PlaceTier(src.Tier, st.Size, req.Count, held, req.Strategy, seed)
		tiers = make([]alloc.Tier, len(exts))
		for i := range tiers {
			tiers[i] = src.Tier
		}
	}
	if err != nil {
		switch {
		case errors.Is(err, alloc.ErrSegmentNotFound):
			return nil, nil, objErr(SegmentNotFound, t.name, req.Key, "target_segment_ids: "+err.Error())
		case errors.Is(err, alloc.ErrInvalidRequest): // a LOCAL_DISK target
			return nil, nil, objErr(InvalidParams, t.name, req.Key, "target_segment_ids: "+err.Error())
		}
		return nil, nil, objErr(NoAvailableHandle, t.name, req.Key, err.Error())
	}
	undo := func() {
		for _, x := range exts {
			if ferr := s.segs.Free(x); ferr != nil {
				panic("store: tenant " + quote(t.name) + ": free of an unplaced target: " + ferr.Error())
			}
		}
	}
	var mem uint64
	for _, tier := range []alloc.Tier{alloc.TierMemory, alloc.TierNOF, alloc.TierDFS} {
		n := 0
		for _, r := range st.Replicas {
			if r.Tier == tier {
				n++
			}
		}
		for _, x := range tiers {
			if x == tier {
				n++
			}
		}
		limit := MaxMemReplicas
		switch tier {
		case alloc.TierNOF:
			limit = MaxNOFReplicas
		case alloc.TierDFS:
			limit = MaxDFSReplicas
		}
		if n > limit {
			undo()
			return nil, nil, objErr(InvalidParams, t.name, req.Key, "target_segment_ids: the object would hold "+itoa(uint64(n))+" "+tier.String()+" replicas, over "+itoa(uint64(limit)))
		}
		if tier == alloc.TierMemory {
			mem = uint64(n-countTier(st, tier)) * st.Size
		}
	}
	if !t.quota.TryCharge(mem) {
		undo()
		return nil, nil, objErr(TenantQuotaExceeded, t.name, req.Key, quotaMsg(t, mem))
	}
	return exts, tiers, nil
}

func countTier(st *ObjectState, tier alloc.Tier) int {
	n := 0
	for _, r := range st.Replicas {
		if r.Tier == tier {
			n++
		}
	}
	return n
}

// taskEndVerdict is a task End's or Revoke's verdict on st: OBJECT_NO_REPLICATION_TASK without a
// task, ILLEGAL_CLIENT when another client started it, INVALID_PARAMS when it is of another kind.
func taskEndVerdict(t *TenantState, st *ObjectState, req *ReplicaTaskEndRequest) error {
	switch task := st.Task; {
	case task == nil:
		return objErr(ObjectNoReplicationTask, t.name, req.Key, "no "+req.Kind.String()+" in progress")
	case task.Client != req.Client:
		return objErr(IllegalClient, t.name, req.Key, task.Kind.String()+" started by client "+task.Client.String()+", not "+req.Client.String())
	case task.Kind != req.Kind:
		return objErr(InvalidParams, t.name, req.Key, "kind: a "+task.Kind.String()+" is in progress, not a "+req.Kind.String())
	}
	return nil
}

// EndReplicaTask completes the object's task: its targets turn COMPLETE; a move also drops its
// source replica, freeing its extent and its quota. Refusals, with nothing changed: OBJECT_NOT_FOUND
// and those of taskEndVerdict.
func (s *Store) EndReplicaTask(now int64, req ReplicaTaskEndRequest) error {
	return s.endTask(req, s.commitTaskLocked)
}

// commitTaskLocked completes the replica task of e (state st, which has one): its targets turn
// COMPLETE and the task goes; a move's source is dropped, its extent and quota freed. e.mu is held
// and released.
func (s *Store) commitTaskLocked(t *TenantState, e *ObjectEntry, st *ObjectState) {
	ns := st.next()
	ns.Task = nil
	ns.Replicas = ns.Replicas[:0]
	var dropped []Replica
	for _, r := range st.Replicas {
		switch {
		case st.Task.IsTarget(r.ID):
			r.Status = Complete
		case st.Task.Kind == TaskMove && r.ID == st.Task.Source:
			dropped = append(dropped, r)
			continue
		}
		ns.Replicas = append(ns.Replicas, r)
	}
	s.setStateLocked(t, e, ns)
	e.mu.Unlock()
	s.freeReplicas(t, dropped, st.Size, nil)
}

// RevokeReplicaTask abandons the object's task: its targets are dropped, their extents and quota
// freed; the source stays as it was. Refusals as EndReplicaTask's.
func (s *Store) RevokeReplicaTask(now int64, req ReplicaTaskEndRequest) error {
	return s.endTask(req, func(t *TenantState, e *ObjectEntry, st *ObjectState) {
		s.dropTaskLocked(t, e, st)
	})
}

// dropTaskLocked drops the task of e (state st, which has one) and its targets; e.mu is held and
// released. The source stays, so the object keeps a replica.
func (s *Store) dropTaskLocked(t *TenantState, e *ObjectEntry, st *ObjectState) {
	ns, dropped := st.nextKeeping(func(r Replica) bool { return !st.Task.IsTarget(r.ID) })
	ns.Task = nil
	s.setStateLocked(t, e, ns)
	e.mu.Unlock()
	s.freeReplicas(t, dropped, st.Size, nil)
}

// endTask runs the checks End and Revoke share and then apply, which releases e.mu.
func (s *Store) endTask(req ReplicaTaskEndRequest, apply func(*TenantState, *ObjectEntry, *ObjectState)) error {
	if err := req.validate(); err != nil {
		return err
	}
	t, err := s.writable(req.Tenant)
	if err != nil {
		return err
	}
	defer t.release()
	e, st, err := s.taskTarget(t, req.Key)
	if err != nil {
		return err
	}
	if err := taskEndVerdict(t, st, &req); err != nil {
		e.mu.Unlock()
		return err
	}
	apply(t, e, st)
	return nil
}

// CheckStartReplicaTask reports whether the state refuses req (a task Start): an invalid request,
// a tenant not registered, no such object, taskStartVerdict's refusals, or a named target segment
// not mounted. nil means it may succeed; only apply decides (quota, space). The leader refuses
// from it without a log entry; it changes nothing.
func (s *Store) CheckStartReplicaTask(req ReplicaTaskRequest) error {
	if err := req.validate(); err != nil {
		return err
	}
	t, err := s.writable(req.Tenant)
	if err != nil {
		return err
	}
	defer t.release()
	e, st, err := s.taskTarget(t, req.Key)
	if err != nil {
		return err
	}
	_, named, err := taskStartVerdict(t, st, &req)
	e.mu.Unlock()
	if err != nil {
		return err
	}
	for _, id := range named {
		if _, ok := s.segs.Get(id); !ok {
			return objErr(SegmentNotFound, t.name, req.Key, "target_segment_ids: segment "+id.String()+" is not mounted")
		}
	}
	return nil
}

// CheckEndReplicaTask reports whether the state refuses req (a task End or Revoke): an invalid
// request, a tenant not registered, no such object, or taskEndVerdict's refusals. The leader
// refuses from it without a log entry; it changes nothing.
func (s *Store) CheckEndReplicaTask(req ReplicaTaskEndRequest) error {
	if err := req.validate(); err != nil {
		return err
	}
	t, err := s.writable(req.Tenant)
	if err != nil {
		return err
	}
	defer t.release()
	e, st, err := s.taskTarget(t, req.Key)
	if err != nil {
		return err
	}
	defer e.mu.Unlock()
	return taskEndVerdict(t, st, &req)
}

// PrepareMoveEnd checks, on the leader, that req (a MoveEnd) may free the move's source now: the
// object is present and not marked, req names its move (taskEndVerdict), and it has no read lease
// (a reader leased the source and may still be reading it: OBJECT_HAS_LEASE, ask again once the
// lease has ended). It then marks the object, so that no read leases it while the MoveEnd is in
// flight (the removal protocol: the caller proposes through ha.ProposeMarked, which clears
// the mark), and returns its token. A marked object is ErrUnlinkPending.
func (s *Store) PrepareMoveEnd(now int64, req ReplicaTaskEndRequest) (ObjectToken, error) {
	if err := req.validate(); err != nil {
		return ObjectToken{}, err
	}
	t := s.tenants.Lookup(req.Tenant)
	if t == nil || t.Life() != TenantOpen {
		return ObjectToken{}, errf(TenantNotRegistered, "tenant %q is not registered", req.Tenant)
	}
	e, st, err := s.taskTarget(t, req.Key)
	if err != nil {
		return ObjectToken{}, err
	}
	defer e.mu.Unlock()
	if e.markedLocked() {
		return ObjectToken{}, ErrUnlinkPending
	}
	if err := taskEndVerdict(t, st, &req); err != nil {
		return ObjectToken{}, err
	}
	if s.leasedLocked(e, now) {
		return ObjectToken{}, objErr(ObjectHasLease, t.name, req.Key, "object has a read lease: the move's source may still be read")
	}
	e.setMarkLocked(true)
	return tokenOf(t, e), nil
}
