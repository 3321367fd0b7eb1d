package store

import (
	"slices"
	"sync"
	"time"

	"metad/store/alloc"
)

// Master-scheduled tasks: work the leader assigns to a worker (a client that owns segments), which
// the worker fetches, does, and reports done. The queue is replicated state: every change is a
// command applied on every node, with the leader's time, so a task survives a leader change and a
// snapshot. The machinery is kind-agnostic; a kind adds what its Create checks and what its
// worker is told (Task's fields), and nothing else:
//
//	Create(now, TaskSpec)           -> id       PENDING in its client's queue (TASK_PENDING_LIMIT_EXCEEDED)
//	Fetch(now, client, max)         -> []Task   the client's oldest PENDING ones turn PROCESSING
//	Complete(now, client, id, ok, msg)          PROCESSING -> SUCCESS or FAILED (TASK_NOT_FOUND, ILLEGAL_CLIENT)
//	Expire(now, timeout, ids)       -> []Task   PROCESSING longer than timeout -> FAILED (the reaper)
//	Get(id)                         -> Task     any state, finished ones while they are kept
//
// The queue is reached as Store.Tasks(); its operations are methods of TaskQueue.
//
// States: PENDING -> PROCESSING -> SUCCESS | FAILED. Ids come from the queue's counter and are
// never reused. At most MaxPendingTasks are PENDING at once; finished tasks are kept for
// FinishedTaskTTL after they finished and at most MaxFinishedTasks of them (the earliest finished
// go first, ties by id), both pruned by apply with the leader's time, so every node keeps the same
// ones. A PROCESSING task stays so until its client reports it, or until the leader's reaper ends
// it FAILED with TaskTimedOutMessage once it is PROCESSING longer than the put release timeout
// since its fetch (Expire): a worker that dies with one does not hold it, or a drain waiting
// on it, forever. A PROCESSING task's Updated is its fetch time.

// Limits of the task queue.
const (
	MaxPendingTasks  = 65536
	MaxFinishedTasks = 65536
	FinishedTaskTTL  = time.Hour
	MaxFetchTasks    = 1024 // tasks one Fetch hands out at most
	MaxTaskMessage   = 4096 // bytes of a completion message kept
)

// TaskTimedOutMessage is the message of a task that Expire ended FAILED; TaskQueuedTooLongMessage
// that of an offload or promotion Expire ended while it was still PENDING.
const (
	TaskTimedOutMessage      = "timed out: PROCESSING longer than the put release timeout since its fetch"
	TaskQueuedTooLongMessage = "timed out: PENDING longer than the put release timeout (its worker does not fetch it)"
)

// expiresQueued reports whether a PENDING task of kind k expires too: offloads and promotions,
// which the cluster queued for a worker that may never poll, and which would hold their key's one
// live task (and, for promotions, a place among MaxPromotions) for good.
func expiresQueued(k TaskKind) bool { return k == TaskOffload || k == TaskPromote }

// TaskState is where a scheduled task is in its life.
type TaskState uint8

const (
	TaskPending    TaskState = 1 // created, waiting in its client's queue
	TaskProcessing TaskState = 2 // fetched by its client
	TaskSuccess    TaskState = 3 // its client reported success (final)
	TaskFailed     TaskState = 4 // its client reported failure (final)
)

func (s TaskState) String() string {
	switch s {
	case TaskPending:
		return "PENDING"
	case TaskProcessing:
		return "PROCESSING"
	case TaskSuccess:
		return "SUCCESS"
	case TaskFailed:
		return "FAILED"
	}
	return "UNKNOWN"
}

// Finished reports whether s is final.
func (s TaskState) Finished() bool { return s == TaskSuccess || s == TaskFailed }

// TaskSpec is what a task is created with. For TaskCopy and TaskMove: the object (Tenant, Key),
// the source segment (zero: the segment of its first COMPLETE replica), and the targets (none
// named: Replicas of them, placed by the worker's CopyStart or MoveStart). The task goes to the
// client that owns the source segment.
type TaskSpec struct {
	Kind     TaskKind
	Tenant   string
	Key      string
	Source   alloc.ID
	Targets  []alloc.ID
	Replicas int
	Drain    uint64 // the drain job that scheduled it (DrainTable.ScheduleMoves); 0: none
	Size     uint64 // TaskOffload: the object's size
}

// Task is one scheduled task. A *Task inside the queue is immutable: every change publishes a new
// one, so Get and a snapshot capture may hold it with no lock.
type Task struct {
	ID      uint64
	Spec    TaskSpec // Source resolved at Create
	Client  alloc.ID // the worker it is assigned to
	State   TaskState
	Created int64  // leader time, unix ns
	Updated int64  // leader time of its last change, unix ns
	Message string // the worker's completion message
}

// TaskQueue holds the scheduled tasks. Concurrency contract: mu guards every field but s; it is a
// leaf lock (nothing is acquired under it), taken by apply and by the leader's reads. s, fixed at
// construction, is the store whose objects and segments Create checks and whose drain table
// Complete and Expire report to, each with mu released.
type TaskQueue struct {
	s        *Store
	mu       sync.Mutex
	next     uint64                // last id handed out
	byID     map[uint64]*Task      // every task kept
	pending  map[alloc.ID][]uint64 // per client, PENDING ids in creation order
	npending int
	finished []uint64 // finished ids, in the order they finished
	// live maps an object to its live (PENDING or PROCESSING) offload or promotion task
	// (offload.go, promote.go): lookups only, never iterated.
	live map[liveKey]uint64
	// promotions counts the live promotion tasks (at most MaxPromotions).
	promotions int
}

func newTaskQueue(s *Store) *TaskQueue {
	return &TaskQueue{s: s, byID: map[uint64]*Task{}, pending: map[alloc.ID][]uint64{}, live: map[liveKey]uint64{}}
}

func taskErr(r Reason, id uint64, what string) *Error {
	return errf(r, "task %d: %s", id, what)
}

// Create validates spec against the state, assigns the task to the owner of its source segment
// and queues it PENDING. Refusals, with nothing changed: INVALID_PARAMS (an unknown kind, a
// bad field), TENANT_NOT_REGISTERED, OBJECT_NOT_FOUND, REPLICA_NOT_FOUND (no COMPLETE replica on
// the source segment), SEGMENT_NOT_FOUND (a named target not mounted), TASK_PENDING_LIMIT_EXCEEDED.
func (q *TaskQueue) Create(now int64, spec TaskSpec) (uint64, error) {
	s := q.s
	if err := s.checkTask(&spec); err != nil {
		return 0, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pruneLocked(now)
	if q.npending >= MaxPendingTasks {
		return 0, errf(TaskPendingLimitExceeded, "tenant %q key %q: %d tasks pending, at most %d", spec.Tenant, spec.Key, q.npending, MaxPendingTasks)
	}
	owner, _ := s.segs.Get(spec.Source) // checkTask found it; the registry lock is a leaf too
	q.next++
	task := &Task{ID: q.next, Spec: spec, Client: owner.Owner, State: TaskPending, Created: now, Updated: now}
	q.byID[task.ID] = task
	q.pending[task.Client] = append(q.pending[task.Client], task.ID)
	q.npending++
	return task.ID, nil
}

// CheckCreate reports whether the state refuses spec (Create), but for the pending limit. The
// leader refuses from it without a log entry; it changes nothing.
func (q *TaskQueue) CheckCreate(spec TaskSpec) error {
	return q.s.checkTask(&spec)
}

// checkTask validates spec and checks it against the object and segments; it resolves a zero
// Source to the segment of the object's first COMPLETE replica.
func (s *Store) checkTask(spec *TaskSpec) error {
	spec.Tenant = NormalizeTenant(spec.Tenant)
	req := ReplicaTaskRequest{Tenant: spec.Tenant, Client: alloc.ID{0: 1}, Key: spec.Key, Kind: spec.Kind,
		Source: spec.Source, Targets: spec.Targets, Count: spec.Replicas}
	if req.Source.IsZero() {
		req.Source = alloc.ID{0: 1} // resolved below
	}
	if err := req.validate(); err != nil {
		return err
	}
	spec.Replicas = req.Count
	t, err := s.writable(spec.Tenant)
	if err != nil {
		return err
	}
	defer t.release()
	e, st, err := s.taskTarget(t, spec.Key)
	if err != nil {
		return err
	}
	e.mu.Unlock() // st is immutable
	// A copy or move reads a MEMORY, NOF or DFS replica (a LOCAL_DISK or DISK one is a file).
	source := func(r Replica) bool { return r.Status == Complete && r.Tier.Placeable() }
	if spec.Source.IsZero() {
		i := slices.IndexFunc(st.Replicas, source)
		if i < 0 {
			return objErr(ReplicaNotFound, t.name, spec.Key, "no COMPLETE MEMORY, NOF or DFS replica")
		}
		spec.Source = st.Replicas[i].Extent.Segment
	} else if !slices.ContainsFunc(st.Replicas, func(r Replica) bool { return r.Extent.Segment == spec.Source && source(r) }) {
		return objErr(ReplicaNotFound, t.name, spec.Key, "no COMPLETE MEMORY, NOF or DFS replica on source segment "+spec.Source.String())
	}
	if _, ok := s.segs.Get(spec.Source); !ok {
		return objErr(SegmentNotFound, t.name, spec.Key, "source segment "+spec.Source.String()+" is not mounted")
	}
	for _, id := range spec.Targets {
		if _, ok := s.segs.Get(id); !ok {
			return objErr(SegmentNotFound, t.name, spec.Key, "target_segment_ids: segment "+id.String()+" is not mounted")
		}
	}
	return nil
}

// Fetch turns up to max (1..MaxFetchTasks) of the client's oldest PENDING tasks PROCESSING and
// returns them, oldest first; none is no error. An offload task pins its object as it is taken
// (Store.pinOffload); one with nothing left to offload ends FAILED instead and is not returned.
func (q *TaskQueue) Fetch(now int64, client alloc.ID, max int) ([]Task, error) {
	out, err := q.fetch(now, client, max)
	if err != nil {
		return nil, err
	}
	kept := out[:0]
	for i := range out {
		if out[i].Spec.Kind != TaskOffload || q.s.pinOffload(now, &out[i]) {
			kept = append(kept, out[i])
			continue
		}
		q.mu.Lock()
		q.endLocked(now, out[i].ID, false, offloadGoneMessage)
		q.mu.Unlock()
	}
	return kept, nil
}

func (q *TaskQueue) fetch(now int64, client alloc.ID, max int) ([]Task, error) {
	if err := ValidateClient(client); err != nil {
		return nil, err
	}
	if max < 1 || max > MaxFetchTasks {
		return nil, errf(InvalidParams, "batch: %d not in 1..%d", max, MaxFetchTasks)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pruneLocked(now)
	ids := q.pending[client]
	n := min(max, len(ids))
	out := make([]Task, 0, n)
	for _, id := range ids[:n] {
		nt := *q.byID[id]
		nt.State, nt.Updated = TaskProcessing, now
		q.byID[id] = &nt
		out = append(out, nt)
	}
	if n == len(ids) {
		delete(q.pending, client)
	} else {
		q.pending[client] = slices.Clone(ids[n:])
	}
	q.npending -= n
	return out, nil
}

// Pending returns how many PENDING tasks the client's queue holds (the leader answers an empty
// Fetch from it without a log entry).
func (q *TaskQueue) Pending(client alloc.ID) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending[client])
}

// Complete records the outcome of a PROCESSING task its client reports: SUCCESS when ok, else
// FAILED, with msg (cut to MaxTaskMessage bytes); a drain job's task is counted for its job.
// Refusals: TASK_NOT_FOUND (no such task kept), ILLEGAL_CLIENT (assigned to another client),
// INVALID_PARAMS (not PROCESSING).
func (q *TaskQueue) Complete(now int64, client alloc.ID, id uint64, ok bool, msg string) error {
	q.mu.Lock()
	q.pruneLocked(now)
	if err := q.completableLocked(client, id); err != nil {
		q.mu.Unlock()
		return err
	}
	nt := *q.byID[id]
	nt.State, nt.Updated, nt.Message = TaskFailed, now, msg[:min(len(msg), MaxTaskMessage)]
	if ok {
		nt.State = TaskSuccess
	}
	q.byID[id] = &nt
	q.finishLocked(&nt)
	q.pruneLocked(now)
	q.mu.Unlock()
	if nt.Spec.Drain != 0 {
		q.s.drains.taskFinished(now, id, ok) // the drain table's lock is a leaf, never taken under q.mu
	}
	return nil
}

// Expire ends as FAILED, with TaskTimedOutMessage, each task of ids that is PROCESSING and was
// fetched more than timeout (ns) before now, as a FAILED report by its client would (a drain counts
// it failed), and with TaskQueuedTooLongMessage each offload or promotion of ids still PENDING more
// than timeout after it was queued; it skips every other id (unknown, another state, not yet
// expired, a repeat). It returns the tasks it ended, in ids order.
func (q *TaskQueue) Expire(now, timeout int64, ids []uint64) []Task {
	q.mu.Lock()
	q.pruneLocked(now)
	var out []Task
	for _, id := range ids {
		task := q.byID[id]
		if task != nil && task.State == TaskPending && expiresQueued(task.Spec.Kind) && now-task.Updated > timeout {
			q.endLocked(now, id, false, TaskQueuedTooLongMessage)
			out = append(out, *q.byID[id])
			continue
		}
		if task == nil || task.State != TaskProcessing || now-task.Updated <= timeout {
			continue
		}
		nt := *task
		nt.State, nt.Updated, nt.Message = TaskFailed, now, TaskTimedOutMessage
		q.byID[id] = &nt
		q.finishLocked(&nt)
		out = append(out, nt)
	}
	q.pruneLocked(now)
	q.mu.Unlock()
	for _, t := range out {
		if t.Spec.Drain != 0 {
			q.s.drains.taskFinished(now, t.ID, false) // the drain table's lock is a leaf, never taken under q.mu
		}
	}
	return out
}

// Expired returns the ids, ascending, of the tasks PROCESSING longer than timeout (ns) at now since
// their fetch, and of the offloads and promotions PENDING longer than it since they were queued
// (the reaper's census); it changes nothing.
func (q *TaskQueue) Expired(now, timeout int64) []uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	var ids []uint64
	for id, t := range q.byID {
		if (t.State == TaskProcessing || (t.State == TaskPending && expiresQueued(t.Spec.Kind))) && now-t.Updated > timeout {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// finishLocked records a finished task in q.finished, which is kept in (Updated, ID) order: the
// order pruning drops them in, the same on a node that restored them from a snapshot. An offload
// task is no longer its object's live one.
func (q *TaskQueue) finishLocked(t *Task) {
	if k := (liveKey{t.Spec.Kind, t.Spec.Tenant, t.Spec.Key}); q.live[k] == t.ID && (t.Spec.Kind == TaskOffload || t.Spec.Kind == TaskPromote) {
		delete(q.live, k)
		if t.Spec.Kind == TaskPromote {
			q.promotions--
		}
	}
	i, _ := slices.BinarySearchFunc(q.finished, t, func(id uint64, t *Task) int {
		if c := compareI64(q.byID[id].Updated, t.Updated); c != 0 {
			return c
		}
		return compareU64(id, t.ID)
	})
	q.finished = slices.Insert(q.finished, i, t.ID)
}

// CheckComplete reports whether the state refuses a Complete; it changes nothing.
func (q *TaskQueue) CheckComplete(client alloc.ID, id uint64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.completableLocked(client, id)
}

func (q *TaskQueue) completableLocked(client alloc.ID, id uint64) error {
	task := q.byID[id]
	switch {
	case task == nil:
		return taskErr(TaskNotFound, id, "not found")
	case task.Client != client:
		return taskErr(IllegalClient, id, "assigned to client "+task.Client.String()+", not "+client.String())
	case task.State != TaskProcessing:
		return taskErr(InvalidParams, id, "is "+task.State.String()+", not PROCESSING")
	case task.Spec.Kind == TaskOffload:
		return taskErr(InvalidParams, id, "is an offload task: its worker reports it with NotifyOffload")
	case task.Spec.Kind == TaskPromote:
		return taskErr(InvalidParams, id, "is a promotion: its holder reports it with NotifyPromotion")
	}
	return nil
}

// Get returns a task that is kept (TASK_NOT_FOUND otherwise). A finished task past
// FinishedTaskTTL may still be returned until the next change prunes it.
func (q *TaskQueue) Get(id uint64) (Task, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	task := q.byID[id]
	if task == nil {
		return Task{}, taskErr(TaskNotFound, id, "not found")
	}
	return *task, nil
}

// pruneLocked drops the finished tasks past FinishedTaskTTL at now, and the oldest past
// MaxFinishedTasks.
func (q *TaskQueue) pruneLocked(now int64) {
	drop := 0
	for drop < len(q.finished) {
		task := q.byID[q.finished[drop]]
		if len(q.finished)-drop <= MaxFinishedTasks && now-task.Updated <= int64(FinishedTaskTTL) {
			break
		}
		delete(q.byID, task.ID)
		drop++
	}
	if drop > 0 {
		q.finished = slices.Delete(q.finished, 0, drop)
	}
}

// List returns every task kept, by id, and the id counter (snapshot capture).
func (q *TaskQueue) List() (tasks []Task, next uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	tasks = make([]Task, 0, len(q.byID))
	for _, t := range q.byID {
		tasks = append(tasks, *t)
	}
	slices.SortFunc(tasks, func(a, b Task) int { return compareU64(a.ID, b.ID) })
	return tasks, q.next
}

func compareU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Restore installs tasks (ids ascending, each below or at next) and the id counter into an empty
// queue (snapshot restore): pending ones queue in id order.
func (q *TaskQueue) Restore(tasks []Task, next uint64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.byID) != 0 || q.next != 0 {
		return errf(InvalidParams, "task queue not empty")
	}
	last := uint64(0)
	for i := range tasks {
		t := tasks[i]
		if t.ID <= last || t.ID > next || !t.Spec.Kind.Valid() || t.State < TaskPending || t.State > TaskFailed || t.Client.IsZero() {
			return errf(InvalidParams, "task %d malformed", t.ID)
		}
		last = t.ID
		q.byID[t.ID] = &t
		switch {
		case t.State == TaskPending:
			q.pending[t.Client] = append(q.pending[t.Client], t.ID)
			q.npending++
		case t.State.Finished():
			q.finishLocked(&t)
		}
		if (t.Spec.Kind == TaskOffload || t.Spec.Kind == TaskPromote) && !t.State.Finished() {
			q.live[liveKey{t.Spec.Kind, t.Spec.Tenant, t.Spec.Key}] = t.ID
			if t.Spec.Kind == TaskPromote {
				q.promotions++
			}
		}
	}
	q.next = next
	return nil
}

func compareI64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
