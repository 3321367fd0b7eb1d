package store

import (
	"slices"
	"testing"

	"metad/store/alloc"
)

// TestTaskQueueLifecycle: a copy task goes to the owner of its source segment, PENDING ->
// PROCESSING (fetched) -> SUCCESS or FAILED (completed), with every refusal of the queue; a
// finished task is kept for FinishedTaskTTL.
func TestTaskQueueLifecycle(t *testing.T) {
	s := taskFixture(t) // segments owned by client1; "k" COMPLETE on segment 1
	id, err := s.Tasks().Create(sec, TaskSpec{Kind: TaskCopy, Tenant: "a", Key: "k", Targets: []alloc.ID{segID(2)}})
	if err != nil || id != 1 {
		t.Fatalf("Create = %d, %v", id, err)
	}
	task, err := s.Tasks().Get(id)
	if err != nil || task.State != TaskPending || task.Client != client1 || task.Spec.Source != segID(1) || task.Spec.Replicas != 1 {
		t.Fatalf("Get = %+v, %v", task, err)
	}
	id2, err := s.Tasks().Create(sec, TaskSpec{Kind: TaskMove, Tenant: "a", Key: "k", Source: segID(1)})
	if err != nil || id2 != 2 {
		t.Fatalf("second Create = %d, %v", id2, err)
	}
	for _, c := range []struct {
		spec TaskSpec
		want Reason
	}{
		{TaskSpec{Kind: TaskCopy, Tenant: "a", Key: "nope"}, ObjectNotFound},
		{TaskSpec{Kind: TaskCopy, Tenant: "zz", Key: "k"}, TenantNotRegistered},
		{TaskSpec{Kind: TaskCopy, Tenant: "a", Key: "k", Source: segID(3)}, ReplicaNotFound},
		{TaskSpec{Kind: TaskCopy, Tenant: "a", Key: "k", Targets: []alloc.ID{segID(42)}}, SegmentNotFound},
		{TaskSpec{Kind: 9, Tenant: "a", Key: "k"}, InvalidParams},
	} {
		_, err := s.Tasks().Create(sec, c.spec)
		wantReason(t, err, c.want)
		wantReason(t, s.Tasks().CheckCreate(c.spec), c.want)
	}
	got, err := s.Tasks().Fetch(2*sec, client2, 10)
	if err != nil || len(got) != 0 {
		t.Fatalf("another client fetched %+v, %v", got, err)
	}
	_, err = s.Tasks().Fetch(2*sec, client1, 0)
	wantReason(t, err, InvalidParams)
	got, err = s.Tasks().Fetch(2*sec, client1, 1)
	if err != nil || len(got) != 1 || got[0].ID != id || got[0].State != TaskProcessing {
		t.Fatalf("Fetch = %+v, %v", got, err)
	}
	wantReason(t, s.Tasks().Complete(3*sec, client1, id2, true, ""), InvalidParams) // still PENDING
	wantReason(t, s.Tasks().Complete(3*sec, client2, id, true, ""), IllegalClient)
	wantReason(t, s.Tasks().Complete(3*sec, client1, 99, true, ""), TaskNotFound)
	if err := s.Tasks().Complete(3*sec, client1, id, false, "disk on fire"); err != nil {
		t.Fatal(err)
	}
	if task, _ := s.Tasks().Get(id); task.State != TaskFailed || task.Message != "disk on fire" {
		t.Fatalf("after Complete: %+v", task)
	}
	wantReason(t, s.Tasks().Complete(3*sec, client1, id, true, ""), InvalidParams)

	// A snapshot's view restores into an empty queue as the same queue.
	tasks, next := s.Tasks().List()
	r := newTestStore(t)
	if err := r.Tasks().Restore(tasks, next); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Tasks().Fetch(4*sec, client1, 5); len(got) != 1 || got[0].ID != id2 {
		t.Fatalf("the restored queue fetched %+v", got)
	}

	// Past FinishedTaskTTL, the next change prunes the finished task.
	late := 3*sec + int64(FinishedTaskTTL) + 1
	if _, err := s.Tasks().Fetch(late, client1, 1); err != nil {
		t.Fatal(err)
	}
	_, err = s.Tasks().Get(id)
	wantReason(t, err, TaskNotFound)
	if task, err := s.Tasks().Get(id2); err != nil || task.State != TaskProcessing {
		t.Fatalf("the unfinished task: %+v, %v", task, err)
	}
}

// TestTaskPendingLimit: the queue holds at most MaxPendingTasks PENDING tasks; a fetch makes room.
func TestTaskPendingLimit(t *testing.T) {
	s := taskFixture(t)
	spec := TaskSpec{Kind: TaskCopy, Tenant: "a", Key: "k"}
	for i := range MaxPendingTasks {
		if _, err := s.Tasks().Create(sec, spec); err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
	}
	_, err := s.Tasks().Create(sec, spec)
	wantReason(t, err, TaskPendingLimitExceeded)
	if _, err := s.Tasks().Fetch(sec, client1, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tasks().Create(sec, spec); err != nil {
		t.Fatalf("after a fetch: %v", err)
	}
}

// TestExpireTasks: a task PROCESSING longer than the timeout since its fetch ends FAILED with
// TaskTimedOutMessage; one fetched within it, a PENDING one, a finished one and an unknown id are
// left alone.
func TestExpireTasks(t *testing.T) {
	s := taskFixture(t)
	var ids []uint64
	for range 4 {
		id, err := s.Tasks().Create(sec, TaskSpec{Kind: TaskCopy, Tenant: "a", Key: "k", Targets: []alloc.ID{segID(2)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if got, err := s.Tasks().Fetch(2*sec, client1, 2); err != nil || len(got) != 2 { // ids[0], ids[1]
		t.Fatalf("Fetch = %+v, %v", got, err)
	}
	if err := s.Tasks().Complete(3*sec, client1, ids[1], true, "done"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Tasks().Fetch(5*sec, client1, 1); err != nil || len(got) != 1 || got[0].ID != ids[2] {
		t.Fatalf("Fetch = %+v, %v", got, err)
	}
	const timeout = 10 * sec
	// At 14 s: ids[0] fetched 12 s ago (expired), ids[2] 9 s ago (not), ids[1] SUCCESS, ids[3] PENDING.
	if got := s.Tasks().Expired(14*sec, timeout); len(got) != 1 || got[0] != ids[0] {
		t.Fatalf("Expired = %v, want [%d]", got, ids[0])
	}
	got := s.Tasks().Expire(14*sec, timeout, append(slices.Clone(ids), 99, ids[0]))
	if len(got) != 1 || got[0].ID != ids[0] || got[0].State != TaskFailed {
		t.Fatalf("Expire = %+v", got)
	}
	want := map[uint64]TaskState{ids[0]: TaskFailed, ids[1]: TaskSuccess, ids[2]: TaskProcessing, ids[3]: TaskPending}
	for id, st := range want {
		task, err := s.Tasks().Get(id)
		if err != nil || task.State != st {
			t.Fatalf("task %d = %+v, %v; want %s", id, task, err, st)
		}
	}
	if task, _ := s.Tasks().Get(ids[0]); task.Message != TaskTimedOutMessage || task.Updated != 14*sec {
		t.Fatalf("expired task = %+v", task)
	}
	if task, _ := s.Tasks().Get(ids[1]); task.Message != "done" || task.Updated != 3*sec {
		t.Fatalf("SUCCESS task changed: %+v", task)
	}
	// The worker's late report of the expired task is refused.
	wantReason(t, s.Tasks().Complete(15*sec, client1, ids[0], true, ""), InvalidParams)
	// Past its own timeout, ids[2] expires too.
	if got := s.Tasks().Expire(16*sec, timeout, ids); len(got) != 1 || got[0].ID != ids[2] {
		t.Fatalf("second Expire = %+v", got)
	}
}
