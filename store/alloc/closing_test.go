package alloc

import (
	"errors"
	"testing"
)

// TestClosingSegmentTakesNoAllocation: a closing segment is never a placement candidate, preferred
// or not, under either strategy; it keeps its extents (Free works) and counts in Capacity and Used
// but not in Allocatable; with every segment of a tier closing, Place fails with a NoSpaceError
// that says freeing space cannot help.
func TestClosingSegmentTakesNoAllocation(t *testing.T) {
	r := NewRegistry()
	mustMount(t, r, testSeg(1, TierMemory, 1<<20, 1), testSeg(2, TierMemory, 1<<20, 1), testSeg(3, TierMemory, 1<<20, 2))
	held, err := r.Place(PlaceRequest{Size: 4096, Memory: 1, Preferred: []ID{tid(1)}})
	if err != nil || held.Memory[0].Segment != tid(1) {
		t.Fatalf("place before closing: %+v %v", held, err)
	}
	if err := r.SetClosing(tid(1), true); err != nil {
		t.Fatal(err)
	}
	if err := r.SetClosing(tid(9), true); !errors.Is(err, ErrSegmentNotFound) {
		t.Fatalf("SetClosing of an unknown segment: %v", err)
	}
	for seed := range uint64(50) {
		for _, strategy := range []Strategy{StrategyRandom, StrategyFreeRatioFirst} {
			p, err := r.Place(PlaceRequest{Size: 64, Memory: 3, Preferred: []ID{tid(1)}, Strategy: strategy, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Memory) != 2 || p.Short != 1 {
				t.Fatalf("seed %d %s: placed %+v; want the two open segments and one short", seed, strategy, p)
			}
			for _, e := range p.Memory {
				if e.Segment == tid(1) {
					t.Fatalf("seed %d %s: placed on the closing segment", seed, strategy)
				}
				if err := r.Free(e); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if info, _ := r.Get(tid(1)); !info.Closing || info.UnmountAt != 0 || info.Used != 4096 {
		t.Fatalf("closing segment info %+v", info)
	}
	if c, u := r.Allocatable(TierMemory); c != 2<<20 || u != 0 {
		t.Fatalf("allocatable %d/%d, want 0/%d", u, c, 2<<20)
	}
	if r.Capacity(TierMemory) != 3<<20 || r.Used(TierMemory) != 4096 {
		t.Fatalf("capacity %d used %d: a closing segment still counts", r.Capacity(TierMemory), r.Used(TierMemory))
	}
	if err := r.Free(held.Memory[0]); err != nil {
		t.Fatalf("free on a closing segment: %v", err)
	}

	for _, id := range []ID{tid(2), tid(3)} {
		if err := r.SetClosing(id, true); err != nil {
			t.Fatal(err)
		}
	}
	_, err = r.Place(PlaceRequest{Size: 64, Memory: 1})
	var ns *NoSpaceError
	if !errors.As(err, &ns) || ns.Fits || ns.Segments != 0 {
		t.Fatalf("place with every segment closing: %v; want a NoSpaceError with Fits false, 0 segments", err)
	}
	if err := r.SetClosing(tid(2), false); err != nil {
		t.Fatal(err)
	}
	if p, err := r.Place(PlaceRequest{Size: 64, Memory: 1}); err != nil || p.Memory[0].Segment != tid(2) {
		t.Fatalf("place after reopening: %+v %v", p, err)
	}
	if err := checkRegistry(r); err != nil {
		t.Fatal(err)
	}
}

// TestScheduleUnmount: the earlier deadline wins; a segment with a deadline stays closing whatever
// SetClosing says, through Clone, until Unmount.
func TestScheduleUnmount(t *testing.T) {
	r := NewRegistry()
	mustMount(t, r, testSeg(1, TierMemory, 1<<20, 1))
	if _, err := r.ScheduleUnmount(tid(1), 0); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("deadline 0: %v", err)
	}
	if _, err := r.ScheduleUnmount(tid(2), 5); !errors.Is(err, ErrSegmentNotFound) {
		t.Fatalf("unknown segment: %v", err)
	}
	for _, c := range []struct{ at, want int64 }{{100, 100}, {200, 100}, {50, 50}} {
		if got, err := r.ScheduleUnmount(tid(1), c.at); err != nil || got != c.want {
			t.Fatalf("ScheduleUnmount(%d) = %d %v; want %d", c.at, got, err, c.want)
		}
	}
	if err := r.SetClosing(tid(1), false); err != nil {
		t.Fatal(err)
	}
	c := r.Clone()
	for _, reg := range []*Registry{r, c} {
		if info, _ := reg.Get(tid(1)); !info.Closing || info.UnmountAt != 50 {
			t.Fatalf("segment %+v; want closing until 50", info)
		}
		if err := checkRegistry(reg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Unmount(tid(1)); err != nil {
		t.Fatal(err)
	}
	mustMount(t, r, testSeg(1, TierMemory, 1<<20, 1))
	if info, _ := r.Get(tid(1)); info.Closing || info.UnmountAt != 0 {
		t.Fatalf("mounted again: %+v; want open", info)
	}
	if err := checkRegistry(r); err != nil {
		t.Fatal(err)
	}
}
