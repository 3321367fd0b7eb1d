package store

import (
	"testing"

	"metad/store/alloc"
)

func TestClearReplica(t *testing.T) {
	s := newTestStore(t)
	a := mount(t, s, 1, alloc.TierMemory, 1<<20) // client1's
	b := mount(t, s, 2, alloc.TierMemory, 1<<20) // client1's
	other := segID(3)
	if _, err := s.MountSegment(alloc.Segment{ID: other, Name: "seg", Base: 3 << 30, Size: 1 << 20,
		Endpoint: "127.0.0.1:7000", Tier: alloc.TierMemory, Owner: client2}); err != nil {
		t.Fatal(err)
	}
	twoReps := func(key string, segs ...alloc.ID) {
		t.Helper()
		req := putReq("", key, "", 100)
		req.Config = ReplicaConfig{Memory: len(segs), Preferred: segs}
		if _, err := s.PutStart(sec, 1, req); err != nil {
			t.Fatal(err)
		}
		if err := s.PutEnd(sec, PutEndRequest{Tenant: "", Client: client1, Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	twoReps("ab", a, b)
	twoReps("ao", a, other)
	twoReps("o", other)
	now := 100 * sec

	// One segment: the object keeps its other replica, and its charge drops by one replica.
	used := s.Segments().Used(alloc.TierMemory)
	if err := s.ClearReplica(now, "", "ab", client1, a); err != nil {
		t.Fatal(err)
	}
	r, err := s.Peek("", "ab")
	if err != nil || len(r.Replicas) != 1 || r.Replicas[0].Extent.Segment != b {
		t.Fatalf("after clearing segment a: %+v, %v", r, err)
	}
	if got := s.Segments().Used(alloc.TierMemory); got != used-128 {
		t.Fatalf("memory used %d, want %d", got, used-128)
	}
	// All of client1's segments: the last replica goes, so the object is erased.
	if err := s.ClearReplica(now, "", "ab", client1, alloc.ID{}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Peek("", "ab")
	wantReason(t, err, ObjectNotFound)
	// Only the caller's segments: client2's replica stays.
	if err := s.ClearReplica(now, "", "ao", client1, alloc.ID{}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Peek("", "ao"); err != nil || len(r.Replicas) != 1 || r.Replicas[0].Extent.Segment != other {
		t.Fatalf("after clearing client1's segments: %+v, %v", r, err)
	}

	wantReason(t, s.ClearReplica(now, "", "o", client1, alloc.ID{}), NoReplicaOnSegment)
	wantReason(t, s.ClearReplica(now, "", "o", client1, other), SegmentOwnedByOtherClient)
	wantReason(t, s.ClearReplica(now, "", "o", client1, segID(9)), SegmentNotFound)
	wantReason(t, s.ClearReplica(now, "", "nope", client2, alloc.ID{}), ObjectNotFound)
	wantReason(t, s.ClearReplica(now, "nobody", "o", client2, alloc.ID{}), TenantNotRegistered)
	// A leased object, and one being written, are left alone.
	if _, err := s.Get(now, "", "o"); err != nil {
		t.Fatal(err)
	}
	wantReason(t, s.ClearReplica(now, "", "o", client2, other), ObjectHasLease)
	if _, err := s.PutStart(sec, 1, PutStartRequest{Tenant: "", Client: client1, Key: "p", Size: 100,
		Config: ReplicaConfig{Memory: 1, Preferred: []alloc.ID{other}}}); err != nil {
		t.Fatal(err)
	}
	wantReason(t, s.ClearReplica(now, "", "p", client2, other), ReplicaIsNotReady)
	if err := s.ClearReplica(now+20*sec, "", "o", client2, other); err != nil {
		t.Fatalf("after the lease: %v", err)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// The replicated step refuses another incarnation of the key, whatever the leader prepared.
func TestClearReplicasFenced(t *testing.T) {
	s := newTestStore(t)
	a := mount(t, s, 1, alloc.TierMemory, 1<<20)
	put(t, s, sec, "", "k", "", 100)
	on, err := s.ClearScope(client1, a)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.PrepareClear(100*sec, "", "k", on)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(100*sec, "", "k"); err != ErrUnlinkPending {
		t.Fatalf("read of a prepared object = %v, want ErrUnlinkPending", err)
	}
	s.ClearMarks([]ObjectToken{tok})
	if err := s.Remove(100*sec, "", "k", true); err != nil {
		t.Fatal(err)
	}
	put(t, s, sec, "", "k", "", 100)
	wantReason(t, s.ClearReplicas(tok, on), ObjectNotFound)
	if _, err := s.Peek("", "k"); err != nil {
		t.Fatalf("the new incarnation was touched: %v", err)
	}
}
