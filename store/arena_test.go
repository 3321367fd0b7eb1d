package store

import (
	"testing"

	"metad/store/alloc"
)

// commitReq is a PutCommit of one object of size bytes at the given MEMORY ranges.
func commitReq(key string, size uint64, exts ...alloc.Extent) CommitRequest {
	it := CommitItem{Key: key, Size: size, Config: ReplicaConfig{Memory: len(exts)}, PutStart: 1}
	for _, e := range exts {
		it.Replicas = append(it.Replicas, CommitReplica{Tier: alloc.TierMemory, Extent: e})
	}
	return CommitRequest{Tenant: DefaultTenant, Client: client1, Items: []CommitItem{it}}
}

func checkInvariants(t *testing.T, s *Store) {
	t.Helper()
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestArenaGrantCommitRetire: a granted arena's bytes are used in its segment and free for commits;
// a commit takes exactly its ranges (the object owns them, freeing it returns them to the segment,
// not the arena); retiring returns what is left; every step keeps the invariants.
func TestArenaGrantCommitRetire(t *testing.T) {
	s := newTestStore(t)
	seg := mount(t, s, 1, alloc.TierMemory, 1<<20)
	got := s.Arenas().Grant(3, []ArenaSpec{{Segment: seg, Size: 64 << 10}, {Segment: seg, Size: 64 << 10}, {Segment: segID(9), Size: 4096}})
	if len(got) != 1 || got[0].Term != 3 || got[0].Size != 64<<10 || got[0].FreeBytes() != 64<<10 {
		t.Fatalf("granted %+v: want one arena (a segment named twice and an unknown one skipped)", got)
	}
	a := got[0]
	if info, _ := s.Segments().Get(seg); info.Used != 64<<10 {
		t.Fatalf("segment used %d, want the arena's %d", info.Used, 64<<10)
	}
	checkInvariants(t, s)

	ext := alloc.Extent{Segment: seg, Offset: a.Offset + 4096, Size: 1024}
	if errs := s.CommitPuts(5, commitReq("k", 1000, ext)); errs[0] != nil {
		t.Fatal(errs[0])
	}
	o, err := s.Peek(DefaultTenant, "k")
	if err != nil || len(o.Replicas) != 1 || o.Replicas[0].Extent != ext || o.Replicas[0].Status != Complete {
		t.Fatalf("committed object %+v, %v", o, err)
	}
	if ar := s.Arenas().List()[0]; ar.FreeBytes() != 64<<10-1024 || len(ar.Free) != 2 {
		t.Fatalf("arena after the commit: %+v", ar)
	}
	checkInvariants(t, s)

	// A repeat of the same commit is OK and changes nothing; another writer's or other ranges are
	// refused.
	if errs := s.CommitPuts(6, commitReq("k", 1000, ext)); errs[0] != nil {
		t.Fatalf("repeat: %v", errs[0])
	}
	other := commitReq("k", 1000, alloc.Extent{Segment: seg, Offset: a.Offset, Size: 1024})
	wantReason(t, s.CommitPuts(6, other)[0], ObjectAlreadyExists)
	// The same range for another key: taken already.
	wantReason(t, s.CommitPuts(6, commitReq("k2", 1000, ext))[0], ReservationLost)
	// A range outside every arena.
	wantReason(t, s.CommitPuts(6, commitReq("k3", 1000, alloc.Extent{Segment: seg, Offset: a.Offset + a.Size, Size: 1024}))[0], ReservationLost)
	checkInvariants(t, s)

	// Retire: the unused bytes go back; the object's stay its own.
	if n := s.Arenas().Retire([]uint64{a.ID, 999}); n != 1 {
		t.Fatalf("retired %d arenas, want 1", n)
	}
	if info, _ := s.Segments().Get(seg); info.Used != 1024 || len(s.Arenas().List()) != 0 {
		t.Fatalf("after retire: used %d, arenas %+v", info.Used, s.Arenas().List())
	}
	checkInvariants(t, s)
	// A commit into a retired arena is lost.
	wantReason(t, s.CommitPuts(7, commitReq("k4", 1000, alloc.Extent{Segment: seg, Offset: a.Offset, Size: 1024}))[0], ReservationLost)
	checkInvariants(t, s)
}

// TestCommitRefusalChangesNothing: a commit refused for quota, a bad shape or a tenant not
// registered leaves the arena and the quota as they were.
func TestCommitRefusalChangesNothing(t *testing.T) {
	s := newTestStore(t)
	seg := mount(t, s, 1, alloc.TierMemory, 1<<20)
	if _, err := s.RegisterTenant("q", 2048); err != nil {
		t.Fatal(err)
	}
	a := s.Arenas().Grant(1, []ArenaSpec{{Segment: seg, Size: 64 << 10}})[0]
	req := commitReq("big", 4096, alloc.Extent{Segment: seg, Offset: a.Offset, Size: 4096})
	req.Tenant = "q"
	wantReason(t, s.CommitPuts(2, req)[0], TenantQuotaExceeded)
	if ar := s.Arenas().List()[0]; ar.FreeBytes() != a.Size {
		t.Fatalf("a refused commit took %d bytes of the arena", a.Size-ar.FreeBytes())
	}
	bad := commitReq("bad", 4096, alloc.Extent{Segment: seg, Offset: a.Offset, Size: 64}) // size does not match
	wantReason(t, s.CommitPuts(2, bad)[0], InvalidParams)
	nt := commitReq("x", 64, alloc.Extent{Segment: seg, Offset: a.Offset, Size: 64})
	nt.Tenant = "nobody"
	wantReason(t, s.CommitPuts(2, nt)[0], TenantNotRegistered)
	if ar := s.Arenas().List()[0]; ar.FreeBytes() != a.Size {
		t.Fatalf("refused commits took %d bytes of the arena", a.Size-ar.FreeBytes())
	}
	checkInvariants(t, s)
}

// TestCommitStraddlesNeighbourArenas: two arenas granted back to back on a segment; a range across
// their boundary is taken from both.
func TestCommitStraddlesNeighbourArenas(t *testing.T) {
	s := newTestStore(t)
	seg := mount(t, s, 1, alloc.TierMemory, 1<<20)
	a1 := s.Arenas().Grant(1, []ArenaSpec{{Segment: seg, Size: 4096}})[0]
	a2 := s.Arenas().Grant(1, []ArenaSpec{{Segment: seg, Size: 4096}})[0]
	if a2.Offset != a1.Offset+a1.Size {
		t.Skipf("arenas not adjacent: %+v %+v", a1, a2)
	}
	ext := alloc.Extent{Segment: seg, Offset: a1.Offset + 2048, Size: 4096}
	if errs := s.CommitPuts(2, commitReq("k", 4096, ext)); errs[0] != nil {
		t.Fatal(errs[0])
	}
	as := s.Arenas().List()
	if as[0].FreeBytes() != 2048 || as[1].FreeBytes() != 2048 {
		t.Fatalf("arenas after a straddling commit: %+v", as)
	}
	checkInvariants(t, s)
}

// TestArenasLeaveWithTheirSegment: unmounting a segment drops its arenas; closing one (graceful
// unmount, drain) retires them, so a segment holding only arena bytes unmounts at once.
func TestArenasLeaveWithTheirSegment(t *testing.T) {
	s := newTestStore(t)
	s1 := mount(t, s, 1, alloc.TierMemory, 1<<20)
	s2 := mount(t, s, 2, alloc.TierMemory, 1<<20)
	s3 := mount(t, s, 3, alloc.TierMemory, 1<<20)
	s.Arenas().Grant(1, []ArenaSpec{{Segment: s1, Size: 4096}, {Segment: s2, Size: 4096}, {Segment: s3, Size: 4096}})
	if _, err := s.UnmountSegment(s1); err != nil {
		t.Fatal(err)
	}
	r, err := s.CloseSegment(client1, s2, 100*sec)
	if err != nil || r.Segments != 1 {
		t.Fatalf("close of a segment holding only an arena: %+v, %v (want unmounted at once)", r, err)
	}
	if _, err := s.Drains().Start(1, DrainSpec{Segments: []alloc.ID{s3}, MaxConcurrency: 1}); err != nil {
		t.Fatal(err)
	}
	if as := s.Arenas().List(); len(as) != 0 {
		t.Fatalf("arenas left: %+v", as)
	}
	if info, _ := s.Segments().Get(s3); info.Used != 0 {
		t.Fatalf("draining segment still holds %d bytes", info.Used)
	}
	checkInvariants(t, s)
	// No arena on a closing segment.
	if got := s.Arenas().Grant(2, []ArenaSpec{{Segment: s3, Size: 4096}}); len(got) != 0 {
		t.Fatalf("granted on a draining segment: %+v", got)
	}
}

// TestRestoreArenasRefusesOverlap: a snapshot's arena that overlaps an object or another arena, or
// lies outside its segment, is refused.
func TestRestoreArenasRefusesOverlap(t *testing.T) {
	s := newTestStore(t)
	seg := mount(t, s, 1, alloc.TierMemory, 1<<20)
	put(t, s, 1, DefaultTenant, "k", "", 4096) // at offset 0 (best fit in an empty segment)
	for _, tc := range []struct {
		name string
		a    Arena
	}{
		{"over an object", Arena{ID: 1, Segment: seg, Offset: 0, Size: 8192, Free: []alloc.Span{{Offset: 0, Size: 8192}}}},
		{"past the segment", Arena{ID: 1, Segment: seg, Offset: 1 << 20, Size: 4096, Free: []alloc.Span{{Offset: 1 << 20, Size: 4096}}}},
		{"free span outside", Arena{ID: 1, Segment: seg, Offset: 8192, Size: 4096, Free: []alloc.Span{{Offset: 4096, Size: 4096}}}},
		{"id above the counter", Arena{ID: 5, Segment: seg, Offset: 8192, Size: 4096, Free: []alloc.Span{{Offset: 8192, Size: 4096}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s2 := newTestStore(t)
			mount(t, s2, 1, alloc.TierMemory, 1<<20)
			put(t, s2, 1, DefaultTenant, "k", "", 4096)
			if err := s2.Arenas().Restore([]Arena{tc.a}, 1); err == nil {
				t.Fatal("restored")
			}
		})
	}
	good := Arena{ID: 1, Term: 2, Segment: seg, Offset: 8192, Size: 8192, Free: []alloc.Span{{Offset: 8192, Size: 1024}, {Offset: 12288, Size: 4096}}}
	if err := s.Arenas().Restore([]Arena{good}, 1); err != nil {
		t.Fatal(err)
	}
	if as := s.Arenas().List(); len(as) != 1 || as[0].FreeBytes() != 5120 {
		t.Fatalf("restored %+v", as)
	}
	// The bytes between its free spans belong to objects in a sound state; here none holds
	// [9216, 12288), and they stay free in the segment: the arena never gives them out, and
	// retiring it frees only its free spans.
	checkInvariants(t, s)
	if s.Arenas().Retire([]uint64{1}); s.Segments().Used(alloc.TierMemory) != 4096 {
		t.Fatalf("after retire the segment holds %d bytes, want the object's 4096", s.Segments().Used(alloc.TierMemory))
	}
}
