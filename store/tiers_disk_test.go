package store

import (
	"slices"
	"testing"

	"metad/store/alloc"
)

// mountFiles mounts segment n of a file tier (DISK or DFS: base 0) with size bytes, owned by owner.
func mountFiles(tb testing.TB, s *Store, n byte, tier alloc.Tier, size uint64, owner alloc.ID) alloc.ID {
	tb.Helper()
	id := segID(n)
	if _, err := s.MountSegment(alloc.Segment{ID: id, Name: "files", Size: size, Endpoint: "/mnt/shared/c1",
		Tier: tier, Owner: owner}); err != nil {
		tb.Fatal(err)
	}
	return id
}

// TestSharedRootAndDFS walks the DISK and DFS tiers through the store: every put lands on a
// mounted shared root, DFS replicas by count, PutEnd of one tier, what they charge, the tier
// counts, the survival of both at their writer's expiry (the old master erased intact shared-FS
// data then), eviction of one tier, and EvictDiskReplica of DISK files.
func TestSharedRootAndDFS(t *testing.T) {
	s := newTestStore(t)
	writer := clientID(7)
	mem := mount(t, s, 1, alloc.TierMemory, 1<<20) // client1's memory
	if _, err := s.MountSegment(alloc.Segment{ID: segID(2), Name: "w", Base: 1 << 31, Size: 1 << 20,
		Endpoint: "127.0.0.1:7001", Tier: alloc.TierMemory, Owner: writer}); err != nil {
		t.Fatal(err)
	}
	root := mountFiles(t, s, 3, alloc.TierDisk, 1024, clientID(9))
	pool := mountFiles(t, s, 4, alloc.TierDFS, 1<<20, clientID(9))
	_ = pool

	// A put asking for a DFS replica: MEMORY, DFS and the root's DISK one, all PROCESSING.
	req := putReq("", "a", "", 100)
	req.Client = writer
	req.Config.DFS = 1
	req.Config.Preferred = []alloc.ID{segID(2)}
	reps, err := s.PutStart(sec, 1, req)
	if err != nil {
		t.Fatal(err)
	}
	var tiers []alloc.Tier
	for _, r := range reps {
		tiers = append(tiers, r.Tier)
		if r.Status != Processing {
			t.Fatalf("replica %+v not PROCESSING after PutStart", r)
		}
	}
	if !slices.Equal(tiers, []alloc.Tier{alloc.TierMemory, alloc.TierDisk, alloc.TierDFS}) {
		t.Fatalf("tiers = %v, want MEMORY, DISK, DFS", tiers)
	}
	if got := s.Tenants().Lookup(DefaultTenant).Quota().Charged(); got != 100 {
		t.Fatalf("charged %d, want 100 (the MEMORY replica only)", got)
	}
	// PutEnd of the DISK tier alone: the others stay PROCESSING.
	if err := s.PutEnd(sec, PutEndRequest{Client: writer, Key: "a", Tier: alloc.TierDisk}); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Peek("", "a"); len(r.Replicas) != 1 || r.Replicas[0].Tier != alloc.TierDisk {
		t.Fatalf("readable replicas after the DISK PutEnd = %+v", r.Replicas)
	}
	if err := s.PutEnd(sec, PutEndRequest{Client: writer, Key: "a"}); err != nil {
		t.Fatal(err)
	}
	wantReason(t, s.PutEnd(sec, PutEndRequest{Client: writer, Key: "a", Tier: alloc.TierLocalDisk}), InvalidParams)

	// A plain put of client1 (on its own segment): memory and DISK; one that does not fit the root
	// any more: memory only.
	own := func(key string, size uint64) {
		req := putReq("", key, "", size)
		req.Config.Preferred = []alloc.ID{mem}
		if _, err := s.PutStart(sec, 1, req); err != nil {
			t.Fatal(err)
		}
		if err := s.PutEnd(sec, PutEndRequest{Client: client1, Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	own("b", 100)
	if got := tiersOf(t, s, "b"); !slices.Equal(got, []alloc.Tier{alloc.TierMemory, alloc.TierDisk}) {
		t.Fatalf("b: tiers %v", got)
	}
	own("big", 1000) // 1024-byte root, 256 bytes used: no room
	if got := tiersOf(t, s, "big"); !slices.Equal(got, []alloc.Tier{alloc.TierMemory}) {
		t.Fatalf("big: tiers %v, want MEMORY only (the root is full)", got)
	}
	if to := s.TierObjects(); to.Memory != 3 || to.Disk != 2 || to.DFS != 1 || to.DiskOnly != 0 {
		t.Fatalf("tier objects %+v", to)
	}

	// The writer expires: its memory segment goes, the root and the pool (not its own) stay, and
	// "a" lives on on the shared tiers.
	res := s.UnmountClient(writer, true)
	if res.Segments != 1 || res.Erased != 0 {
		t.Fatalf("writer's expiry = %+v; want its one memory segment, nothing erased", res)
	}
	if got := tiersOf(t, s, "a"); !slices.Equal(got, []alloc.Tier{alloc.TierDisk, alloc.TierDFS}) {
		t.Fatalf("a after its writer's expiry: tiers %v, want DISK, DFS", got)
	}
	// The mounter of the root and the pool expires: they stay too.
	if res := s.UnmountClient(clientID(9), true); res.Segments != 0 {
		t.Fatalf("shared segments' owner's expiry unmounted %+v", res)
	}
	if to := s.TierObjects(); to.DiskOnly != 1 || to.Memory != 2 {
		t.Fatalf("tier objects after the expiry %+v; want a disk-only", to)
	}

	// Disk eviction drops the DISK replica only; DFS eviction then erases "a" (nothing left).
	errs, freed := s.EvictUnits([][]ObjectToken{{diskToken(t, s, "a")}, {diskToken(t, s, "b")}}, alloc.TierDisk)
	if errs[0] != nil || errs[1] != nil || freed != 256 {
		t.Fatalf("disk eviction = %v, freed %d", errs, freed)
	}
	if got := tiersOf(t, s, "b"); !slices.Equal(got, []alloc.Tier{alloc.TierMemory}) {
		t.Fatalf("b after disk eviction: %v", got)
	}
	if errs, _ := s.EvictUnits([][]ObjectToken{{diskToken(t, s, "a")}}, alloc.TierDFS); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if _, err := s.Peek("", "a"); ReasonOf(err) != ObjectNotFound {
		t.Fatalf("a after its last replica was evicted: %v", err)
	}
	if s.Segments().Used(alloc.TierDisk) != 0 || s.Segments().Used(alloc.TierDFS) != 0 {
		t.Fatal("evicted file replicas left bytes used")
	}

	// EvictDiskReplica of DISK files: anyone's report drops the COMPLETE DISK replicas.
	put(t, s, sec, "", "c", "", 100)
	if _, err := s.PutStart(sec, 1, putReq("", "w", "", 64)); err != nil { // PROCESSING: its writer's, not dropped
		t.Fatal(err)
	}
	errs, err = s.DropDiskReplicas("", clientID(42), alloc.TierDisk, []string{"c", "w", "nope"})
	if err != nil {
		t.Fatal(err)
	}
	wantReason(t, errs[1], NoReplicaOnSegment)
	wantReason(t, errs[2], ObjectNotFound)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	if got := tiersOf(t, s, "c"); !slices.Equal(got, []alloc.Tier{alloc.TierMemory}) {
		t.Fatalf("c after EvictDiskReplica(DISK): %v", got)
	}
	if _, err := s.DropDiskReplicas("", client1, alloc.TierDFS, []string{"c"}); ReasonOf(err) != InvalidParams {
		t.Fatalf("EvictDiskReplica of DFS = %v; want INVALID_PARAMS", err)
	}

	// An explicit unmount of the root drops its replicas like any unmount.
	if res, err := s.UnmountSegment(root); err != nil || res.Replicas != 1 {
		t.Fatalf("root's unmount = %+v, %v; want the one DISK replica (w's) dropped", res, err)
	}
	if to := s.TierObjects(); to.Disk != 0 {
		t.Fatalf("tier objects after the root's unmount %+v", to)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestDFSPlacementRefusals: DFS replicas asked with no pool mounted fail the put whole, and the
// count is bounded.
func TestDFSPlacementRefusals(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	req := putReq("", "a", "", 100)
	req.Config.DFS = 1
	_, err := s.PutStart(sec, 1, req)
	wantReason(t, err, NoAvailableHandle)
	if got := s.Tenants().Lookup(DefaultTenant).Quota().Charged(); got != 0 {
		t.Fatalf("a refused put left %d bytes charged", got)
	}
	req.Config.DFS = MaxDFSReplicas + 1
	_, err = s.PutStart(sec, 1, req)
	wantReason(t, err, InvalidParams)
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
