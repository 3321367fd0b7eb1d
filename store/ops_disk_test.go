package store

import (
	"testing"

	"metad/store/alloc"
)

// diskToken is the eviction token of key's current state (default tenant).
func diskToken(tb testing.TB, s *Store, key string) ObjectToken {
	tb.Helper()
	t := s.Tenants().Lookup(DefaultTenant)
	e := t.dir.lookup(key)
	if e == nil {
		tb.Fatalf("%q not found", key)
	}
	return tokenOf(t, e)
}

// tiersOf lists the tiers of key's replicas in the object's order.
func tiersOf(tb testing.TB, s *Store, key string) []alloc.Tier {
	tb.Helper()
	r, err := s.Peek("", key)
	if err != nil {
		tb.Fatalf("Peek %q: %v", key, err)
	}
	var out []alloc.Tier
	for _, rep := range r.Replicas {
		out = append(out, rep.Tier)
	}
	return out
}

// TestLocalDiskTier walks one worker's SSD through the store: register, offload reports and
// their refusals, a memory eviction that leaves the object on disk, the owner's own eviction,
// and an unmount that drops exactly the owner's LOCAL_DISK replicas.
func TestLocalDiskTier(t *testing.T) {
	s := newTestStore(t)
	mem := mount(t, s, 1, alloc.TierMemory, 1<<20)
	for _, k := range []string{"a", "b", "c", "d"} {
		put(t, s, sec, "", k, "", 100)
	}
	charged := s.Tenants().Lookup(DefaultTenant).Quota().Charged()

	// Not registered yet: the whole report is refused.
	if _, err := s.OffloadDone(sec, "", client1, []OffloadResult{{Key: "a", Size: 100, Success: true}}); err == nil {
		t.Fatal("offload report without a local disk accepted")
	} else {
		wantReason(t, err, SegmentNotFound)
	}
	wantReason(t, s.CheckOffloadDone("", client1), SegmentNotFound)

	// Registration: one segment of the owner, idempotent, a conflicting one refused.
	seg, created, err := s.MountLocalDisk(client1, 256, "host-1:9000", true)
	if err != nil || !created || seg != alloc.LocalDiskID(client1) {
		t.Fatalf("MountLocalDisk = %s, %v, %v", seg, created, err)
	}
	if _, created, err := s.MountLocalDisk(client1, 256, "host-1:9000", true); err != nil || created {
		t.Fatalf("same registration again = %v, %v; want a no-op", created, err)
	}
	_, _, err = s.MountLocalDisk(client1, 512, "host-1:9000", true)
	wantReason(t, err, InvalidParams)
	wantReason(t, s.CheckMountLocalDisk(client1, 256, "host-1:9000", false), InvalidParams)
	if info, ok := s.Segments().Get(seg); !ok || info.Tier != alloc.TierLocalDisk || info.Owner != client1 || !info.Offload || info.Size != 256 {
		t.Fatalf("registration segment = %+v, %v", info, ok)
	}
	if s.Segments().Capacity(alloc.TierMemory) != 1<<20 {
		t.Fatal("a local disk counted as memory capacity")
	}

	// Reports, one verdict each. The SSD holds two 128-byte extents: "c" finds it full.
	if _, err := s.PutStart(sec, 1, putReq("", "p", "", 100)); err != nil { // PROCESSING only
		t.Fatal(err)
	}
	errs, err := s.OffloadDone(sec, "", client1, []OffloadResult{
		{Key: "a", Size: 100, Success: true},
		{Key: "a2", Size: 100, Success: true},
		{Key: "b", Size: 99, Success: true},
		{Key: "p", Size: 100, Success: true},
		{Key: "b", Size: 100, Success: true},
		{Key: "c", Size: 100, Success: true},
		{Key: "d", Size: 100, Success: false},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []Reason{OK, ObjectNotFound, InvalidParams, ReplicaIsNotReady, OK, NoAvailableHandle, OK} {
		if got := ReasonOf(errs[i]); got != want {
			t.Errorf("report %d: %v, want %s", i, errs[i], want)
		}
	}
	if got := tiersOf(t, s, "a"); len(got) != 2 || got[0] != alloc.TierMemory || got[1] != alloc.TierLocalDisk {
		t.Fatalf("a's replicas: %v, want MEMORY then LOCAL_DISK", got)
	}
	if got := tiersOf(t, s, "d"); len(got) != 1 {
		t.Fatalf("a failed report changed d: %v", got)
	}
	if s.Segments().Used(alloc.TierLocalDisk) != 256 {
		t.Fatalf("local disk used %d, want 256", s.Segments().Used(alloc.TierLocalDisk))
	}
	// A repeated report records nothing twice.
	if errs, err := s.OffloadDone(sec, "", client1, []OffloadResult{{Key: "a", Size: 100, Success: true}}); err != nil || errs[0] != nil {
		t.Fatalf("repeated report = %v, %v", errs, err)
	}
	if got := tiersOf(t, s, "a"); len(got) != 2 {
		t.Fatalf("repeated report added a replica: %v", got)
	}
	if got := s.Tenants().Lookup(DefaultTenant).Quota().Charged(); got != charged+100 { // p's PutStart only
		t.Fatalf("charged %d, want %d: a LOCAL_DISK replica charged quota", got, charged+100)
	}

	// Memory eviction drops the memory replica and keeps the object on disk; it stays readable.
	toks := [][]ObjectToken{{diskToken(t, s, "a")}}
	if errs, _ := s.EvictUnits(toks, alloc.TierMemory); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if got := tiersOf(t, s, "a"); len(got) != 1 || got[0] != alloc.TierLocalDisk {
		t.Fatalf("after memory eviction a has %v, want LOCAL_DISK alone", got)
	}
	if r, err := s.Get(2*sec, "", "a"); err != nil || len(r.Replicas) != 1 {
		t.Fatalf("Get of a disk-only object = %+v, %v", r, err)
	}
	// A copy or move does not read a LOCAL_DISK replica.
	_, err = s.StartReplicaTask(2*sec, 1, ReplicaTaskRequest{Tenant: "", Client: client1, Key: "a", Kind: TaskCopy, Source: seg})
	wantReason(t, err, ReplicaNotFound)
	_, err = s.StartReplicaTask(2*sec, 1, ReplicaTaskRequest{Tenant: "", Client: client1, Key: "b", Kind: TaskCopy, Source: mem, Targets: []alloc.ID{seg}})
	wantReason(t, err, InvalidParams)

	// The owner's eviction: leased or not, the replica goes; a disk-only object goes with it.
	errs, err = s.DropDiskReplicas("", client1, alloc.TierLocalDisk, []string{"a", "b", "c", "nope"})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []Reason{OK, OK, NoReplicaOnSegment, ObjectNotFound} {
		if got := ReasonOf(errs[i]); got != want {
			t.Errorf("drop %d: %v, want %s", i, errs[i], want)
		}
	}
	_, err = s.Peek("", "a")
	wantReason(t, err, ObjectNotFound)
	if got := tiersOf(t, s, "b"); len(got) != 1 || got[0] != alloc.TierMemory {
		t.Fatalf("b after its disk replica went: %v", got)
	}
	if s.Segments().Used(alloc.TierLocalDisk) != 0 {
		t.Fatalf("local disk used %d after every drop", s.Segments().Used(alloc.TierLocalDisk))
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestLocalDiskUnmount: an unmount of a registration, or its owner's expiry, drops exactly that
// owner's LOCAL_DISK replicas; an object left with none is erased, and another owner's stay.
func TestLocalDiskUnmount(t *testing.T) {
	for _, expiry := range []bool{false, true} {
		s := newTestStore(t)
		if _, err := s.MountSegment(alloc.Segment{ID: segID(9), Name: "seg", Base: 1 << 30, Size: 1 << 20,
			Endpoint: "127.0.0.1:7009", Tier: alloc.TierMemory, Owner: client2}); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"both", "one", "gone"} {
			req := putReq("", k, "", 100)
			req.Client = client2
			if _, err := s.PutStart(sec, 1, req); err != nil {
				t.Fatal(err)
			}
			if err := s.PutEnd(sec, PutEndRequest{Client: client2, Key: k}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []alloc.ID{client1, client2} {
			if _, _, err := s.MountLocalDisk(c, 1<<20, "host:1", false); err != nil {
				t.Fatal(err)
			}
		}
		report := func(c alloc.ID, keys ...string) {
			rs := make([]OffloadResult, len(keys))
			for i, k := range keys {
				rs[i] = OffloadResult{Key: k, Size: 100, Success: true}
			}
			errs, err := s.OffloadDone(sec, "", c, rs)
			if err != nil {
				t.Fatal(err)
			}
			for i, err := range errs {
				if err != nil {
					t.Fatalf("report %q: %v", keys[i], err)
				}
			}
		}
		report(client1, "both", "one", "gone")
		report(client2, "both")
		// "gone" is left on client1's SSD alone.
		if errs, _ := s.EvictUnits([][]ObjectToken{{diskToken(t, s, "gone")}}, alloc.TierMemory); errs[0] != nil {
			t.Fatal(errs[0])
		}
		var r UnmountResult
		if expiry {
			r = s.UnmountClient(client1, false)
		} else {
			var err error
			if r, err = s.UnmountSegment(alloc.LocalDiskID(client1)); err != nil {
				t.Fatal(err)
			}
		}
		if r.Replicas != 3 || r.Erased != 1 {
			t.Fatalf("expiry %v: unmount dropped %+v, want 3 replicas and 1 object", expiry, r)
		}
		if got := tiersOf(t, s, "both"); len(got) != 2 || got[1] != alloc.TierLocalDisk {
			t.Fatalf("expiry %v: both has %v, want its memory replica and client2's disk one", expiry, got)
		}
		if got := tiersOf(t, s, "one"); len(got) != 1 || got[0] != alloc.TierMemory {
			t.Fatalf("expiry %v: one has %v", expiry, got)
		}
		_, err := s.Peek("", "gone")
		wantReason(t, err, ObjectNotFound)
		if err := s.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUpsertDropsDiskReplicas: an upsert never turns a LOCAL_DISK replica (the owner's file of the
// old bytes) into one of the new write; the object is rewritten on fresh replicas, whatever its
// size, and a disk-only object gets memory ones.
func TestUpsertDropsDiskReplicas(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	staging := mount(t, s, 2, alloc.TierMemory, 1<<20)
	if _, _, err := s.MountLocalDisk(client1, 1<<20, "host-1:9000", false); err != nil {
		t.Fatal(err)
	}
	put(t, s, sec, "", "both", "", 100)
	req := putReq("", "disk", "", 100)
	req.Config.Preferred = []alloc.ID{staging}
	if _, err := s.PutStart(sec, 1, req); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEnd(sec, PutEndRequest{Client: client1, Key: "disk"}); err != nil {
		t.Fatal(err)
	}
	if errs, err := s.OffloadDone(sec, "", client1, []OffloadResult{{Key: "both", Size: 100, Success: true}, {Key: "disk", Size: 100, Success: true}}); err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatal(errs, err)
	}
	if _, err := s.UnmountSegment(staging); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"both", "disk"} {
		reps, reused, err := s.Upsert(2*sec, 1, putReq("", k, "", 100))
		if err != nil || reused || len(reps) != 1 || reps[0].Tier != alloc.TierMemory || reps[0].Status != Processing {
			t.Fatalf("upsert %s = %+v, reused %v, %v; want one fresh PROCESSING memory replica", k, reps, reused, err)
		}
		if err := s.UpsertEnd(2*sec, PutEndRequest{Client: client1, Key: k}); err != nil {
			t.Fatal(err)
		}
		if got := tiersOf(t, s, k); len(got) != 1 || got[0] != alloc.TierMemory {
			t.Fatalf("%s after the upsert: %v", k, got)
		}
	}
	if s.Segments().Used(alloc.TierLocalDisk) != 0 {
		t.Fatalf("local disk still accounts %d bytes", s.Segments().Used(alloc.TierLocalDisk))
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestTierObjects: the objects by tier follow every change: a put, an offload, a memory eviction
// that leaves an object on disk alone, the owner's eviction and a removal (a restore:
// TestGoldenSnapshotV8).
func TestTierObjects(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	if _, _, err := s.MountLocalDisk(client1, 1<<20, "host-1:9000", false); err != nil {
		t.Fatal(err)
	}
	want := func(when string, w TierObjects) {
		t.Helper()
		if got := s.TierObjects(); got != w {
			t.Fatalf("%s: %+v, want %+v", when, got, w)
		}
	}
	put(t, s, sec, "", "a", "", 100)
	put(t, s, sec, "", "b", "", 100)
	want("two puts", TierObjects{Memory: 2})
	if _, err := s.OffloadDone(sec, "", client1, []OffloadResult{{Key: "a", Size: 100, Success: true}, {Key: "b", Size: 100, Success: true}}); err != nil {
		t.Fatal(err)
	}
	want("offloaded", TierObjects{Memory: 2, LocalDisk: 2})
	if errs, _ := s.EvictUnits([][]ObjectToken{{diskToken(t, s, "a")}}, alloc.TierMemory); errs[0] != nil {
		t.Fatal(errs[0])
	}
	want("a evicted from memory", TierObjects{Memory: 1, LocalDisk: 2, DiskOnly: 1})
	if _, err := s.DropDiskReplicas("", client1, alloc.TierLocalDisk, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	want("the owner's evictions", TierObjects{Memory: 1})
	if err := s.Remove(2*sec, "", "b", true); err != nil {
		t.Fatal(err)
	}
	want("b removed", TierObjects{})
}
