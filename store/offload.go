package store

import (
	"slices"

	"metad/store/alloc"
)

// Offload tasks (TIERS.md, "SSD registration and offload"): the cluster asking a worker to copy an
// object to its local SSD. They are scheduled tasks of kind TaskOffload in the replicated task
// queue (taskqueue.go), so a new leader knows every queued and taken one and none is done twice:
//
//   - Queued by apply, at offload-at-write: the PutEnd (or the arena's PutCommit) that makes an
//     object COMPLETE for the first time queues one for the owner of the segment of its first
//     COMPLETE MEMORY replica, when that owner has a LOCAL_DISK registration with offload on and
//     no LOCAL_DISK replica of the object (queueOffload). At most one live (PENDING or
//     PROCESSING) offload task per key; a PENDING one is re-aimed at the current object, a full
//     queue (MaxPendingTasks) queues nothing. The decision reads only replicated state: the
//     registration's offload flag is the switch, so every node queues the same tasks.
//   - Taken with FetchTasks (the owner's mailbox): the object is then pinned, its ReplicaTask an
//     offload one with the source replica and no target (pinOffload), so it is not evicted, not
//     upserted and not removed (OBJECT_HAS_REPLICATION_TASK) while the worker copies it. A task
//     whose object is gone, changed or already on the SSD when it is taken ends FAILED instead.
//   - Ended by NotifyOffload: a success adds the LOCAL_DISK replica and ends the task SUCCESS, a
//     failure ends it FAILED; either unpins the object. A queued task is cancelled by an upsert
//     of its object; a taken one refuses the upsert.
//   - Reaped as every scheduled task and every replica task is: PROCESSING longer than the put
//     release timeout since its fetch, the task ends FAILED (TaskQueue.Expire) and the pin is
//     revoked (RevokeTokens).

// Offload on evict: with it on, memory eviction keeps the objects that an owner would offload
// (AwaitsOffload) until they are on its SSD, and its leader proposes QueueOffloads for the oldest
// of them instead (package evict); once a LOCAL_DISK replica is recorded, the object is evicted
// from memory as any other and lives on on disk.

// liveKey names the object of a live (PENDING or PROCESSING) offload or promotion task.
type liveKey struct {
	kind        TaskKind
	tenant, key string
}

// queueOffload queues the offload task of st, the state that a PutEnd or PutCommit has just made
// COMPLETE for the first time (see above); e.mu may be held (the queue's lock and the registry's
// lock-free descriptors are leaves).
func (s *Store) queueOffload(now int64, t *TenantState, key string, st *ObjectState) {
	if source, owner, ok := s.offloadSource(st); ok {
		s.tasks.queueOffload(now, TaskSpec{Kind: TaskOffload, Tenant: t.name, Key: key, Source: source, Size: st.Size}, owner)
	}
}

// offloadSource returns the segment of st's first COMPLETE MEMORY replica whose owner has a
// LOCAL_DISK registration with offload on, and that owner; false when there is none, or when st
// has a LOCAL_DISK replica already. It reads the registry's lock-free descriptors only.
func (s *Store) offloadSource(st *ObjectState) (source, owner alloc.ID, ok bool) {
	if s.segs.Offloaders() == 0 || anyReplica(st, func(r Replica) bool { return r.Tier == alloc.TierLocalDisk }) {
		return alloc.ID{}, alloc.ID{}, false
	}
	for _, r := range st.Replicas {
		if r.Tier != alloc.TierMemory || r.Status != Complete {
			continue
		}
		seg, found := s.segs.Describe(r.Extent.Segment)
		if !found {
			continue
		}
		if disk, found := s.segs.LocalDiskOf(seg.Owner); found && disk.Offload {
			return seg.ID, seg.Owner, true
		}
	}
	return alloc.ID{}, alloc.ID{}, false
}

// offloadKeep returns the id of the MEMORY replica of st that its offload copies from, which
// EvictRedundant keeps: the COMPLETE MEMORY replica on the source segment of the key's live offload
// task when it has one, else on offloadSource's segment (the one a task queued now would name);
// false when st awaits no offload. e.mu may be held (the queue's lock is a leaf).
func (s *Store) offloadKeep(t *TenantState, key string, st *ObjectState) (uint64, bool) {
	source, _, ok := s.offloadSource(st)
	if !ok {
		return 0, false
	}
	if task, live := s.tasks.Offload(t.name, key); live {
		source = task.Spec.Source
	}
	for _, r := range st.Replicas {
		if r.Tier == alloc.TierMemory && r.Status == Complete && r.Extent.Segment == source {
			return r.ID, true
		}
	}
	return 0, false
}

// RedundantBytes returns the extent bytes and the count of st's MEMORY replicas that
// EvictRedundant would drop, if it were applied now (a lock-free read, for the census; 0 when st
// awaits no offload or has no other MEMORY replica).
func (s *Store) RedundantBytes(t *TenantState, key string, st *ObjectState) (bytes uint64, n int) {
	keep, ok := s.offloadKeep(t, key, st)
	if !ok {
		return 0, 0
	}
	for _, r := range st.Replicas {
		if r.Tier == alloc.TierMemory && r.ID != keep {
			bytes += r.Extent.Size
			n++
		}
	}
	return bytes, n
}

// AwaitsOffload reports whether offload on evict keeps st in memory: it is COMPLETE on a segment
// of an owner that offloads, and on no SSD yet (a lock-free read, for the census).
func (s *Store) AwaitsOffload(st *ObjectState) bool {
	_, _, ok := s.offloadSource(st)
	return ok
}

// QueueOffloads is QueueOffload: for each token whose object is still that object (tenant instance
// and object id), it queues the object's offload task as a PutEnd would. It returns how many
// tokens' objects have a live offload task afterwards (queued now or before).
func (s *Store) QueueOffloads(now int64, toks []ObjectToken) int {
	n := 0
	s.forTokenObjects(toks, func(t *TenantState, key string, st *ObjectState) {
		if st.HasComplete() {
			s.queueOffload(now, t, key, st)
		}
		if _, live := s.tasks.Offload(t.name, key); live {
			n++
		}
	})
	return n
}

// forTokenObjects calls fn, with the tenant's gate and the object's lock held, for each token
// whose object is still that object: its tenant open and of the token's instance, the object
// active and of the token's id (an instance or id of 0 names the current one). fn may take the
// task queue's lock (a leaf) and nothing else.
func (s *Store) forTokenObjects(toks []ObjectToken, fn func(t *TenantState, key string, st *ObjectState)) {
	for _, tok := range toks {
		t, err := s.writable(NormalizeTenant(tok.Tenant))
		if err != nil {
			continue
		}
		if e := t.dir.lookup(tok.Key); e != nil && (tok.Instance == 0 || t.instance == tok.Instance) {
			e.mu.Lock()
			if st := e.State(); e.Life() == Active && (tok.ObjectID == 0 || st.ID == tok.ObjectID) {
				fn(t, tok.Key, st)
			}
			e.mu.Unlock()
		}
		t.release()
	}
}

// PendingTotal returns how many tasks are PENDING, of every client (the queue holds at most
// MaxPendingTasks).
func (q *TaskQueue) PendingTotal() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.npending
}

// queueOffload queues spec for client, or re-aims the key's PENDING offload task at it; it does
// nothing when the key's task is PROCESSING or the queue is full.
func (q *TaskQueue) queueOffload(now int64, spec TaskSpec, client alloc.ID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pruneLocked(now)
	k := liveKey{TaskOffload, spec.Tenant, spec.Key}
	if id, ok := q.live[k]; ok {
		old := q.byID[id]
		if old.State != TaskPending || old.Client != client {
			return
		}
		nt := *old
		nt.Spec, nt.Updated = spec, now
		q.byID[id] = &nt
		return
	}
	if q.npending >= MaxPendingTasks {
		return
	}
	q.next++
	task := &Task{ID: q.next, Spec: spec, Client: client, State: TaskPending, Created: now, Updated: now}
	q.byID[task.ID] = task
	q.pending[client] = append(q.pending[client], task.ID)
	q.npending++
	q.live[k] = task.ID
}

// Offload returns the live (PENDING or PROCESSING) offload task of tenant's key, if any.
func (q *TaskQueue) Offload(tenant, key string) (Task, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	id, ok := q.live[liveKey{TaskOffload, NormalizeTenant(tenant), key}]
	if !ok {
		return Task{}, false
	}
	return *q.byID[id], true
}

// TaskCounts counts the kept tasks by kind and state: TaskCounts[kind][state].
type TaskCounts [TaskPromote + 1][TaskFailed + 1]int

// Counts counts the tasks kept now, by kind and state (for the metrics; it walks every task).
func (q *TaskQueue) Counts() TaskCounts {
	q.mu.Lock()
	defer q.mu.Unlock()
	var c TaskCounts
	for _, t := range q.byID {
		if t.Spec.Kind.Valid() && t.State >= TaskPending && t.State <= TaskFailed {
			c[t.Spec.Kind][t.State]++
		}
	}
	return c
}

// Offload messages of the tasks that end without the worker's report.
const (
	offloadGoneMessage      = "the object changed, went, or is on the SSD already: nothing to offload"
	offloadCancelledMessage = "cancelled: an upsert overwrote the object"
)

// pinOffload pins the object of an offload task its worker has just taken; false when there is
// nothing to offload: the object is gone, has a write or a replica task in progress, has no
// COMPLETE replica on the task's source segment, has another size, or is on the worker's SSD.
func (s *Store) pinOffload(now int64, task *Task) bool {
	t, err := s.writable(task.Spec.Tenant)
	if err != nil {
		return false
	}
	defer t.release()
	e := t.dir.lookup(task.Spec.Key)
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.State()
	if e.Life() != Active || st.Task != nil || st.HasProcessing() || st.Size != task.Spec.Size {
		return false
	}
	disk := alloc.LocalDiskID(task.Client)
	if anyReplica(st, func(r Replica) bool { return r.Extent.Segment == disk }) {
		return false
	}
	i := slices.IndexFunc(st.Replicas, func(r Replica) bool {
		return r.Extent.Segment == task.Spec.Source && r.Status == Complete && r.Tier == alloc.TierMemory
	})
	if i < 0 {
		return false
	}
	ns := st.next()
	ns.Task = &ReplicaTask{Kind: TaskOffload, Client: task.Client, Started: now, Source: st.Replicas[i].ID}
	s.setStateLocked(t, e, ns)
	return true
}

// settleOffload ends the live offload task of tenant's key when client holds it, SUCCESS when ok
// (the worker's report, NotifyOffload), else FAILED with msg; PENDING or PROCESSING alike.
func (q *TaskQueue) settleOffload(now int64, tenant, key string, client alloc.ID, ok bool, msg string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pruneLocked(now)
	id, live := q.live[liveKey{TaskOffload, tenant, key}]
	if !live || q.byID[id].Client != client {
		return
	}
	q.endLocked(now, id, ok, msg)
}

// cancelOffload ends the PENDING offload task of tenant's key FAILED (an upsert overwrote the
// object); a PROCESSING one is left to its worker (the object's pin refuses the upsert).
func (q *TaskQueue) cancelOffload(now int64, tenant, key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	id, live := q.live[liveKey{TaskOffload, tenant, key}]
	if !live || q.byID[id].State != TaskPending {
		return
	}
	q.endLocked(now, id, false, offloadCancelledMessage)
}

// endLocked ends task id, PENDING or PROCESSING, SUCCESS when ok else FAILED with msg (q.mu held).
// Only offload tasks end from PENDING; a drain's move never does.
func (q *TaskQueue) endLocked(now int64, id uint64, ok bool, msg string) {
	nt := *q.byID[id]
	if nt.State == TaskPending {
		ids := q.pending[nt.Client]
		if i := slices.Index(ids, id); i >= 0 {
			ids = slices.Delete(slices.Clone(ids), i, i+1)
			if len(ids) == 0 {
				delete(q.pending, nt.Client)
			} else {
				q.pending[nt.Client] = ids
			}
			q.npending--
		}
	}
	nt.State, nt.Updated, nt.Message = TaskFailed, now, msg[:min(len(msg), MaxTaskMessage)]
	if ok {
		nt.State = TaskSuccess
	}
	q.byID[id] = &nt
	q.finishLocked(&nt)
	q.pruneLocked(now)
}

// offloadPinnedBy reports whether st carries the offload pin of client (its taken offload task).
func offloadPinnedBy(st *ObjectState, client alloc.ID) bool {
	return st.Task != nil && st.Task.Kind == TaskOffload && st.Task.Client == client
}
