package evict

import (
	"context"
	"testing"
	"time"

	"metad/store"
	"metad/store/alloc"
)

// TestReaperRevokesStaleWrites: writes PROCESSING longer than put_release_timeout are revoked;
// younger ones and completed objects stay.
func TestReaperRevokesStaleWrites(t *testing.T) {
	x := newFixture(t, nil)
	x.start("stale")  // PutStart at t0
	x.put("complete") // COMPLETE at t0
	young := store.PutStartRequest{Client: client, Key: "young", Size: slot, Config: store.ReplicaConfig{Memory: 1}}
	x.clock.Store(t0 + int64(10*time.Minute) + 1) // just past 600 s after t0
	if _, err := x.s.PutStart(t0+int64(5*time.Minute), 1, young); err != nil {
		t.Fatal(err)
	}
	n, err := x.ev.reap(context.Background(), x.s)
	if err != nil || n != 1 {
		t.Fatalf("reap revoked %d, %v; want 1", n, err)
	}
	if x.exists("", "stale") || !x.exists("", "complete") || !x.exists("", "young") {
		t.Fatalf("after reaping: %v", x.keys(""))
	}
	x.check()
}

// The reaper runs every interval, but waits up to three of them while a drain is making progress.
func TestReapDue(t *testing.T) {
	e := &Evictor{cfg: Config{ReapInterval: 10 * time.Second}}
	for _, c := range []struct {
		since time.Duration
		busy  bool
		want  bool
	}{
		{9 * time.Second, false, false},
		{10 * time.Second, false, true},
		{10 * time.Second, true, false},
		{29 * time.Second, true, false},
		{30 * time.Second, true, true},
	} {
		if got := e.reapDue(c.since, c.busy); got != c.want {
			t.Errorf("since %s busy %v: due %v, want %v", c.since, c.busy, got, c.want)
		}
	}
}

// TestReaperRevokesStaleReplicaTasks: a copy started longer than put_release_timeout ago is
// revoked (its target dropped, its source kept), a younger one stays, however old the object's
// write is.
func TestReaperRevokesStaleReplicaTasks(t *testing.T) {
	x := newFixture(t, nil)
	other := memSeg
	other[15]++
	x.put("old")   // written at t0
	x.put("young") // written at t0
	x.mount(other, alloc.TierMemory, slots*slot)
	start := func(key string, at int64) {
		if _, err := x.s.StartReplicaTask(at, 1, store.ReplicaTaskRequest{Client: client, Key: key, Kind: store.TaskCopy,
			Source: memSeg, Targets: []alloc.ID{other}}); err != nil {
			t.Fatalf("copy %s: %v", key, err)
		}
	}
	start("old", t0+int64(time.Minute))
	start("young", t0+int64(6*time.Minute))
	x.clock.Store(t0 + int64(11*time.Minute) + 1) // past 600 s after the first copy, not the second
	n, err := x.ev.reap(context.Background(), x.s)
	if err != nil || n != 1 {
		t.Fatalf("reap revoked %d, %v; want 1", n, err)
	}
	old, err := x.s.Peek("", "old")
	if err != nil || len(old.Replicas) != 1 || old.Replicas[0].Extent.Segment != memSeg {
		t.Fatalf("the stale copy's object after reaping: %+v, %v", old, err)
	}
	if err := x.s.EndReplicaTask(x.clock.Load(), store.ReplicaTaskEndRequest{Client: client, Key: "old", Kind: store.TaskCopy}); store.ReasonOf(err) != store.ObjectNoReplicationTask {
		t.Fatalf("CopyEnd after the reap: %v", err)
	}
	if err := x.s.EndReplicaTask(x.clock.Load(), store.ReplicaTaskEndRequest{Client: client, Key: "young", Kind: store.TaskCopy}); err != nil {
		t.Fatalf("the young copy was reaped: %v", err)
	}
	x.check()
}

// TestReaperExpiresStaleTasks: a scheduled task PROCESSING longer than put_release_timeout since
// its fetch (its worker died) is ended FAILED through the log; one fetched later stays
// PROCESSING, a SUCCESS one is untouched.
func TestReaperExpiresStaleTasks(t *testing.T) {
	x := newFixture(t, nil)
	x.put("k")
	var ids []uint64
	for range 3 {
		id, err := x.s.Tasks().Create(t0, store.TaskSpec{Kind: store.TaskCopy, Key: "k"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	fetch := func(at int64, n int) {
		if got, err := x.s.Tasks().Fetch(at, client, n); err != nil || len(got) != n {
			t.Fatalf("Fetch = %+v, %v", got, err)
		}
	}
	fetch(t0+int64(time.Minute), 2) // ids[0], ids[1]
	if err := x.s.Tasks().Complete(t0+int64(2*time.Minute), client, ids[1], true, ""); err != nil {
		t.Fatal(err)
	}
	fetch(t0+int64(6*time.Minute), 1)             // ids[2]
	x.clock.Store(t0 + int64(11*time.Minute) + 1) // past 600 s after the first fetch, not the second
	if _, err := x.ev.reap(context.Background(), x.s); err != nil {
		t.Fatal(err)
	}
	for i, want := range []store.TaskState{store.TaskFailed, store.TaskSuccess, store.TaskProcessing} {
		task, err := x.s.Tasks().Get(ids[i])
		if err != nil || task.State != want {
			t.Fatalf("task %d after reaping: %+v, %v; want %s", ids[i], task, err, want)
		}
	}
	if task, _ := x.s.Tasks().Get(ids[0]); task.Message != store.TaskTimedOutMessage {
		t.Fatalf("expired task message %q", task.Message)
	}
	x.check()
}
