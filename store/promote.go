package store

import (
	"slices"

	"metad/store/alloc"
)

// Promotion on hit (TIERS.md, "Reads of disk-only objects and promotion on hit"): the cluster
// asking the holder of a disk-only object's SSD file to copy it back to memory. A promotion is a
// scheduled task of kind TaskPromote in the replicated task queue, so a leader change loses none:
//
//   - Queued by QueuePromotions, which the leader proposes for the disk-only objects its reads hit
//     past its admission filter (package service): for the owner of the object's first LOCAL_DISK
//     replica, at most one live promotion per key and MaxPromotions in flight.
//   - Taken with FetchTasks (the holder's mailbox), then started by the holder (StartPromotion):
//     one PROCESSING MEMORY replica is placed, the tenant's quota charged, and the object pinned
//     with a promote replica task (source the holder's LOCAL_DISK replica, target the new one), so
//     it is not removed, upserted or evicted while the holder writes.
//   - Ended by EndPromotion: success turns the memory replica COMPLETE, failure drops it; the
//     task ends SUCCESS or FAILED either way.
//   - Reaped per phase as every scheduled and replica task is: a task taken and not started ends
//     FAILED after the put release timeout (TaskQueue.Expire), and a started one's replica task is
//     revoked after it (RevokeTokens), its target dropped.

// MaxPromotions bounds the live promotion tasks (TIERS.md's in-flight cap).
const MaxPromotions = 50_000

// diskOnlySource returns the first COMPLETE LOCAL_DISK replica of st when st has no memory
// replica (MEMORY or NOF) and no write or replica task in progress.
func diskOnlySource(st *ObjectState) (Replica, bool) {
	if st.Task != nil || st.HasProcessing() || anyReplica(st, func(r Replica) bool { return r.Tier.InMemory() }) {
		return Replica{}, false
	}
	i := slices.IndexFunc(st.Replicas, func(r Replica) bool { return r.Tier == alloc.TierLocalDisk && r.Status == Complete })
	if i < 0 {
		return Replica{}, false
	}
	return st.Replicas[i], true
}

// DiskOnly reports whether st is on disk alone, a promotion's candidate (a lock-free read).
func DiskOnly(st *ObjectState) bool {
	_, ok := diskOnlySource(st)
	return ok
}

// QueuePromotions is QueuePromotion: for each token whose object is still that object (tenant
// instance and object id; 0 for either: the current one, as the leader's reads name it) and on disk alone, it queues a promotion task for the owner of its first
// LOCAL_DISK replica. It returns the tasks queued.
func (s *Store) QueuePromotions(now int64, toks []ObjectToken) int {
	n := 0
	s.forTokenObjects(toks, func(t *TenantState, key string, st *ObjectState) {
		if src, ok := diskOnlySource(st); ok {
			if seg, found := s.segs.Describe(src.Extent.Segment); found &&
				s.tasks.queuePromotion(now, TaskSpec{Kind: TaskPromote, Tenant: t.name, Key: key, Source: seg.ID, Size: st.Size}, seg.Owner) {
				n++
			}
		}
	})
	return n
}

// queuePromotion queues spec for client unless the key has a live promotion or MaxPromotions (or
// the queue's MaxPendingTasks) are live.
func (q *TaskQueue) queuePromotion(now int64, spec TaskSpec, client alloc.ID) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pruneLocked(now)
	k := liveKey{TaskPromote, spec.Tenant, spec.Key}
	if _, ok := q.live[k]; ok || q.promotions >= MaxPromotions || q.npending >= MaxPendingTasks {
		return false
	}
	q.next++
	task := &Task{ID: q.next, Spec: spec, Client: client, State: TaskPending, Created: now, Updated: now}
	q.byID[task.ID] = task
	q.pending[client] = append(q.pending[client], task.ID)
	q.npending++
	q.live[k] = task.ID
	q.promotions++
	return true
}

// Promotions returns how many promotion tasks are live (PENDING or PROCESSING).
func (q *TaskQueue) Promotions() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.promotions
}

// PromotionRequest starts (StartPromotion) the promotion its holder Client was given for Key.
type PromotionRequest struct {
	Tenant    string
	Client    alloc.ID
	Key       string
	Preferred []alloc.ID
	Strategy  alloc.Strategy
}

// promotionTask returns the key's promotion task that client holds, PROCESSING: TASK_NOT_FOUND
// when the key has none live, ILLEGAL_CLIENT when another client holds it, INVALID_PARAMS when it
// was not taken (FetchTasks) yet.
func (q *TaskQueue) promotionTask(tenant, key string, client alloc.ID) (Task, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	id, ok := q.live[liveKey{TaskPromote, tenant, key}]
	if !ok {
		return Task{}, objErr(TaskNotFound, tenant, key, "no promotion in progress")
	}
	t := *q.byID[id]
	switch {
	case t.Client != client:
		return Task{}, objErr(IllegalClient, tenant, key, "the promotion is client "+t.Client.String()+"'s")
	case t.State != TaskProcessing:
		return Task{}, objErr(InvalidParams, tenant, key, "the promotion is "+t.State.String()+": take it with FetchTasks first")
	}
	return t, nil
}

// CheckStartPromotion returns the rejection StartPromotion would return from the task queue and
// the object, changing nothing (not a placement that finds no room).
func (s *Store) CheckStartPromotion(req PromotionRequest) error {
	tenant := NormalizeTenant(req.Tenant)
	if _, err := s.tasks.promotionTask(tenant, req.Key, req.Client); err != nil {
		return err
	}
	t, err := s.writable(tenant)
	if err != nil {
		return err
	}
	defer t.release()
	e := t.dir.lookup(req.Key)
	if e == nil {
		return objErr(ObjectNotFound, t.name, req.Key, "object not found")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err = promotionVerdict(t, e, req)
	return err
}

// promotionVerdict is StartPromotion's verdict on e (e.mu held): the object must be on disk alone
// and on the holder's SSD; it returns the holder's LOCAL_DISK replica, the promotion's source.
func promotionVerdict(t *TenantState, e *ObjectEntry, req PromotionRequest) (Replica, error) {
	st := e.State()
	if e.Life() != Active || st == nil {
		return Replica{}, objErr(ObjectNotFound, t.name, req.Key, "object not found")
	}
	disk := alloc.LocalDiskID(req.Client)
	i := slices.IndexFunc(st.Replicas, func(r Replica) bool { return r.Extent.Segment == disk && r.Status == Complete })
	if _, ok := diskOnlySource(st); !ok || i < 0 {
		return Replica{}, objErr(InvalidParams, t.name, req.Key, "not on the holder's SSD alone, or a task is in progress: nothing to promote")
	}
	return st.Replicas[i], nil
}

// StartPromotion places the memory replica of the promotion req.Client holds for req.Key (see
// above): one MEMORY replica on the preferred segments first, the tenant's quota charged, the
// object pinned. Refusals, with nothing changed: those of promotionTask, OBJECT_NOT_FOUND,
// INVALID_PARAMS (the object is not on the holder's SSD alone), TENANT_QUOTA_EXCEEDED and
// NO_AVAILABLE_HANDLE. It returns the replica placed and the object's size.
func (s *Store) StartPromotion(now int64, seed uint64, req PromotionRequest) (Replica, uint64, error) {
	tenant := NormalizeTenant(req.Tenant)
	if _, err := s.tasks.promotionTask(tenant, req.Key, req.Client); err != nil {
		return Replica{}, 0, err
	}
	t, err := s.writable(tenant)
	if err != nil {
		return Replica{}, 0, err
	}
	defer t.release()
	e := t.dir.lookup(req.Key)
	if e == nil {
		return Replica{}, 0, objErr(ObjectNotFound, t.name, req.Key, "object not found")
	}
	e.mu.Lock()
	src, err := promotionVerdict(t, e, req)
	st := e.State()
	e.mu.Unlock()
	if err != nil {
		return Replica{}, 0, err
	}
	// Place with no object lock held, then publish if nothing moved (as a copy's targets).
	if !t.quota.TryCharge(st.Size) {
		return Replica{}, 0, objErr(TenantQuotaExceeded, t.name, req.Key, quotaMsg(t, st.Size))
	}
	pl, perr := s.segs.Place(alloc.PlaceRequest{Size: st.Size, Memory: 1, Preferred: req.Preferred, Strategy: req.Strategy, Seed: seed})
	if perr != nil || len(pl.Memory) == 0 {
		t.quota.Release(st.Size)
		if perr == nil {
			perr = alloc.ErrNoSpace
		}
		return Replica{}, 0, objErr(NoAvailableHandle, t.name, req.Key, perr.Error())
	}
	target := Replica{Extent: pl.Memory[0], Tier: alloc.TierMemory, Status: Processing}
	e.mu.Lock()
	if e.Life() != Active || e.State() != st {
		e.mu.Unlock()
		s.freeReplicas(t, []Replica{target}, st.Size, nil)
		return Replica{}, 0, objErr(InvalidWrite, t.name, req.Key, "object changed while its memory replica was placed")
	}
	target.ID = t.dir.nextReplicaID.Add(1)
	ns := st.nextWith(1)
	ns.Replicas = append(ns.Replicas, target)
	ns.Task = &ReplicaTask{Kind: TaskPromote, Client: req.Client, Started: now, Source: src.ID, Targets: []uint64{target.ID}}
	s.setStateLocked(t, e, ns)
	e.mu.Unlock()
	return target, st.Size, nil
}

// CheckEndPromotion returns the rejection EndPromotion would return, changing nothing.
func (s *Store) CheckEndPromotion(tenant, key string, client alloc.ID) error {
	_, err := s.tasks.promotionTask(NormalizeTenant(tenant), key, client)
	return err
}

// EndPromotion ends the promotion client holds for tenant's key: with success its memory replica
// turns COMPLETE, without it the replica is dropped (its quota released); the task ends SUCCESS
// or FAILED. A promotion taken and never started ends FAILED whatever success says (there is no
// replica to commit). Refusals: those of promotionTask.
func (s *Store) EndPromotion(now int64, tenant, key string, client alloc.ID, success bool) error {
	tenant = NormalizeTenant(tenant)
	task, err := s.tasks.promotionTask(tenant, key, client)
	if err != nil {
		return err
	}
	started := false
	if t, werr := s.writable(tenant); werr == nil {
		if e := t.dir.lookup(key); e != nil {
			e.mu.Lock()
			st := e.State()
			if e.Life() == Active && st.Task != nil && st.Task.Kind == TaskPromote && st.Task.Client == client {
				started = true
				if success {
					s.commitTaskLocked(t, e, st) // unlocks
				} else {
					s.dropTaskLocked(t, e, st) // unlocks
				}
			} else {
				e.mu.Unlock()
			}
		}
		t.release()
	}
	msg := "the holder reported the promotion failed"
	switch {
	case success && started:
		msg = ""
	case success:
		msg = "reported done before PromotionAllocStart placed its memory replica"
	}
	s.tasks.mu.Lock()
	s.tasks.endLocked(now, task.ID, success && started, msg)
	s.tasks.mu.Unlock()
	return nil
}
