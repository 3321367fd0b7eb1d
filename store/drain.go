package store

import (
	"slices"
	"sync"

	"metad/store/alloc"
)

// Drain jobs: move every object off a set of segments so that they can be unmounted without
// losing a block. A job is replicated state, changed only by apply with the leader's time, so it
// survives a leader change and a snapshot; the leader drives it from its loop:
//
//	Start(now, spec)                  -> id   the segments close (no new allocation) and the job RUNS
//	ScheduleMoves(now, id, mv)        -> ids  scheduled move tasks (TaskQueue), at most MaxConcurrency in flight
//	TaskQueue.Complete of a job's task        SUCCESS counts Moved, FAILED counts Failed; leaves InFlight
//	Finish(now, id)                           RUNNING -> DONE once nothing is in flight and the segments hold no replica
//	Cancel(now, id)                           RUNNING -> CANCELLED; the segments open again
//
// The table is reached as Store.Drains(); its operations are methods of DrainTable.
//
// The moves are ordinary scheduled move tasks, assigned to the worker that owns the source
// segment (it runs MoveStart, copies the bytes, MoveEnd, and reports with MarkTaskToComplete), so
// a move is group-safe (the object keeps its group and its replica count) and protected as every
// move is. A job that failed a move stays RUNNING: the leader schedules the object again on a
// later round, and the operator sees the failures and may cancel. A task still in flight when a
// job is cancelled runs to its end and is still counted.

// Limits of drain jobs.
const (
	MaxDrainSegments        = 256  // segments one job drains, and targets it names, at most
	MaxDrainConcurrency     = 1024 // moves one job keeps in flight at most
	DefaultDrainConcurrency = 16
	MaxDrainJobs            = 1024 // jobs kept; the earliest finished go first past it
)

// DrainState is where a drain job is in its life.
type DrainState uint8

const (
	DrainRunning   DrainState = 1 // moving objects off its segments
	DrainDone      DrainState = 2 // its segments held no replica and no move was in flight (final)
	DrainCancelled DrainState = 3 // cancelled by an operator (final)
)

func (s DrainState) String() string {
	switch s {
	case DrainRunning:
		return "RUNNING"
	case DrainDone:
		return "DONE"
	case DrainCancelled:
		return "CANCELLED"
	}
	return "UNKNOWN"
}

// DrainSpec is what a drain job is started with: the segments to empty, the segments its moves
// go to (none: placed by each move as a put would be, closing segments never), and how many moves
// it keeps in flight (1..MaxDrainConcurrency).
type DrainSpec struct {
	Segments       []alloc.ID
	Targets        []alloc.ID
	MaxConcurrency int
}

// DrainMove is one move the leader schedules for a job: the object, the drained segment that
// holds its COMPLETE replica, and the target (zero: placed by the worker's MoveStart).
type DrainMove struct {
	Tenant string
	Key    string
	Source alloc.ID
	Target alloc.ID
}

// DrainJob is one drain job. A *DrainJob inside the table is immutable: every change publishes a
// new one, so status reads and a snapshot capture may hold it with no lock.
type DrainJob struct {
	ID       uint64
	Spec     DrainSpec
	State    DrainState
	Created  int64    // leader time, unix ns
	Updated  int64    // leader time of its last change, unix ns
	Moved    uint64   // move tasks that succeeded
	Failed   uint64   // move tasks that failed (their objects are scheduled again)
	InFlight []uint64 // its scheduled tasks not finished, ascending
}

// Drains reports whether the running job drains segment id.
func (j *DrainJob) Drains(id alloc.ID) bool { return slices.Contains(j.Spec.Segments, id) }

// DrainTable holds the drain jobs. Concurrency contract: mu guards every field but s; it is a leaf
// lock (nothing is acquired under it), taken by apply and by the leader's reads. s, fixed at
// construction, is the store whose segments, arenas, task queue and objects the jobs act on, each
// reached with mu released.
type DrainTable struct {
	s    *Store
	mu   sync.Mutex
	next uint64               // last id handed out
	byID map[uint64]*DrainJob // every job kept
	task map[uint64]uint64    // in-flight task id -> its job
}

func newDrainTable(s *Store) *DrainTable {
	return &DrainTable{s: s, byID: map[uint64]*DrainJob{}, task: map[uint64]uint64{}}
}

func drainErr(r Reason, id uint64, what string) *Error { return errf(r, "drain %d: %s", id, what) }

// Validate checks the spec's fields alone (the service checks a request with it).
func (sp *DrainSpec) Validate() error {
	if len(sp.Segments) == 0 || len(sp.Segments) > MaxDrainSegments {
		return errf(InvalidParams, "segment_ids: %d segments, want 1..%d", len(sp.Segments), MaxDrainSegments)
	}
	if len(sp.Targets) > MaxDrainSegments {
		return errf(InvalidParams, "target_segment_ids: %d segments, at most %d", len(sp.Targets), MaxDrainSegments)
	}
	if sp.MaxConcurrency < 1 || sp.MaxConcurrency > MaxDrainConcurrency {
		return errf(InvalidParams, "max_concurrency: %d not in 1..%d", sp.MaxConcurrency, MaxDrainConcurrency)
	}
	for i, id := range sp.Segments {
		if id.IsZero() {
			return errf(InvalidParams, "segment_ids: a zero segment id")
		}
		if slices.Contains(sp.Segments[:i], id) {
			return errf(InvalidParams, "segment_ids: segment %s named twice", id)
		}
	}
	for i, id := range sp.Targets {
		if id.IsZero() {
			return errf(InvalidParams, "target_segment_ids: a zero segment id")
		}
		if slices.Contains(sp.Targets[:i], id) {
			return errf(InvalidParams, "target_segment_ids: segment %s named twice", id)
		}
		if slices.Contains(sp.Segments, id) {
			return errf(InvalidParams, "target_segment_ids: segment %s is also drained", id)
		}
	}
	return nil
}

// startVerdict checks spec against the state: every segment mounted (SEGMENT_NOT_FOUND) and of a
// placeable tier, none drained by a running job (SEGMENT_DRAINING), every target mounted, of a
// placeable tier and open (SEGMENT_NOT_FOUND, INVALID_PARAMS), room for the job (INVALID_PARAMS).
func (d *DrainTable) startVerdict(spec *DrainSpec) error {
	s := d.s
	if err := spec.Validate(); err != nil {
		return err
	}
	for _, id := range spec.Segments {
		info, ok := s.segs.Get(id)
		if !ok {
			return errf(SegmentNotFound, "segment_ids: segment %s is not mounted", id)
		}
		if !info.Tier.Placeable() {
			return errf(InvalidParams, "segment_ids: segment %s is a %s segment; its owner's evictions empty it", id, info.Tier)
		}
	}
	for _, id := range spec.Targets {
		info, ok := s.segs.Get(id)
		if !ok {
			return errf(SegmentNotFound, "target_segment_ids: segment %s is not mounted", id)
		}
		if !info.Tier.Placeable() {
			return errf(InvalidParams, "target_segment_ids: segment %s is a %s segment and takes no placement", id, info.Tier)
		}
		if info.Closing {
			return errf(InvalidParams, "target_segment_ids: segment %s is closing", id)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	running := 0
	for _, j := range d.byID {
		if j.State != DrainRunning {
			continue
		}
		running++
		for _, id := range spec.Segments {
			if j.Drains(id) {
				return errf(SegmentDraining, "segment_ids: segment %s is drained by job %d", id, j.ID)
			}
		}
	}
	if running >= MaxDrainJobs {
		return errf(InvalidParams, "%d drain jobs running, at most %d", running, MaxDrainJobs)
	}
	return nil
}

// Start starts a drain job: its segments close at once (alloc.Registry.SetClosing: no new
// allocation, replicas stay readable) and the job is RUNNING. Refusals, with nothing changed:
// INVALID_PARAMS, SEGMENT_NOT_FOUND, SEGMENT_DRAINING (see startVerdict).
func (d *DrainTable) Start(now int64, spec DrainSpec) (uint64, error) {
	s := d.s
	spec.Segments, spec.Targets = slices.Clone(spec.Segments), slices.Clone(spec.Targets)
	if err := d.startVerdict(&spec); err != nil {
		return 0, err
	}
	for _, id := range spec.Segments {
		if err := s.segs.SetClosing(id, true); err != nil {
			panic("store: a segment checked mounted is gone: " + err.Error())
		}
		s.arenas.retireOn(id)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next++
	d.byID[d.next] = &DrainJob{ID: d.next, Spec: spec, State: DrainRunning, Created: now, Updated: now}
	d.pruneLocked()
	return d.next, nil
}

// CheckStart reports whether the state refuses Start(spec); it changes nothing.
func (d *DrainTable) CheckStart(spec DrainSpec) error { return d.startVerdict(&spec) }

// Cancel cancels a running job: it stops scheduling moves, and its segments open again
// (unless a graceful unmount is scheduled for one: alloc.Registry.SetClosing). A job that already
// finished is left as it is and returned, so a retry succeeds. DRAIN_NOT_FOUND when none is kept.
func (d *DrainTable) Cancel(now int64, id uint64) (DrainJob, error) {
	d.mu.Lock()
	j := d.byID[id]
	if j == nil {
		d.mu.Unlock()
		return DrainJob{}, drainErr(DrainNotFound, id, "not found")
	}
	if j.State != DrainRunning {
		d.mu.Unlock()
		return *j, nil
	}
	nj := *j
	nj.State, nj.Updated = DrainCancelled, now
	d.byID[id] = &nj
	d.mu.Unlock()
	for _, seg := range nj.Spec.Segments {
		_ = d.s.segs.SetClosing(seg, false) // a segment unmounted since is simply gone
	}
	return nj, nil
}

// CheckCancel reports whether the state refuses Cancel(id); it changes nothing.
func (d *DrainTable) CheckCancel(id uint64) error {
	_, err := d.Get(id)
	return err
}

// Get returns a kept job (DRAIN_NOT_FOUND otherwise).
func (d *DrainTable) Get(id uint64) (DrainJob, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if j := d.byID[id]; j != nil {
		return *j, nil
	}
	return DrainJob{}, drainErr(DrainNotFound, id, "not found")
}

// List returns every job kept, by id, and the id counter (status, snapshot capture).
func (d *DrainTable) List() (jobs []DrainJob, next uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	jobs = make([]DrainJob, 0, len(d.byID))
	for _, j := range d.byID {
		jobs = append(jobs, *j)
	}
	slices.SortFunc(jobs, func(a, b DrainJob) int { return compareU64(a.ID, b.ID) })
	return jobs, d.next
}

// ScheduleMoves creates a move task (TaskQueue) for each of mv, in order, on behalf of the
// running job id, while the job has fewer than MaxConcurrency in flight; each created task joins
// the job's InFlight. It returns one error per item (nil: created; the task ids are the job's new
// InFlight entries). A move whose source no longer holds the object's COMPLETE replica, or whose
// object is gone, is refused as TaskQueue.Create refuses it; an item past the job's concurrency is
// INVALID_PARAMS. The whole command is refused with DRAIN_NOT_FOUND or DRAIN_NOT_RUNNING, or
// INVALID_PARAMS for a source the job does not drain.
func (d *DrainTable) ScheduleMoves(now int64, id uint64, mv []DrainMove) ([]uint64, []error, error) {
	j, err := d.Get(id)
	if err != nil {
		return nil, nil, err
	}
	if j.State != DrainRunning {
		return nil, nil, drainErr(DrainNotRunning, id, "is "+j.State.String())
	}
	for _, m := range mv {
		if !j.Drains(m.Source) {
			return nil, nil, drainErr(InvalidParams, id, "moves: source segment "+m.Source.String()+" is not drained by the job")
		}
	}
	room := j.Spec.MaxConcurrency - len(j.InFlight)
	ids := make([]uint64, len(mv))
	errs := make([]error, len(mv))
	var made []uint64
	for i, m := range mv {
		if room <= 0 {
			errs[i] = drainErr(InvalidParams, id, "moves: past max_concurrency")
			continue
		}
		spec := TaskSpec{Kind: TaskMove, Tenant: m.Tenant, Key: m.Key, Source: m.Source, Drain: id}
		if !m.Target.IsZero() {
			spec.Targets = []alloc.ID{m.Target}
		}
		tid, err := d.s.tasks.Create(now, spec)
		if err != nil {
			errs[i] = err
			continue
		}
		ids[i] = tid
		made = append(made, tid)
		room--
	}
	if len(made) > 0 {
		d.mu.Lock()
		nj := *d.byID[id]
		nj.InFlight = append(slices.Clone(nj.InFlight), made...) // task ids only grow
		nj.Updated = now
		d.byID[id] = &nj
		for _, tid := range made {
			d.task[tid] = id
		}
		d.mu.Unlock()
	}
	return ids, errs, nil
}

// taskFinished records the outcome of task tid in the job it belongs to, if any (called by
// TaskQueue.Complete and Expire, after the task queue's lock is released).
func (d *DrainTable) taskFinished(now int64, tid uint64, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id, found := d.task[tid]
	if !found {
		return
	}
	delete(d.task, tid)
	j := d.byID[id]
	if j == nil {
		return
	}
	nj := *j
	nj.InFlight = slices.DeleteFunc(slices.Clone(nj.InFlight), func(x uint64) bool { return x == tid })
	if ok {
		nj.Moved++
	} else {
		nj.Failed++
	}
	nj.Updated = now
	d.byID[id] = &nj
}

// Finish ends a running job once nothing is in flight and none of its segments holds a
// replica (a segment unmounted since holds none): RUNNING -> DONE. Its segments stay closing until
// they are unmounted. Refusals: DRAIN_NOT_FOUND, DRAIN_NOT_RUNNING, INVALID_PARAMS (a move in
// flight, or a replica left).
func (d *DrainTable) Finish(now int64, id uint64) error {
	if err := d.finishVerdict(id); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	nj := *d.byID[id]
	nj.State, nj.Updated = DrainDone, now
	d.byID[id] = &nj
	d.pruneLocked()
	return nil
}

// CheckFinish reports whether the state refuses Finish(id); it changes nothing.
func (d *DrainTable) CheckFinish(id uint64) error { return d.finishVerdict(id) }

func (d *DrainTable) finishVerdict(id uint64) error {
	j, err := d.Get(id)
	if err != nil {
		return err
	}
	if j.State != DrainRunning {
		return drainErr(DrainNotRunning, id, "is "+j.State.String())
	}
	if len(j.InFlight) > 0 {
		return drainErr(InvalidParams, id, "moves in flight")
	}
	for _, seg := range j.Spec.Segments {
		if info, ok := d.s.segs.Get(seg); ok && info.Used > 0 {
			return drainErr(InvalidParams, id, "segment "+seg.String()+" still holds replicas")
		}
	}
	return nil
}

// pruneLocked drops the earliest finished jobs (by Updated, then id) past MaxDrainJobs.
func (d *DrainTable) pruneLocked() {
	if len(d.byID) <= MaxDrainJobs {
		return
	}
	var done []*DrainJob
	for _, j := range d.byID {
		if j.State != DrainRunning {
			done = append(done, j)
		}
	}
	slices.SortFunc(done, func(a, b *DrainJob) int {
		if c := compareI64(a.Updated, b.Updated); c != 0 {
			return c
		}
		return compareU64(a.ID, b.ID)
	})
	for _, j := range done[:min(len(done), len(d.byID)-MaxDrainJobs)] {
		delete(d.byID, j.ID)
	}
}

// Restore installs jobs (ids ascending, each at or below next) and the id counter into an
// empty table (snapshot restore, after TaskQueue.Restore): every in-flight task must be kept and
// unfinished.
func (d *DrainTable) Restore(jobs []DrainJob, next uint64) error {
	tasks, _ := d.s.tasks.List() // before d.mu: the two locks are never held together
	unfinished := make(map[uint64]uint64, len(tasks))
	for _, t := range tasks {
		if !t.State.Finished() {
			unfinished[t.ID] = t.Spec.Drain
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.byID) != 0 || d.next != 0 {
		return errf(InvalidParams, "drain table not empty")
	}
	last := uint64(0)
	for i := range jobs {
		j := jobs[i]
		if j.ID <= last || j.ID > next || j.State < DrainRunning || j.State > DrainCancelled {
			return errf(InvalidParams, "drain job %d malformed", j.ID)
		}
		if err := j.Spec.Validate(); err != nil {
			return errf(InvalidParams, "drain job %d: %v", j.ID, err)
		}
		last = j.ID
		for _, tid := range j.InFlight {
			if job, ok := unfinished[tid]; !ok || job != j.ID || d.task[tid] != 0 {
				return errf(InvalidParams, "drain job %d: in-flight task %d is not an unfinished task of the job", j.ID, tid)
			}
			d.task[tid] = j.ID
		}
		d.byID[j.ID] = &j
	}
	d.next = next
	return nil
}

// Candidates is the leader's choice of the next moves of running job j (a lock-free census,
// a hint: TaskQueue.Create and each move's apply decide again). It returns up to limit objects that have
// a COMPLETE replica on one of j's segments and can be moved now, in census order: no move of it
// in flight for the job, no copy or move in progress, no replica PROCESSING (a write or a task not
// done), not marked for unlink, and not leased at now (LeaseDeadline and LeaseFloor: a reader
// keeps the source its lease covers until the lease ends, as a removal waits for it). A move's
// target is the first of the job's targets, in turn, that holds no replica of the object; none
// (zero) when the job names none or every one holds a replica, and MoveStart places it then.
// left counts the objects with any replica on j's segments (the job's progress), leased those
// passed over for a lease. It visits every object: a job costs one census per call.
func (d *DrainTable) Candidates(j DrainJob, now int64, limit int) (moves []DrainMove, left, leased int) {
	s := d.s
	busy := make(map[[2]string]struct{}, len(j.InFlight))
	for _, tid := range j.InFlight {
		if t, err := s.tasks.Get(tid); err == nil {
			busy[[2]string{t.Spec.Tenant, t.Spec.Key}] = struct{}{}
		}
	}
	floor := s.LeaseFloor()
	turn := 0
	s.VisitHandles(0, func(hs []ObjectHandle) bool {
		for _, h := range hs {
			st := h.State()
			if st == nil || h.Life() != Active || h.Marked() {
				continue
			}
			src := -1
			for i, r := range st.Replicas {
				if r.Status == Complete && j.Drains(r.Extent.Segment) {
					src = i
					break
				}
			}
			if anyReplica(st, func(r Replica) bool { return j.Drains(r.Extent.Segment) }) {
				left++
			}
			if src < 0 || len(moves) >= limit {
				continue
			}
			if st.Task != nil || anyReplica(st, func(r Replica) bool { return r.Status != Complete }) {
				continue
			}
			if _, ok := busy[[2]string{h.Tenant.name, h.Entry.key}]; ok {
				continue
			}
			if now < max(h.LeaseDeadline(), floor) {
				leased++
				continue
			}
			m := DrainMove{Tenant: h.Tenant.name, Key: h.Entry.key, Source: st.Replicas[src].Extent.Segment}
			for k := range j.Spec.Targets {
				id := j.Spec.Targets[(turn+k)%len(j.Spec.Targets)]
				if !anyReplica(st, func(r Replica) bool { return r.Extent.Segment == id }) {
					m.Target, turn = id, turn+k+1
					break
				}
			}
			moves = append(moves, m)
		}
		return true
	})
	return moves, left, leased
}
