package store

import (
	"testing"

	"metad/store/alloc"
)

// diskOnlyObject puts key on a staging segment, records client1's LOCAL_DISK replica of it and
// unmounts the staging segment, leaving it on disk alone.
func diskOnlyObject(t *testing.T, s *Store, staging alloc.ID, key string) {
	t.Helper()
	req := putReq("", key, "", 100)
	req.Config.Preferred = []alloc.ID{staging}
	if _, err := s.PutStart(sec, 1, req); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEnd(sec, PutEndRequest{Client: client1, Key: key}); err != nil {
		t.Fatal(err)
	}
	if errs, err := s.OffloadDone(sec, "", client1, []OffloadResult{{Key: key, Size: 100, Success: true}}); err != nil || errs[0] != nil {
		t.Fatal(errs, err)
	}
}

// TestPromotionLife: a promotion queued for a disk-only object goes to the holder of its
// LOCAL_DISK replica; only the holder, once it took the task, starts it (a PROCESSING memory
// replica, quota charged, the object pinned); success makes the replica COMPLETE, failure drops it;
// the task ends either way. Objects not on disk alone get none, and one key gets one at a time.
func TestPromotionLife(t *testing.T) {
	s := newTestStore(t)
	mem := mount(t, s, 1, alloc.TierMemory, 1<<20)
	staging := mount(t, s, 2, alloc.TierMemory, 1<<20)
	if _, _, err := s.MountLocalDisk(client1, 1<<20, "host-1:9400", false); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"p", "q"} {
		diskOnlyObject(t, s, staging, k)
	}
	if _, err := s.UnmountSegment(staging); err != nil {
		t.Fatal(err)
	}
	put(t, s, sec, "", "m", "", 100) // in memory: nothing to promote
	q := s.Tasks()
	if n := s.QueuePromotions(2*sec, []ObjectToken{diskToken(t, s, "p"), diskToken(t, s, "m"), diskToken(t, s, "p")}); n != 1 {
		t.Fatalf("QueuePromotions queued %d, want 1 (p once; m is in memory)", n)
	}
	// Not taken yet, or by another client: refused.
	_, _, err := s.StartPromotion(2*sec, 1, PromotionRequest{Client: client1, Key: "p"})
	wantReason(t, err, InvalidParams)
	got, err := q.Fetch(2*sec, client1, 10)
	if err != nil || len(got) != 1 || got[0].Spec.Kind != TaskPromote || got[0].Spec.Key != "p" || got[0].Spec.Size != 100 {
		t.Fatalf("Fetch = %+v, %v", got, err)
	}
	_, _, err = s.StartPromotion(2*sec, 1, PromotionRequest{Client: client2, Key: "p"})
	wantReason(t, err, IllegalClient)
	_, _, err = s.StartPromotion(2*sec, 1, PromotionRequest{Client: client1, Key: "q"})
	wantReason(t, err, TaskNotFound)
	wantReason(t, q.Complete(2*sec, client1, got[0].ID, true, ""), InvalidParams) // not MarkTaskToComplete's

	charged := s.Tenants().Lookup(DefaultTenant).Quota().Charged()
	rep, size, err := s.StartPromotion(3*sec, 1, PromotionRequest{Client: client1, Key: "p", Preferred: []alloc.ID{mem}})
	if err != nil || size != 100 || rep.Tier != alloc.TierMemory || rep.Status != Processing || rep.Extent.Segment != mem {
		t.Fatalf("StartPromotion = %+v, %d, %v", rep, size, err)
	}
	if c := s.Tenants().Lookup(DefaultTenant).Quota().Charged(); c != charged+100 {
		t.Fatalf("charged %d, want %d", c, charged+100)
	}
	wantReason(t, s.Remove(3*sec, "", "p", true), ObjectHasReplicationTask)
	if err := s.EndPromotion(4*sec, "", "p", client1, true); err != nil {
		t.Fatal(err)
	}
	if got := tiersOf(t, s, "p"); len(got) != 2 || got[0] != alloc.TierLocalDisk || got[1] != alloc.TierMemory {
		t.Fatalf("p after its promotion: %v", got)
	}
	if r, _ := s.Get(4*sec, "", "p"); len(r.Replicas) != 2 {
		t.Fatalf("Get p = %+v, want both replicas readable", r)
	}
	if done, _ := q.Get(got[0].ID); done.State != TaskSuccess {
		t.Fatalf("the task after success: %+v", done)
	}
	// A failed one: the replica and its charge go.
	if n := s.QueuePromotions(5*sec, []ObjectToken{diskToken(t, s, "q")}); n != 1 {
		t.Fatal("q's promotion not queued")
	}
	if got, _ = q.Fetch(5*sec, client1, 10); len(got) != 1 {
		t.Fatalf("Fetch q = %+v", got)
	}
	if _, _, err := s.StartPromotion(5*sec, 1, PromotionRequest{Client: client1, Key: "q"}); err != nil {
		t.Fatal(err)
	}
	before := s.Segments().Used(alloc.TierMemory)
	if err := s.EndPromotion(6*sec, "", "q", client1, false); err != nil {
		t.Fatal(err)
	}
	if got := tiersOf(t, s, "q"); len(got) != 1 || got[0] != alloc.TierLocalDisk {
		t.Fatalf("q after a failed promotion: %v", got)
	}
	if s.Segments().Used(alloc.TierMemory) != before-128 {
		t.Fatal("a failed promotion kept its memory extent")
	}
	if done, _ := q.Get(got[0].ID); done.State != TaskFailed {
		t.Fatalf("the task after failure: %+v", done)
	}
	wantReason(t, s.EndPromotion(6*sec, "", "q", client1, true), TaskNotFound)
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestQueuedTasksExpire: an offload or a promotion still PENDING past the put release timeout
// (its worker never fetches it) is reaped FAILED, which frees its key for the next one; a copy
// task still PENDING is not.
func TestQueuedTasksExpire(t *testing.T) {
	s, _ := offloadStore(t)
	q := s.Tasks()
	put(t, s, sec, "", "o", "", 100)
	task := wantTask(t, s, "o", TaskPending)
	const timeout = 600 * sec
	if ids := q.Expired(sec+timeout, timeout); len(ids) != 0 {
		t.Fatalf("expired at the timeout: %v", ids)
	}
	ids := q.Expired(2*sec+timeout, timeout)
	if len(ids) != 1 || ids[0] != task.ID {
		t.Fatalf("Expired = %v, want [%d]", ids, task.ID)
	}
	if out := q.Expire(2*sec+timeout, timeout, ids); len(out) != 1 || out[0].State != TaskFailed || out[0].Message != TaskQueuedTooLongMessage {
		t.Fatalf("Expire = %+v", out)
	}
	wantTask(t, s, "o", 0)
	if q.Pending(client1) != 0 {
		t.Fatalf("%d still pending", q.Pending(client1))
	}
	// A queued copy waits for its worker, whatever the time.
	id, err := q.Create(3*sec, TaskSpec{Kind: TaskCopy, Key: "o"})
	if err != nil {
		t.Fatal(err)
	}
	if ids := q.Expired(4*sec+timeout, timeout); len(ids) != 0 {
		t.Fatalf("a PENDING copy %d expired: %v", id, ids)
	}
}
