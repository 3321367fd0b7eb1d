package store

import (
	"testing"

	"metad/store/alloc"
)

// taskFixture mounts four MEMORY segments (1..4) and puts "k" (size 1000, one COMPLETE replica on
// segment 1) in tenant "a" with a quota of 10000 bytes.
func taskFixture(t *testing.T) *Store {
	t.Helper()
	s := newTestStore(t)
	for n := byte(1); n <= 4; n++ {
		mount(t, s, n, alloc.TierMemory, 1<<20)
	}
	if _, err := s.RegisterTenant("a", 10000); err != nil {
		t.Fatal(err)
	}
	r := putReq("a", "k", "", 1000)
	r.Config.Preferred = []alloc.ID{segID(1)}
	if _, err := s.PutStart(sec, 1, r); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEnd(sec, PutEndRequest{Tenant: "a", Client: client1, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	return s
}

func copyReq(key string, targets ...byte) ReplicaTaskRequest {
	r := ReplicaTaskRequest{Tenant: "a", Client: client2, Key: key, Kind: TaskCopy, Source: segID(1)}
	for _, n := range targets {
		r.Targets = append(r.Targets, segID(n))
	}
	return r
}

func endReq(kind TaskKind) ReplicaTaskEndRequest {
	return ReplicaTaskEndRequest{Tenant: "a", Client: client2, Key: "k", Kind: kind}
}

func charged(s *Store) uint64 { return s.Tenants().Lookup("a").Quota().Charged() }

func checkInv(t *testing.T, s *Store) {
	t.Helper()
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestCopyLifecycle: CopyStart places PROCESSING targets on the named segments and charges them;
// while it runs the object stays readable from its source only, and Remove (forced or not),
// Upsert, a second task and eviction are refused; PutEnd of the writer leaves the targets alone;
// CopyEnd by the starter makes them COMPLETE.
func TestCopyLifecycle(t *testing.T) {
	s := taskFixture(t)
	ts, err := s.StartReplicaTask(2*sec, 7, copyReq("k", 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	src, targets := ts.Source, ts.Targets
	if ts.Size != 1000 {
		t.Fatalf("size %d", ts.Size)
	}
	if src.Extent.Segment != segID(1) || len(targets) != 2 || targets[0].Extent.Segment != segID(2) ||
		targets[1].Extent.Segment != segID(3) || targets[0].Status != Processing {
		t.Fatalf("source %+v targets %+v", src, targets)
	}
	if c := charged(s); c != 3000 {
		t.Fatalf("charged %d after CopyStart, want 3000", c)
	}
	g, err := s.Get(2*sec, "a", "k")
	if err != nil || len(g.Replicas) != 1 || g.Replicas[0].ID != src.ID {
		t.Fatalf("Get during a copy = %+v, %v; want the source alone", g, err)
	}
	wantReason(t, s.Remove(100*sec, "a", "k", true), ObjectHasReplicationTask)
	wantReason(t, s.Remove(100*sec, "a", "k", false), ObjectHasReplicationTask)
	wantReason(t, s.BatchRemove(100*sec, "a", []string{"k"}, true)[0], ObjectHasReplicationTask)
	_, err = s.UpsertStart(2*sec, 1, putReq("a", "k", "", 1000))
	wantReason(t, err, ObjectHasReplicationTask)
	wantReason(t, s.CheckUpsertStart(putReq("a", "k", "", 1000)), ObjectHasReplicationTask)
	_, err = s.StartReplicaTask(2*sec, 7, copyReq("k", 4))
	wantReason(t, err, ObjectHasReplicationTask)
	tok, _ := ObjectHandle{Tenant: s.Tenants().Lookup("a"), Entry: s.Tenants().Lookup("a").dir.lookup("k")}.Token()
	errs, _ := s.EvictTokens([]ObjectToken{tok}, alloc.TierMemory)
	wantReason(t, errs[0], ObjectHasReplicationTask)
	// The writer's PutEnd is a repeat on its COMPLETE replica; PutRevoke finds no write.
	if err := s.PutEnd(3*sec, PutEndRequest{Tenant: "a", Client: client1, Key: "k"}); err != nil {
		t.Fatalf("repeated PutEnd during a copy: %v", err)
	}
	wantReason(t, s.PutRevoke(3*sec, PutEndRequest{Tenant: "a", Client: client1, Key: "k"}), InvalidWrite)
	if st, _ := s.Peek("a", "k"); len(st.Replicas) != 1 {
		t.Fatalf("PutEnd completed a copy's targets: %+v", st.Replicas)
	}
	checkInv(t, s)

	wantReason(t, s.EndReplicaTask(4*sec, ReplicaTaskEndRequest{Tenant: "a", Client: client1, Key: "k", Kind: TaskCopy}), IllegalClient)
	wantReason(t, s.EndReplicaTask(4*sec, endReq(TaskMove)), InvalidParams)
	wantReason(t, s.CheckEndReplicaTask(endReq(TaskMove)), InvalidParams)
	if err := s.CheckEndReplicaTask(endReq(TaskCopy)); err != nil {
		t.Fatal(err)
	}
	if err := s.EndReplicaTask(4*sec, endReq(TaskCopy)); err != nil {
		t.Fatal(err)
	}
	g, err = s.Get(4*sec, "a", "k")
	if err != nil || len(g.Replicas) != 3 {
		t.Fatalf("Get after CopyEnd = %+v, %v; want 3 replicas", g, err)
	}
	if c := charged(s); c != 3000 {
		t.Fatalf("charged %d after CopyEnd, want 3000", c)
	}
	wantReason(t, s.EndReplicaTask(4*sec, endReq(TaskCopy)), ObjectNoReplicationTask)
	wantReason(t, s.RevokeReplicaTask(4*sec, endReq(TaskCopy)), ObjectNoReplicationTask)
	if err := s.Remove(100*sec, "a", "k", true); err != nil {
		t.Fatalf("Remove after the copy: %v", err)
	}
	checkInv(t, s)
}

// TestCopyRevokeRefunds: a copy placed by the usual placement (no target named) charges its
// target, and CopyRevoke drops it and refunds the quota and the segment's bytes.
func TestCopyRevokeRefunds(t *testing.T) {
	s := taskFixture(t)
	used := s.Segments().Used(alloc.TierMemory)
	req := copyReq("k")
	req.Count = 2
	ts, err := s.StartReplicaTask(2*sec, 7, req)
	if err != nil {
		t.Fatal(err)
	}
	targets := ts.Targets
	if len(targets) != 2 {
		t.Fatalf("targets %+v, want 2", targets)
	}
	for _, r := range targets {
		if r.Extent.Segment == segID(1) {
			t.Fatalf("a target on the source's segment: %+v", r)
		}
	}
	if c := charged(s); c != 3000 {
		t.Fatalf("charged %d, want 3000", c)
	}
	if err := s.RevokeReplicaTask(3*sec, endReq(TaskCopy)); err != nil {
		t.Fatal(err)
	}
	if c, u := charged(s), s.Segments().Used(alloc.TierMemory); c != 1000 || u != used {
		t.Fatalf("after CopyRevoke: charged %d used %d, want 1000 and %d", c, u, used)
	}
	if g, err := s.Get(3*sec, "a", "k"); err != nil || len(g.Replicas) != 1 {
		t.Fatalf("Get after CopyRevoke = %+v, %v", g, err)
	}
	checkInv(t, s)
}

// TestMoveLifecycle: MoveStart places one target, MoveEnd makes it COMPLETE and frees the source
// (its extent and its quota); MoveRevoke keeps the source.
func TestMoveLifecycle(t *testing.T) {
	s := taskFixture(t)
	mv := copyReq("k", 3)
	mv.Kind = TaskMove
	if _, err := s.StartReplicaTask(2*sec, 7, mv); err != nil {
		t.Fatal(err)
	}
	if c := charged(s); c != 2000 {
		t.Fatalf("charged %d during a move, want 2000", c)
	}
	wantReason(t, s.Remove(100*sec, "a", "k", true), ObjectHasReplicationTask)
	wantReason(t, s.EndReplicaTask(3*sec, endReq(TaskCopy)), InvalidParams)
	if err := s.EndReplicaTask(3*sec, endReq(TaskMove)); err != nil {
		t.Fatal(err)
	}
	g, err := s.Get(3*sec, "a", "k")
	if err != nil || len(g.Replicas) != 1 || g.Replicas[0].Extent.Segment != segID(3) || g.Replicas[0].Status != Complete {
		t.Fatalf("Get after MoveEnd = %+v, %v; want one COMPLETE replica on segment 3", g, err)
	}
	if info, _ := s.Segments().Get(segID(1)); info.Used != 0 {
		t.Fatalf("source segment still uses %d bytes", info.Used)
	}
	if c := charged(s); c != 1000 {
		t.Fatalf("charged %d after MoveEnd, want 1000", c)
	}
	// Move it again, from segment 3, and revoke: it stays on 3.
	mv.Source, mv.Targets = segID(3), nil
	if _, err := s.StartReplicaTask(4*sec, 7, mv); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeReplicaTask(5*sec, endReq(TaskMove)); err != nil {
		t.Fatal(err)
	}
	g, err = s.Get(5*sec, "a", "k")
	if err != nil || len(g.Replicas) != 1 || g.Replicas[0].Extent.Segment != segID(3) || charged(s) != 1000 {
		t.Fatalf("after MoveRevoke: %+v, %v, charged %d", g, err, charged(s))
	}
	checkInv(t, s)
}

// TestReplicaTaskRefusals: every refusal of a Start, each changing nothing, and the check that
// the leader refuses from agrees with apply.
func TestReplicaTaskRefusals(t *testing.T) {
	s := taskFixture(t)
	small := segID(9)
	if _, err := s.MountSegment(alloc.Segment{ID: small, Name: "small", Base: 1 << 40, Size: 512,
		Endpoint: "127.0.0.1:7000", Tier: alloc.TierMemory, Owner: client1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutStart(sec, 1, putReq("a", "w", "", 100)); err != nil { // a write in progress
		t.Fatal(err)
	}
	move := func(n byte) ReplicaTaskRequest { r := copyReq("k", n); r.Kind = TaskMove; return r }
	cases := []struct {
		name string
		req  ReplicaTaskRequest
		want Reason
	}{
		{"absent object", copyReq("nope", 2), ObjectNotFound},
		{"unregistered tenant", ReplicaTaskRequest{Tenant: "zz", Client: client2, Key: "k", Kind: TaskCopy, Source: segID(1)}, TenantNotRegistered},
		{"no replica on source", ReplicaTaskRequest{Tenant: "a", Client: client2, Key: "k", Kind: TaskCopy, Source: segID(2)}, ReplicaNotFound},
		{"write in progress", ReplicaTaskRequest{Tenant: "a", Client: client2, Key: "w", Kind: TaskCopy, Source: segID(1)}, ReplicaIsNotReady},
		{"unknown target", copyReq("k", 2, 42), SegmentNotFound},
		{"target is source", copyReq("k", 1), InvalidParams},
		{"target twice", copyReq("k", 2, 2), InvalidParams},
		{"move to two", func() ReplicaTaskRequest { r := move(2); r.Targets = append(r.Targets, segID(3)); return r }(), InvalidParams},
		{"zero client", ReplicaTaskRequest{Tenant: "a", Key: "k", Kind: TaskCopy, Source: segID(1)}, InvalidParams},
		{"zero source", ReplicaTaskRequest{Tenant: "a", Client: client2, Key: "k", Kind: TaskCopy}, InvalidParams},
		{"unknown kind", ReplicaTaskRequest{Tenant: "a", Client: client2, Key: "k", Kind: 9, Source: segID(1)}, InvalidParams},
		{"too many", func() ReplicaTaskRequest { r := copyReq("k"); r.Count = 9; return r }(), InvalidParams},
	}
	for _, c := range cases {
		_, err := s.StartReplicaTask(2*sec, 7, c.req)
		if ReasonOf(err) != c.want {
			t.Errorf("%s: StartReplicaTask = %v, want %s", c.name, err, c.want)
		}
		if err := s.CheckStartReplicaTask(c.req); ReasonOf(err) != c.want {
			t.Errorf("%s: CheckStartReplicaTask = %v, want %s", c.name, err, c.want)
		}
	}
	// Refused only by apply: space and quota.
	_, err := s.StartReplicaTask(2*sec, 7, copyReq("k", 2, 9))
	wantReason(t, err, NoAvailableHandle)
	if err := s.SetQuota("a", 1500); err != nil {
		t.Fatal(err)
	}
	_, err = s.StartReplicaTask(2*sec, 7, copyReq("k", 2))
	wantReason(t, err, TenantQuotaExceeded)
	if c := charged(s); c != 1100 {
		t.Fatalf("refusals changed the charge: %d, want 1100", c)
	}
	wantReason(t, s.EndReplicaTask(2*sec, endReq(TaskCopy)), ObjectNoReplicationTask)
	wantReason(t, s.CheckEndReplicaTask(endReq(TaskCopy)), ObjectNoReplicationTask)
	// A move to a segment that holds a replica, and a copy whose every target does.
	if err := s.SetQuota("a", 10000); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartReplicaTask(2*sec, 7, copyReq("k", 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.EndReplicaTask(2*sec, endReq(TaskCopy)); err != nil {
		t.Fatal(err)
	}
	_, err = s.StartReplicaTask(2*sec, 7, move(2))
	wantReason(t, err, InvalidParams)
	_, err = s.StartReplicaTask(2*sec, 7, copyReq("k", 2))
	wantReason(t, err, InvalidParams)
	// A copy skips a named segment that holds a replica.
	ts, err := s.StartReplicaTask(2*sec, 7, copyReq("k", 2, 3))
	targets := ts.Targets
	if err != nil || len(targets) != 1 || targets[0].Extent.Segment != segID(3) {
		t.Fatalf("copy to 2 (held) and 3 = %+v, %v", targets, err)
	}
	checkInv(t, s)
}

// TestReplicaTaskUnmountEndsIt: unmounting a target's segment ends the task and drops its other
// targets, so the object is removable again; unmounting the source's does the same.
func TestReplicaTaskUnmountEndsIt(t *testing.T) {
	for _, gone := range []byte{1, 3} {
		s := taskFixture(t)
		if _, err := s.StartReplicaTask(2*sec, 7, copyReq("k", 2, 3)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UnmountSegment(segID(gone)); err != nil {
			t.Fatal(err)
		}
		st, err := s.Peek("a", "k")
		if gone == 1 {
			wantReason(t, err, ObjectNotFound) // its only COMPLETE replica went, and the targets with it
		} else if err != nil || len(st.Replicas) != 1 {
			t.Fatalf("after unmounting target segment: %+v, %v", st, err)
		}
		wantReason(t, s.EndReplicaTask(3*sec, endReq(TaskCopy)), map[byte]Reason{1: ObjectNotFound, 3: ObjectNoReplicationTask}[gone])
		checkInv(t, s)
	}
}

// TestReplicaTaskReaped: the reaper's RevokeTokens revokes a task as RevokeReplicaTask does, and
// PendingSince dates it from the task's start.
func TestReplicaTaskReaped(t *testing.T) {
	s := taskFixture(t)
	if _, err := s.StartReplicaTask(7*sec, 7, copyReq("k", 2)); err != nil {
		t.Fatal(err)
	}
	ta := s.Tenants().Lookup("a")
	h := ObjectHandle{Tenant: ta, Entry: ta.dir.lookup("k")}
	if since, ok := h.State().PendingSince(); !ok || since != 7*sec {
		t.Fatalf("PendingSince = %d, %v; want the task's start", since, ok)
	}
	tok, _ := h.Token()
	if errs := s.RevokeTokens([]ObjectToken{tok}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if g, err := s.Get(8*sec, "a", "k"); err != nil || len(g.Replicas) != 1 || h.State().Task != nil || charged(s) != 1000 {
		t.Fatalf("after reaping: %+v, %v, task %v, charged %d", g, err, h.State().Task, charged(s))
	}
	if _, ok := h.State().PendingSince(); ok {
		t.Fatal("nothing pending after the reap")
	}
	checkInv(t, s)
}
