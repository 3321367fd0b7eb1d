package store

import (
	"fmt"
	"slices"
	"testing"

	"metad/store/alloc"
)

// drainFixture: three MEMORY segments of client1; tenant "a" with n objects of 1000 bytes on
// segment 1 (two of them in group "g").
func drainFixture(t *testing.T, n int) *Store {
	t.Helper()
	s := newTestStore(t)
	for k := byte(1); k <= 3; k++ {
		mount(t, s, k, alloc.TierMemory, 1<<20)
	}
	if _, err := s.RegisterTenant("a", 0); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		group := ""
		if i < 2 {
			group = "g"
		}
		r := putReq("a", fmt.Sprintf("k%02d", i), group, 1000)
		r.Config.Preferred = []alloc.ID{segID(1)}
		if _, err := s.PutStart(sec, 1, r); err != nil {
			t.Fatal(err)
		}
		if err := s.PutEnd(sec, PutEndRequest{Tenant: "a", Client: client1, Key: r.Key}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// runWorker plays client1's worker: it fetches its tasks and runs each move (MoveStart, MoveEnd,
// MarkTaskToComplete), as a worker that copies the bytes would.
func runWorker(t *testing.T, s *Store, now int64) {
	t.Helper()
	tasks, err := s.Tasks().Fetch(now, client1, MaxFetchTasks)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		req := ReplicaTaskRequest{Tenant: task.Spec.Tenant, Client: client1, Key: task.Spec.Key, Kind: TaskMove,
			Source: task.Spec.Source, Targets: task.Spec.Targets}
		_, err := s.StartReplicaTask(now, uint64(now), req)
		if err == nil {
			err = s.EndReplicaTask(now, ReplicaTaskEndRequest{Tenant: req.Tenant, Client: client1, Key: req.Key, Kind: TaskMove})
		}
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if err := s.Tasks().Complete(now, client1, task.ID, err == nil, msg); err != nil {
			t.Fatal(err)
		}
	}
}

// drive runs the leader's side of job id and a worker until the job finishes, at most rounds
// rounds of one second each from now; it returns the time it finished.
func drive(t *testing.T, s *Store, id uint64, now int64, rounds int) int64 {
	t.Helper()
	for range rounds {
		j, err := s.Drains().Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Drains().Finish(now, id) == nil {
			return now
		}
		moves, _, _ := s.Drains().Candidates(j, now, j.Spec.MaxConcurrency-len(j.InFlight))
		if len(moves) > 0 {
			if _, _, err := s.Drains().ScheduleMoves(now, id, moves); err != nil {
				t.Fatal(err)
			}
			if j, _ := s.Drains().Get(id); len(j.InFlight) > j.Spec.MaxConcurrency {
				t.Fatalf("%d moves in flight, max %d", len(j.InFlight), j.Spec.MaxConcurrency)
			}
		}
		runWorker(t, s, now)
		checkInv(t, s)
		now += sec
	}
	t.Fatalf("drain %d did not finish in %d rounds", id, rounds)
	return 0
}

func onSegment(s *Store, seg alloc.ID) int {
	n := 0
	s.VisitHandles(0, func(hs []ObjectHandle) bool {
		for _, h := range hs {
			if st := h.State(); st != nil && anyReplica(st, func(r Replica) bool { return r.Extent.Segment == seg }) {
				n++
			}
		}
		return true
	})
	return n
}

// TestDrainMovesEverythingOff: a drain closes its segment at once, moves every object (group
// members too) off it with at most max_concurrency moves in flight, waits for a leased object's
// lease, and finishes with nothing lost: every object readable with its one COMPLETE replica.
func TestDrainMovesEverythingOff(t *testing.T) {
	const n = 10
	s := drainFixture(t, n)
	if _, err := s.Get(2*sec, "a", "k05"); err != nil { // leased until 12 s
		t.Fatal(err)
	}
	spec := DrainSpec{Segments: []alloc.ID{segID(1)}, Targets: []alloc.ID{segID(2), segID(3)}, MaxConcurrency: 3}
	for _, c := range []struct {
		spec DrainSpec
		want Reason
	}{
		{DrainSpec{Segments: []alloc.ID{segID(9)}, MaxConcurrency: 1}, SegmentNotFound},
		{DrainSpec{Segments: []alloc.ID{segID(1)}, Targets: []alloc.ID{segID(9)}, MaxConcurrency: 1}, SegmentNotFound},
		{DrainSpec{Segments: []alloc.ID{segID(1)}, Targets: []alloc.ID{segID(1)}, MaxConcurrency: 1}, InvalidParams},
		{DrainSpec{Segments: []alloc.ID{segID(1), segID(1)}, MaxConcurrency: 1}, InvalidParams},
		{DrainSpec{MaxConcurrency: 1}, InvalidParams},
		{DrainSpec{Segments: []alloc.ID{segID(1)}}, InvalidParams},
	} {
		_, err := s.Drains().Start(2*sec, c.spec)
		wantReason(t, err, c.want)
		wantReason(t, s.Drains().CheckStart(c.spec), c.want)
	}
	id, err := s.Drains().Start(2*sec, spec)
	if err != nil || id != 1 {
		t.Fatalf("Start = %d, %v", id, err)
	}
	if info, _ := s.Segments().Get(segID(1)); !info.Closing {
		t.Fatal("the drained segment takes allocations")
	}
	_, err = s.Drains().Start(2*sec, DrainSpec{Segments: []alloc.ID{segID(1)}, MaxConcurrency: 1})
	wantReason(t, err, SegmentDraining)
	r := putReq("a", "new", "", 1000)
	r.Config.Preferred = []alloc.ID{segID(1)}
	if reps, err := s.PutStart(2*sec, 1, r); err != nil || reps[0].Extent.Segment == segID(1) {
		t.Fatalf("a put during the drain: %+v, %v", reps, err)
	}
	wantReason(t, s.Drains().Finish(2*sec, id), InvalidParams) // replicas left

	// Until 12 s the leased object stays where it is.
	now := drive2(t, s, id, 3*sec, 8)
	if got := onSegment(s, segID(1)); got != 1 {
		t.Fatalf("%d objects left on the drained segment while one is leased, want 1", got)
	}
	if moves, left, leased := s.Drains().Candidates(mustJob(t, s, id), now, 10); len(moves) != 0 || left != 1 || leased != 1 {
		t.Fatalf("candidates while leased: %+v, %d leased", moves, leased)
	}
	done := drive(t, s, id, 13*sec, 20)
	j := mustJob(t, s, id)
	if j.State != DrainDone || j.Moved != n || j.Failed != 0 || len(j.InFlight) != 0 || j.Updated != done {
		t.Fatalf("finished job: %+v", j)
	}
	if got := onSegment(s, segID(1)); got != 0 {
		t.Fatalf("%d objects left on the drained segment", got)
	}
	for i := range n {
		key := fmt.Sprintf("k%02d", i)
		g, err := s.Get(done, "a", key)
		if err != nil || len(g.Replicas) != 1 || g.Replicas[0].Status != Complete || g.Replicas[0].Extent.Segment == segID(1) {
			t.Fatalf("Get %s after the drain: %+v, %v", key, g, err)
		}
	}
	if info, _ := s.Segments().Get(segID(1)); !info.Closing || info.Used != 0 {
		t.Fatalf("the drained segment: %+v", info)
	}
	_, _, err = s.Drains().ScheduleMoves(done, id, nil)
	wantReason(t, err, DrainNotRunning)
	wantReason(t, s.Drains().Finish(done, id), DrainNotRunning)
	if j, err := s.Drains().Cancel(done, id); err != nil || j.State != DrainDone {
		t.Fatalf("Cancel of a finished job = %+v, %v", j, err)
	}
	checkInv(t, s)
}

// drive2 runs rounds of the leader's side and the worker without finishing the job.
func drive2(t *testing.T, s *Store, id uint64, now int64, rounds int) int64 {
	t.Helper()
	for range rounds {
		j := mustJob(t, s, id)
		moves, _, _ := s.Drains().Candidates(j, now, j.Spec.MaxConcurrency-len(j.InFlight))
		if _, _, err := s.Drains().ScheduleMoves(now, id, moves); err != nil {
			t.Fatal(err)
		}
		runWorker(t, s, now)
		now += sec
	}
	return now
}

func mustJob(t *testing.T, s *Store, id uint64) DrainJob {
	t.Helper()
	j, err := s.Drains().Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestDrainCancel: a cancelled job schedules nothing more, its segment opens again, a move in
// flight still counts when its worker reports it, and a repeated cancel answers the same job.
func TestDrainCancel(t *testing.T) {
	s := drainFixture(t, 4)
	id, err := s.Drains().Start(sec, DrainSpec{Segments: []alloc.ID{segID(1)}, MaxConcurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	moves, _, _ := s.Drains().Candidates(mustJob(t, s, id), 20*sec, 10)
	if len(moves) != 4 {
		t.Fatalf("candidates: %+v", moves)
	}
	tids, errs, err := s.Drains().ScheduleMoves(20*sec, id, moves)
	if err != nil || tids[0] == 0 || tids[1] == 0 || errs[2] == nil || errs[3] == nil {
		t.Fatalf("ScheduleMoves past max_concurrency = %v, %v, %v", tids, errs, err)
	}
	if again, left, _ := s.Drains().Candidates(mustJob(t, s, id), 20*sec, 10); len(again) != 2 || left != 4 {
		t.Fatalf("objects in flight chosen again: %+v", again)
	}
	j, err := s.Drains().Cancel(21*sec, id)
	if err != nil || j.State != DrainCancelled {
		t.Fatalf("Cancel = %+v, %v", j, err)
	}
	if info, _ := s.Segments().Get(segID(1)); info.Closing {
		t.Fatal("a cancelled drain's segment stays closing")
	}
	_, _, err = s.Drains().ScheduleMoves(22*sec, id, moves[2:])
	wantReason(t, err, DrainNotRunning)
	runWorker(t, s, 22*sec)
	if j := mustJob(t, s, id); j.State != DrainCancelled || j.Moved != 2 || len(j.InFlight) != 0 {
		t.Fatalf("after the moves in flight ended: %+v", j)
	}
	if got := onSegment(s, segID(1)); got != 2 {
		t.Fatalf("%d objects on the segment, want the 2 not moved", got)
	}
	_, err = s.Drains().Cancel(22*sec, 99)
	wantReason(t, err, DrainNotFound)
	wantReason(t, s.Drains().CheckCancel(99), DrainNotFound)
	// The segment can be drained again.
	if id2, err := s.Drains().Start(23*sec, DrainSpec{Segments: []alloc.ID{segID(1)}, MaxConcurrency: 4}); err != nil || id2 != 2 {
		t.Fatalf("a second drain = %d, %v", id2, err)
	}
	checkInv(t, s)
}

// TestDrainRestore: the jobs and their tasks read back from a snapshot's view restore as the same
// jobs, and a move in flight at the snapshot still counts for its job afterwards.
func TestDrainRestore(t *testing.T) {
	s := drainFixture(t, 3)
	id, err := s.Drains().Start(sec, DrainSpec{Segments: []alloc.ID{segID(1)}, MaxConcurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	moves, _, _ := s.Drains().Candidates(mustJob(t, s, id), 20*sec, 1)
	if _, _, err := s.Drains().ScheduleMoves(20*sec, id, moves); err != nil {
		t.Fatal(err)
	}
	tasks, nextTask := s.Tasks().List()
	jobs, next := s.Drains().List()
	r := newTestStore(t)
	if err := r.Tasks().Restore(tasks, nextTask); err != nil {
		t.Fatal(err)
	}
	if err := r.Drains().Restore(jobs, next); err != nil {
		t.Fatal(err)
	}
	got, gotNext := r.Drains().List()
	if gotNext != next || len(got) != 1 || !slices.Equal(got[0].InFlight, jobs[0].InFlight) || got[0].State != DrainRunning {
		t.Fatalf("restored %+v (next %d), want %+v (next %d)", got, gotNext, jobs, next)
	}
	fetched, _ := r.Tasks().Fetch(21*sec, client1, 1)
	if err := r.Tasks().Complete(21*sec, client1, fetched[0].ID, false, "no room"); err != nil {
		t.Fatal(err)
	}
	if j := mustJob(t, r, id); j.Failed != 1 || len(j.InFlight) != 0 {
		t.Fatalf("the restored job after its task failed: %+v", j)
	}
	bad := slices.Clone(jobs)
	bad[0].InFlight = []uint64{77}
	if err := newTestStore(t).Drains().Restore(bad, next); err == nil {
		t.Fatal("a job whose in-flight task is not kept restored")
	}
}

// TestDrainCountsExpiredTask: a move task whose worker died (fetched, never reported) and that
// TaskQueue.Expire ends FAILED counts as failed for its drain, which schedules the object again and
// finishes once a live worker moves it.
func TestDrainCountsExpiredTask(t *testing.T) {
	s := drainFixture(t, 1)
	id, err := s.Drains().Start(sec, DrainSpec{Segments: []alloc.ID{segID(1)}, MaxConcurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	moves, _, _ := s.Drains().Candidates(mustJob(t, s, id), 2*sec, 1)
	tids, errs, err := s.Drains().ScheduleMoves(2*sec, id, moves)
	if err != nil || len(tids) != 1 || errs[0] != nil {
		t.Fatalf("ScheduleMoves = %v, %v, %v", tids, errs, err)
	}
	if got, err := s.Tasks().Fetch(3*sec, client1, 1); err != nil || len(got) != 1 { // the worker dies
		t.Fatalf("Fetch = %+v, %v", got, err)
	}
	if got := s.Tasks().Expire(20*sec, 10*sec, s.Tasks().Expired(20*sec, 10*sec)); len(got) != 1 || got[0].ID != tids[0] {
		t.Fatalf("Expire = %+v", got)
	}
	if j := mustJob(t, s, id); j.Failed != 1 || len(j.InFlight) != 0 || j.State != DrainRunning {
		t.Fatalf("after the task expired: %+v", j)
	}
	drive(t, s, id, 21*sec, 5)
	if j := mustJob(t, s, id); j.State != DrainDone || j.Moved != 1 || j.Failed != 1 {
		t.Fatalf("finished job: %+v", j)
	}
	checkInv(t, s)
}
