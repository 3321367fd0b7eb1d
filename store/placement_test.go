package store

import (
	"testing"

	"metad/store/alloc"
)

// Segments (mount, unmount) and the placement of replicas on them.

func TestNoAvailableHandle(t *testing.T) {
	s := newTestStore(t)
	_, err := s.PutStart(sec, 1, putReq("", "k", "", 100))
	wantReason(t, err, NoAvailableHandle)
	if _, wanted := s.EvictionWanted(); wanted {
		t.Fatal("a put with no MEMORY segment mounted raised the eviction flag")
	}
	mount(t, s, 1, alloc.TierMemory, 1024)
	_, err = s.PutStart(sec, 1, putReq("", "k", "", 2000))
	wantReason(t, err, NoAvailableHandle)
	if _, wanted := s.EvictionWanted(); wanted {
		t.Fatal("a put larger than every segment raised the eviction flag: eviction cannot help it")
	}
	put(t, s, sec, "", "a", "", 600)
	_, err = s.PutStart(sec, 1, putReq("", "k", "", 600))
	wantReason(t, err, NoAvailableHandle)
	if _, wanted := s.EvictionWanted(); !wanted {
		t.Fatal("a put that fits a segment but found no room did not raise the eviction flag")
	}
	if _, wanted := s.EvictionWanted(); wanted {
		t.Fatal("EvictionWanted did not clear the flag")
	}
	nr := putReq("", "n", "", 100)
	nr.Config.NOF = 1
	_, err = s.PutStart(sec, 1, nr)
	wantReason(t, err, NoAvailableHandle)
	if _, wanted := s.EvictionWanted(); wanted {
		t.Fatal("a put that found no NOF segment raised the memory eviction flag")
	}
	if err := s.Remove(sec, "", "a", true); err != nil {
		t.Fatal(err)
	}
	if c := s.Tenants().Lookup(DefaultTenant).Quota().Charged(); c != 0 {
		t.Fatalf("failed put left %d bytes charged", c)
	}
	// Two replicas asked, one segment: success with one replica (short).
	r := putReq("", "k", "", 100)
	r.Config.Memory = 2
	reps, err := s.PutStart(sec, 1, r)
	if err != nil || len(reps) != 1 {
		t.Fatalf("short placement: %v %v", reps, err)
	}
	if c := s.Tenants().Lookup(DefaultTenant).Quota().Charged(); c != 100 {
		t.Fatalf("short placement charged %d, want 100", c)
	}
}

func TestPreferredSegments(t *testing.T) {
	s := newTestStore(t)
	for n := byte(1); n <= 4; n++ {
		mount(t, s, n, alloc.TierMemory, 1<<20)
	}
	r := putReq("", "k", "", 100)
	r.Config.Memory = 2
	r.Config.Preferred = []alloc.ID{segID(3), segID(2)}
	reps, err := s.PutStart(sec, 1, r)
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].Extent.Segment != segID(3) || reps[1].Extent.Segment != segID(2) {
		t.Fatalf("preferred order not honoured: %+v", reps)
	}
}

func TestSegments(t *testing.T) {
	s := newTestStore(t)
	seg := alloc.Segment{ID: segID(1), Name: "s", Base: 4096, Size: 1 << 20, Endpoint: "e", Tier: alloc.TierMemory, Owner: client1}
	if created, err := s.MountSegment(seg); err != nil || !created {
		t.Fatal(created, err)
	}
	if created, err := s.MountSegment(seg); err != nil || created {
		t.Fatalf("remount: %v %v; want idempotent", created, err)
	}
	other := seg
	other.Owner = client2
	_, err := s.MountSegment(other)
	wantReason(t, err, SegmentOwnedByOtherClient)
	bad := seg
	bad.ID, bad.Base = segID(2), 100
	_, err = s.MountSegment(bad)
	wantReason(t, err, InvalidParams)
	_, err = s.UnmountSegment(segID(9))
	wantReason(t, err, SegmentNotFound)

	mount(t, s, 3, alloc.TierMemory, 1<<20) // mount() uses client1 as owner too
	r := putReq("", "two", "", 100)
	r.Config.Memory, r.Config.Preferred = 2, []alloc.ID{segID(1), segID(3)}
	if _, err := s.PutStart(sec, 1, r); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEnd(sec, PutEndRequest{Client: client1, Key: "two"}); err != nil {
		t.Fatal(err)
	}
	r = putReq("", "one", "", 100)
	r.Config.Preferred = []alloc.ID{segID(1)}
	if _, err := s.PutStart(sec, 1, r); err != nil {
		t.Fatal(err)
	}
	res, err := s.UnmountSegment(segID(1))
	if err != nil || res.Replicas != 2 || res.Erased != 1 {
		t.Fatalf("unmount = %+v %v; want 2 replicas dropped, 1 object erased", res, err)
	}
	g, err := s.Get(sec, "", "two")
	if err != nil || len(g.Replicas) != 1 || g.Replicas[0].Extent.Segment != segID(3) {
		t.Fatalf("survivor: %+v %v", g, err)
	}
	if c := s.Tenants().Lookup(DefaultTenant).Quota().Charged(); c != 100 {
		t.Fatalf("charged %d after unmount, want 100", c)
	}
	if res := s.UnmountClient(client1, false); res.Segments != 1 || res.Erased != 1 {
		t.Fatalf("UnmountClient = %+v", res)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestPlacementIsDeterministic(t *testing.T) {
	run := func() []Replica {
		s := newTestStore(t)
		for n := byte(1); n <= 6; n++ {
			mount(t, s, n, alloc.TierMemory, 1<<20)
		}
		var all []Replica
		for i := range 50 {
			r := putReq("", string(rune('a'+i)), "", uint64(64*(i+1)))
			r.Config.Memory = 2
			reps, err := s.PutStart(int64(i)*sec, uint64(i)*7919, r)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, reps...)
		}
		return all
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("replica %d differs: %+v vs %+v", i, a[i], b[i])
		}
	}
}
