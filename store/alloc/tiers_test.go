package alloc

import (
	"errors"
	"testing"
)

// fileSeg is a segment of a tier that is not Addressed (DISK, DFS): base 0.
func fileSeg(n int, tier Tier, size uint64, own int) Segment {
	s := testSeg(n, tier, size, own)
	s.Base = 0
	return s
}

// TestPlaceDFSAndDisk: DFS replicas are placed by count like NOF ones, and fail the placement
// whole when no pool has room; a mounted shared root (DISK) adds one replica to every placement
// while it has room, and a full or closing root fails nothing.
func TestPlaceDFSAndDisk(t *testing.T) {
	r := NewRegistry()
	mustMount(t, r, testSeg(1, TierMemory, 4096, 1), testSeg(2, TierMemory, 4096, 1),
		fileSeg(20, TierDFS, 4096, 3), fileSeg(21, TierDFS, 4096, 3))

	// No root: no DISK replica.
	p, err := r.Place(PlaceRequest{Size: 100, Memory: 1, DFS: 2})
	if err != nil || len(p.Memory) != 1 || len(p.DFS) != 2 || len(p.Disk) != 0 || p.Short != 0 {
		t.Fatalf("Place = %+v, %v; want 1 memory and 2 DFS extents", p, err)
	}
	for _, e := range p.DFS {
		if info, _ := r.Get(e.Segment); info.Tier != TierDFS {
			t.Fatalf("DFS extent %+v on a %s segment", e, info.Tier)
		}
	}
	if got := len(p.All()); got != 3 {
		t.Fatalf("All() = %d extents, want 3", got)
	}
	// Three DFS replicas asked on two pools: short by one.
	if p, err := r.Place(PlaceRequest{Size: 64, Memory: 1, DFS: 3}); err != nil || len(p.DFS) != 2 || p.Short != 1 {
		t.Fatalf("Place = %+v, %v; want 2 DFS extents, short 1", p, err)
	}

	// A DFS replica that fits no pool fails the whole placement, the memory extent freed.
	before := dump(r)
	_, err = r.Place(PlaceRequest{Size: 8192, Memory: 1, DFS: 1})
	var ns *NoSpaceError
	if !errors.As(err, &ns) || ns.Tier != TierMemory && ns.Tier != TierDFS {
		t.Fatalf("Place of an object no segment holds = %v; want a NoSpaceError", err)
	}
	full := NewRegistry()
	mustMount(t, full, testSeg(1, TierMemory, 1<<20, 1), fileSeg(20, TierDFS, 64, 3))
	if err := full.Reserve(Extent{tid(20), 0, 64}); err != nil {
		t.Fatal(err)
	}
	fb := dump(full)
	if _, err := full.Place(PlaceRequest{Size: 64, Memory: 1, DFS: 1}); !errors.As(err, &ns) || ns.Tier != TierDFS || !ns.Fits {
		t.Fatalf("Place on a full pool = %v; want a NoSpaceError of tier DFS that fits", err)
	}
	if dump(full) != fb || dump(r) != before {
		t.Fatal("a failed placement changed the registry")
	}

	// A shared root: one DISK extent per placement, while it has room.
	mustMount(t, r, fileSeg(30, TierDisk, 256, 4))
	for i := range 4 {
		p, err := r.Place(PlaceRequest{Size: 64, Memory: 1})
		if err != nil || len(p.Disk) != 1 || p.Disk[0].Segment != tid(30) || p.Short != 0 {
			t.Fatalf("put %d: Place = %+v, %v; want one DISK extent on the root", i, p, err)
		}
	}
	p, err = r.Place(PlaceRequest{Size: 64, Memory: 1})
	if err != nil || len(p.Disk) != 0 || p.Short != 0 {
		t.Fatalf("Place with the root full = %+v, %v; want success with no DISK extent", p, err)
	}
	if r.Fits(TierDisk, 1) || !r.Fits(TierMemory, 64) || r.Roots() != 1 {
		t.Fatalf("Fits(DISK) %v with the root full, Fits(MEMORY) %v, Roots %d", r.Fits(TierDisk, 1), r.Fits(TierMemory, 64), r.Roots())
	}
	if err := checkRegistry(r); err != nil {
		t.Fatal(err)
	}
	// A closing root takes nothing either.
	mustMount(t, r, fileSeg(31, TierDisk, 4096, 4))
	if err := r.SetClosing(tid(31), true); err != nil {
		t.Fatal(err)
	}
	if p, err := r.Place(PlaceRequest{Size: 64, Memory: 1}); err != nil || len(p.Disk) != 0 {
		t.Fatalf("Place with the only open root full = %+v, %v", p, err)
	}
	if r.Fits(TierDisk, 64) || r.Roots() != 2 {
		t.Fatalf("Fits(DISK) %v with the open root full and the other closing, Roots %d", r.Fits(TierDisk, 64), r.Roots())
	}
	if err := r.SetClosing(tid(31), false); err != nil {
		t.Fatal(err)
	}
	if p, err := r.Place(PlaceRequest{Size: 64, Memory: 1}); err != nil || len(p.Disk) != 1 || p.Disk[0].Segment != tid(31) {
		t.Fatalf("Place with a second root = %+v, %v; want its DISK extent", p, err)
	}
}

// TestFileSegmentsHaveNoBase: DISK and DFS segments are files (base 0); MEMORY and NOF ones are
// address ranges (base non-zero).
func TestFileSegmentsHaveNoBase(t *testing.T) {
	for _, tier := range Tiers {
		if tier == TierLocalDisk {
			continue // its id is its owner's (LocalDisk)
		}
		with, without := testSeg(1, tier, 4096, 1), fileSeg(1, tier, 4096, 1)
		errWith, errWithout := ValidateSegment(with), ValidateSegment(without)
		if tier.Addressed() && (errWith != nil || errWithout == nil) || !tier.Addressed() && (errWith == nil || errWithout != nil) {
			t.Errorf("%s: ValidateSegment with a base: %v; without: %v", tier, errWith, errWithout)
		}
	}
}
