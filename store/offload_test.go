package store

import (
	"testing"

	"metad/store/alloc"
)

// offloadStore is a store with client1's memory segment and its SSD registration, offload on.
func offloadStore(t *testing.T) (*Store, alloc.ID) {
	t.Helper()
	s := newTestStore(t)
	mem := mount(t, s, 1, alloc.TierMemory, 1<<20)
	if _, _, err := s.MountLocalDisk(client1, 1<<20, "host-1:9400", true); err != nil {
		t.Fatal(err)
	}
	return s, mem
}

// wantTask fails unless key's live offload task is in state (or, with state 0, there is none).
func wantTask(t *testing.T, s *Store, key string, state TaskState) Task {
	t.Helper()
	task, ok := s.Tasks().Offload("", key)
	switch {
	case state == 0 && ok:
		t.Fatalf("%s has a live offload task: %+v", key, task)
	case state != 0 && (!ok || task.State != state):
		t.Fatalf("%s's offload task = %+v, %v; want %s", key, task, ok, state)
	}
	return task
}

// TestOffloadTaskLife: a put queues its offload task for the owner of its memory replica's segment;
// the owner takes it (the object is pinned: no eviction, removal or upsert), reports it, and the
// task ends with the replica recorded and the pin gone. A failure report, an upsert of a queued
// task's object, an object gone before its task is taken, and the reaper end tasks FAILED.
func TestOffloadTaskLife(t *testing.T) {
	s, mem := offloadStore(t)
	q := s.Tasks()
	put(t, s, sec, "", "a", "", 100)
	task := wantTask(t, s, "a", TaskPending)
	if task.Client != client1 || task.Spec.Kind != TaskOffload || task.Spec.Source != mem || task.Spec.Size != 100 {
		t.Fatalf("task = %+v", task)
	}
	// A repeated PutEnd queues nothing more.
	if err := s.PutEnd(sec, PutEndRequest{Client: client1, Key: "a"}); err != nil {
		t.Fatal(err)
	}
	if q.Pending(client1) != 1 {
		t.Fatalf("%d tasks pending, want 1", q.Pending(client1))
	}

	// Taken: PROCESSING, and the object pinned.
	got, err := q.Fetch(2*sec, client1, 10)
	if err != nil || len(got) != 1 || got[0].ID != task.ID || got[0].State != TaskProcessing {
		t.Fatalf("Fetch = %+v, %v", got, err)
	}
	wantReason(t, s.Remove(2*sec, "", "a", true), ObjectHasReplicationTask)
	_, err = s.UpsertStart(2*sec, 1, putReq("", "a", "", 100))
	wantReason(t, err, ObjectHasReplicationTask)
	if errs, _ := s.EvictUnits([][]ObjectToken{{diskToken(t, s, "a")}}, alloc.TierMemory); errs[0] == nil {
		t.Fatal("a pinned object was evicted")
	}
	wantReason(t, q.Complete(2*sec, client1, task.ID, true, ""), InvalidParams) // not MarkTaskToComplete's

	// Reported: the replica, the task SUCCESS, the pin gone.
	if errs, err := s.OffloadDone(3*sec, "", client1, []OffloadResult{{Key: "a", Size: 100, Success: true}}); err != nil || errs[0] != nil {
		t.Fatal(errs, err)
	}
	wantTask(t, s, "a", 0)
	if done, _ := q.Get(task.ID); done.State != TaskSuccess {
		t.Fatalf("task after the report: %+v", done)
	}
	if got := tiersOf(t, s, "a"); len(got) != 2 || got[1] != alloc.TierLocalDisk {
		t.Fatalf("a's replicas: %v", got)
	}
	if err := s.Remove(4*sec, "", "a", true); err != nil {
		t.Fatalf("remove after the offload: %v", err)
	}

	// A failure: FAILED, no replica, the pin gone.
	put(t, s, 5*sec, "", "f", "", 100)
	if got, _ := q.Fetch(5*sec, client1, 10); len(got) != 1 {
		t.Fatalf("Fetch f = %+v", got)
	}
	if errs, err := s.OffloadDone(6*sec, "", client1, []OffloadResult{{Key: "f", Size: 100}}); err != nil || errs[0] != nil {
		t.Fatal(errs, err)
	}
	if r, _ := s.Peek("", "f"); len(r.Replicas) != 1 {
		t.Fatalf("a failed offload recorded a replica: %+v", r.Replicas)
	}
	if err := s.Remove(6*sec, "", "f", true); err != nil {
		t.Fatalf("remove after a failed offload: %v", err)
	}

	// An upsert cancels a queued task; its completion queues the next.
	put(t, s, 7*sec, "", "u", "", 100)
	first := wantTask(t, s, "u", TaskPending)
	if _, err := s.UpsertStart(7*sec, 1, putReq("", "u", "", 100)); err != nil {
		t.Fatal(err)
	}
	if c, _ := q.Get(first.ID); c.State != TaskFailed || c.Message != offloadCancelledMessage {
		t.Fatalf("the queued task after an upsert: %+v", c)
	}
	if err := s.UpsertEnd(7*sec, PutEndRequest{Client: client1, Key: "u"}); err != nil {
		t.Fatal(err)
	}
	if next := wantTask(t, s, "u", TaskPending); next.ID == first.ID {
		t.Fatal("the upsert's completion queued no new task")
	}

	// An object gone before its task is taken: the task ends FAILED at the fetch, unreturned.
	put(t, s, 8*sec, "", "g", "", 100)
	if err := s.Remove(8*sec, "", "g", false); err != nil {
		t.Fatal(err)
	}
	got, err = q.Fetch(9*sec, client1, 10)
	if err != nil || len(got) != 1 || got[0].Spec.Key != "u" {
		t.Fatalf("Fetch with a gone object's task = %+v, %v; want u's alone", got, err)
	}
	wantTask(t, s, "g", 0)

	// The reaper: the task expires FAILED, the pin is revoked.
	tok := diskToken(t, s, "u")
	q.Expire(1000*sec, 600*sec, []uint64{got[0].ID})
	if errs := s.RevokeTokens([]ObjectToken{tok}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	wantTask(t, s, "u", 0)
	if err := s.Remove(10*sec, "", "u", true); err != nil {
		t.Fatalf("remove after the reaper: %v", err)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestOffloadOnlyForOffloadingOwners: a put whose memory replica's owner has no registration, or
// one with offload off, queues nothing; one already on the owner's SSD neither.
func TestOffloadOnlyForOffloadingOwners(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	put(t, s, sec, "", "none", "", 100)
	if _, _, err := s.MountLocalDisk(client1, 1<<20, "host-1:9400", false); err != nil {
		t.Fatal(err)
	}
	put(t, s, sec, "", "off", "", 100)
	for _, k := range []string{"none", "off"} {
		wantTask(t, s, k, 0)
	}
	if s.Tasks().Pending(client1) != 0 {
		t.Fatal("tasks queued without an offloading registration")
	}
}
