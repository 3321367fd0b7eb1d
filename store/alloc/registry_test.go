package alloc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// tid returns a test ID ordered by n (n > 0).
func tid(n int) ID {
	var id ID
	id[0] = 0xa0
	id[14], id[15] = byte(n>>8), byte(n)
	return id
}

// owner returns the test client ID number n.
func owner(n int) ID {
	id := tid(n)
	id[0] = 0xc0
	return id
}

func testSeg(n int, tier Tier, size uint64, own int) Segment {
	return Segment{
		ID:       tid(n),
		Name:     fmt.Sprintf("seg-%d", n),
		Base:     uint64(n) << 40,
		Size:     size,
		Endpoint: fmt.Sprintf("10.0.0.%d:9000", own),
		Tier:     tier,
		Owner:    owner(own),
	}
}

func mustMount(t testing.TB, r *Registry, segs ...Segment) {
	t.Helper()
	for _, s := range segs {
		if _, err := r.Mount(s); err != nil {
			t.Fatalf("Mount(%s): %v", s.Name, err)
		}
	}
}

// checkRegistry verifies the Registry's indexes and incremental totals
// against its segments, and every allocator's invariants.
func checkRegistry(r *Registry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.all) != len(r.segs) {
		return fmt.Errorf("all has %d segments, segs %d", len(r.all), len(r.segs))
	}
	var capacity, used [NumTiers]uint64
	var closing [NumTiers]int
	var byTier [NumTiers][]*segment
	owners := map[ID][]ID{}
	for i, seg := range r.all {
		if i > 0 && Compare(r.all[i-1].info.ID, seg.info.ID) >= 0 {
			return fmt.Errorf("all not strictly sorted at %d", i)
		}
		if r.segs[seg.info.ID] != seg {
			return fmt.Errorf("segs[%s] is not all[%d]", seg.info.ID, i)
		}
		if seg.alloc.Capacity() != seg.info.Size {
			return fmt.Errorf("segment %s: allocator capacity %d, size %d", seg.info.ID, seg.alloc.Capacity(), seg.info.Size)
		}
		if err := checkAllocator(seg.alloc); err != nil {
			return fmt.Errorf("segment %s: %w", seg.info.ID, err)
		}
		capacity[seg.info.Tier] += seg.info.Size
		used[seg.info.Tier] += seg.alloc.Used()
		if seg.closing {
			closing[seg.info.Tier]++
		} else if seg.unmountAt != 0 {
			return fmt.Errorf("segment %s: unmount scheduled at %d but open", seg.info.ID, seg.unmountAt)
		}
		byTier[seg.info.Tier] = append(byTier[seg.info.Tier], seg)
		owners[seg.info.Owner] = append(owners[seg.info.Owner], seg.info.ID)
	}
	if capacity != r.capacity || used != r.used {
		return fmt.Errorf("totals: capacity %v used %v, recomputed %v %v", r.capacity, r.used, capacity, used)
	}
	if closing != r.closing {
		return fmt.Errorf("closing counts %v, recomputed %v", r.closing, closing)
	}
	for tier := range NumTiers {
		if !slices.Equal(byTier[tier], r.byTier[tier]) {
			return fmt.Errorf("byTier[%d] disagrees with all", tier)
		}
	}
	if len(owners) != len(r.byOwner) {
		return fmt.Errorf("byOwner has %d owners, want %d", len(r.byOwner), len(owners))
	}
	for o, ids := range owners { // comparison only; order irrelevant
		if !slices.Equal(ids, r.byOwner[o]) {
			return fmt.Errorf("byOwner[%s] = %v, want %v", o, r.byOwner[o], ids)
		}
	}
	return nil
}

// dump renders the observable state of a registry.
func dump(r *Registry) string {
	var b strings.Builder
	for _, info := range r.List() {
		spans, _ := r.FreeSpans(info.ID)
		fmt.Fprintf(&b, "%+v %v\n", info, spans)
	}
	for _, tier := range Tiers {
		fmt.Fprintf(&b, "%s %d/%d\n", tier, r.Used(tier), r.Capacity(tier))
	}
	return b.String()
}

func TestMountValidation(t *testing.T) {
	good := testSeg(1, TierMemory, 1<<20, 1)
	for _, tc := range []struct {
		field  string
		mutate func(*Segment)
	}{
		{"id", func(s *Segment) { s.ID = ID{} }},
		{"owner", func(s *Segment) { s.Owner = ID{} }},
		{"base", func(s *Segment) { s.Base = 0 }},
		{"base", func(s *Segment) { s.Base = 4096 + 32 }},
		{"size", func(s *Segment) { s.Size = 0 }},
		{"size", func(s *Segment) { s.Size = 1000 }},
		{"size", func(s *Segment) { s.Base, s.Size = 1<<63, 1<<63 }},
		{"size", func(s *Segment) { s.Size = MaxSegmentSize + Align }},
		{"size", func(s *Segment) { s.Size = 1 << 62 }},
		{"tier", func(s *Segment) { s.Tier = 0 }},
		{"tier", func(s *Segment) { s.Tier = 6 }},
		{"base", func(s *Segment) { s.Tier = TierDisk }},      // a DISK segment has base 0
		{"base", func(s *Segment) { s.Tier = TierLocalDisk }}, // a LOCAL_DISK segment has no base
		{"offload", func(s *Segment) { s.Offload = true }},    // only a LOCAL_DISK segment offloads
		{"name", func(s *Segment) { s.Name = "" }},
		{"name", func(s *Segment) { s.Name = strings.Repeat("n", MaxSegmentNameLen+1) }},
		{"name", func(s *Segment) { s.Name = "seg\x1f" }},
		{"endpoint", func(s *Segment) { s.Endpoint = "" }},
		{"endpoint", func(s *Segment) { s.Endpoint = strings.Repeat("e", MaxEndpointLen+1) }},
		{"endpoint", func(s *Segment) { s.Endpoint = "\x00host:1" }},
	} {
		s := good
		tc.mutate(&s)
		r := NewRegistry()
		created, err := r.Mount(s)
		if !errors.Is(err, ErrInvalidSegment) || created {
			t.Errorf("%s: Mount(%+v) = %v, %v; want ErrInvalidSegment", tc.field, s, created, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "segment."+tc.field+": ") {
			t.Errorf("%s: error %q does not name the field", tc.field, err)
		}
		if r.Len() != 0 || r.Capacity(TierMemory) != 0 {
			t.Errorf("%s: failed mount changed the registry", tc.field)
		}
	}
}

// TestMountRefusesHugeSegments: segments of 2^62 bytes are refused, so four of them cannot wrap
// the tier's capacity back to what it was (and a 2^40-byte object then fit a "4 MiB" tier).
func TestMountRefusesHugeSegments(t *testing.T) {
	r := NewRegistry()
	mustMount(t, r, testSeg(1, TierMemory, 4<<20, 1))
	before := dump(r)
	for i := 2; i <= 5; i++ {
		s := testSeg(i, TierMemory, 1<<62, 1)
		if created, err := r.Mount(s); created || !errors.Is(err, ErrInvalidSegment) {
			t.Fatalf("Mount of %d bytes = %v, %v; want ErrInvalidSegment", s.Size, created, err)
		}
	}
	if got := r.Capacity(TierMemory); got != 4<<20 {
		t.Fatalf("capacity %d after refused mounts, want %d", got, 4<<20)
	}
	if after := dump(r); after != before {
		t.Fatalf("refused mounts changed state:\n%s\nwas\n%s", after, before)
	}
	if _, err := r.Place(PlaceRequest{Size: 1 << 40, Memory: 1}); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Place of 2^40 bytes on a 4 MiB tier = %v, want ErrNoSpace", err)
	}
}

// TestMountRefusesCapacityOverflow: a recorded segment (no size limit) that would take its tier's
// capacity past 2^64-1 is refused, by MountRecorded, Mount and CheckMount alike, changing nothing.
func TestMountRefusesCapacityOverflow(t *testing.T) {
	r := NewRegistry()
	for i := 1; i <= 3; i++ {
		if _, err := r.MountRecorded(testSeg(i, TierMemory, 1<<62, 1)); err != nil {
			t.Fatalf("MountRecorded %d: %v", i, err)
		}
	}
	// 2^62 - 2^48 fits: the tier then holds 2^64 - 2^48, and no segment of up to 2^48 more does.
	mustMountRecorded := func(s Segment) {
		if _, err := r.MountRecorded(s); err != nil {
			t.Fatalf("MountRecorded: %v", err)
		}
	}
	mustMountRecorded(testSeg(4, TierMemory, 1<<62-MaxSegmentSize, 1))
	mustMount(t, r, testSeg(5, TierNOF, MaxSegmentSize, 1)) // another tier has its own total
	before := dump(r)
	last := testSeg(6, TierMemory, MaxSegmentSize, 1)
	for name, err := range map[string]error{
		"MountRecorded": second(r.MountRecorded(last)),
		"Mount":         second(r.Mount(last)),
		"CheckMount":    r.CheckMount(last),
	} {
		var se *SegmentError
		if !errors.Is(err, ErrCapacityOverflow) || !errors.As(err, &se) || se.Field != "segment.size" {
			t.Errorf("%s of a segment overflowing the tier = %v, want ErrCapacityOverflow on segment.size", name, err)
		}
	}
	if after := dump(r); after != before {
		t.Fatalf("refused mounts changed state:\n%s\nwas\n%s", after, before)
	}
	if err := checkRegistry(r); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Capacity(TierMemory), ^uint64(0)-MaxSegmentSize+1; got != want { // 2^64 - 2^48
		t.Fatalf("capacity %d, want %d", got, want)
	}
	if err := r.CheckMount(testSeg(4, TierMemory, 1<<62-MaxSegmentSize, 1)); !errors.Is(err, ErrInvalidSegment) {
		t.Fatalf("CheckMount of a recorded segment over the size limit = %v, want ErrInvalidSegment", err)
	}
	// An identical re-mount adds nothing, so it cannot overflow.
	if created, err := r.MountRecorded(testSeg(4, TierMemory, 1<<62-MaxSegmentSize, 1)); created || err != nil {
		t.Fatalf("identical re-MountRecorded = %v, %v; want false, nil", created, err)
	}
}

func second(_ bool, err error) error { return err }

// TestCheckedSumsPanic: a sum the invariants bound panics rather than wrap.
func TestCheckedSumsPanic(t *testing.T) {
	if got := mustAdd("x", 1<<63, 1<<63-1); got != ^uint64(0) {
		t.Fatalf("mustAdd = %d", got)
	}
	for name, fn := range map[string]func(){
		"add": func() { mustAdd("x", 1<<63, 1<<63) },
		"sub": func() { mustSub("x", 1, 2) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s out of range did not panic", name)
				}
			}()
			fn()
		}()
	}
}

// TestMountLimitsInclusive: the largest size, name and endpoint the limits allow mount, and so does
// any byte from 0x20 up (0x7f included).
func TestMountLimitsInclusive(t *testing.T) {
	s := testSeg(1, TierMemory, MaxSegmentSize, 1)
	s.Name = strings.Repeat("\x7f", MaxSegmentNameLen)
	s.Endpoint = strings.Repeat(" ", MaxEndpointLen)
	if _, err := NewRegistry().Mount(s); err != nil {
		t.Fatalf("Mount at the limits: %v", err)
	}
}

func TestMountIdempotence(t *testing.T) {
	r := NewRegistry()
	s := testSeg(1, TierMemory, 1<<20, 1)
	if created, err := r.Mount(s); !created || err != nil {
		t.Fatalf("first Mount = %v, %v", created, err)
	}
	before := dump(r)
	if created, err := r.Mount(s); created || err != nil {
		t.Fatalf("identical re-Mount = %v, %v; want false, nil", created, err)
	}
	other := s
	other.Owner = owner(2)
	if _, err := r.Mount(other); !errors.Is(err, ErrSegmentOwned) {
		t.Fatalf("Mount by another owner = %v, want ErrSegmentOwned", err)
	}
	for name, mutate := range map[string]func(*Segment){ // each case independent
		"name":     func(s *Segment) { s.Name = "renamed" },
		"base":     func(s *Segment) { s.Base += Align },
		"size":     func(s *Segment) { s.Size *= 2 },
		"endpoint": func(s *Segment) { s.Endpoint = "elsewhere:1" },
		"tier":     func(s *Segment) { s.Tier = TierNOF },
	} {
		changed := s
		mutate(&changed)
		if _, err := r.Mount(changed); !errors.Is(err, ErrSegmentConflict) {
			t.Errorf("re-Mount with different %s = %v, want ErrSegmentConflict", name, err)
		}
	}
	if after := dump(r); after != before {
		t.Fatalf("failed mounts changed state:\n%s\nwas\n%s", after, before)
	}
}

func TestUnmountAndIndexes(t *testing.T) {
	r := NewRegistry()
	mustMount(t, r,
		testSeg(3, TierMemory, 4096, 1),
		testSeg(1, TierMemory, 8192, 2),
		testSeg(2, TierNOF, 1<<20, 1),
		testSeg(4, TierMemory, 4096, 1),
	)
	if got := r.SegmentsOf(owner(1)); !slices.Equal(got, []ID{tid(2), tid(3), tid(4)}) {
		t.Fatalf("SegmentsOf(1) = %v", got)
	}
	var ids []ID
	for _, info := range r.List() {
		ids = append(ids, info.ID)
	}
	if !slices.Equal(ids, []ID{tid(1), tid(2), tid(3), tid(4)}) {
		t.Fatalf("List order %v", ids)
	}
	if r.Capacity(TierMemory) != 16384 || r.Capacity(TierNOF) != 1<<20 {
		t.Fatalf("capacity MEMORY %d NOF %d", r.Capacity(TierMemory), r.Capacity(TierNOF))
	}
	e := Extent{Segment: tid(3), Offset: 0, Size: 1000}
	if err := r.Reserve(e); err != nil {
		t.Fatal(err)
	}
	if info, _ := r.Get(tid(3)); info.Used != 1024 || info.FreeSpans != 1 {
		t.Fatalf("Get after reserve: %+v", info)
	}
	if r.Used(TierMemory) != 1024 {
		t.Fatalf("Used(MEMORY) = %d", r.Used(TierMemory))
	}

	got, err := r.Unmount(tid(3))
	if err != nil || got != testSeg(3, TierMemory, 4096, 1) {
		t.Fatalf("Unmount = %+v, %v", got, err)
	}
	if r.Used(TierMemory) != 0 || r.Capacity(TierMemory) != 12288 {
		t.Fatalf("after unmount used %d capacity %d", r.Used(TierMemory), r.Capacity(TierMemory))
	}
	if _, ok := r.Get(tid(3)); ok {
		t.Fatal("Get finds unmounted segment")
	}
	if err := r.Free(e); !errors.Is(err, ErrSegmentNotFound) {
		t.Fatalf("Free on unmounted segment = %v", err)
	}
	if err := r.FreeIfMounted(e); err != nil {
		t.Fatalf("FreeIfMounted on unmounted segment = %v", err)
	}
	if err := r.Reserve(e); !errors.Is(err, ErrSegmentNotFound) {
		t.Fatalf("Reserve on unmounted segment = %v", err)
	}
	if _, err := r.Unmount(tid(3)); !errors.Is(err, ErrSegmentNotFound) {
		t.Fatalf("second Unmount = %v", err)
	}
	if got := r.SegmentsOf(owner(1)); !slices.Equal(got, []ID{tid(2), tid(4)}) {
		t.Fatalf("SegmentsOf(1) after unmount = %v", got)
	}
	for _, id := range []ID{tid(1)} {
		if _, err := r.Unmount(id); err != nil {
			t.Fatal(err)
		}
	}
	if got := r.SegmentsOf(owner(2)); len(got) != 0 {
		t.Fatalf("SegmentsOf(2) after unmounting all = %v", got)
	}
	// A remount after unmount starts empty.
	mustMount(t, r, testSeg(3, TierMemory, 4096, 1))
	if info, _ := r.Get(tid(3)); info.Used != 0 {
		t.Fatalf("remounted segment not empty: %+v", info)
	}
	if err := checkRegistry(r); err != nil {
		t.Fatal(err)
	}
}

func TestRegistryFreeReserveErrors(t *testing.T) {
	r := NewRegistry()
	mustMount(t, r, testSeg(1, TierMemory, 4096, 1))
	e := Extent{Segment: tid(1), Offset: 128, Size: 64}
	if err := r.Free(e); !errors.Is(err, ErrNotAllocated) {
		t.Fatalf("Free of free range = %v", err)
	}
	if err := r.Reserve(e); err != nil {
		t.Fatal(err)
	}
	if err := r.Reserve(Extent{Segment: tid(1), Offset: 64, Size: 128}); !errors.Is(err, ErrNotFree) {
		t.Fatalf("overlapping Reserve = %v", err)
	}
	if err := r.FreeIfMounted(e); err != nil {
		t.Fatal(err)
	}
	if r.Used(TierMemory) != 0 {
		t.Fatalf("Used = %d", r.Used(TierMemory))
	}
	if err := r.FreeIfMounted(e); !errors.Is(err, ErrNotAllocated) {
		t.Fatalf("FreeIfMounted of a free range of a mounted segment = %v", err)
	}
	if err := checkRegistry(r); err != nil {
		t.Fatal(err)
	}
}

func TestRegistryCloneIndependent(t *testing.T) {
	r := NewRegistry()
	mustMount(t, r, testSeg(1, TierMemory, 4096, 1), testSeg(2, TierNOF, 4096, 1))
	before := dump(r)
	c := r.Clone()
	if _, err := c.Place(PlaceRequest{Size: 100, Memory: 1, NOF: 1}); err != nil {
		t.Fatal(err)
	}
	mustMount(t, c, testSeg(3, TierMemory, 4096, 2))
	if _, err := c.Unmount(tid(1)); err != nil {
		t.Fatal(err)
	}
	if after := dump(r); after != before {
		t.Fatalf("changing the clone changed the original:\n%s\nwas\n%s", after, before)
	}
	for _, x := range []*Registry{r, c} {
		if err := checkRegistry(x); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRegistryConcurrent exercises the lock under the race detector.
func TestRegistryConcurrent(t *testing.T) {
	r := NewRegistry()
	for i := 1; i <= 8; i++ {
		tier := TierMemory
		if i%4 == 0 {
			tier = TierNOF
		}
		mustMount(t, r, testSeg(i, tier, 1<<20, i%3))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				p, err := r.Place(PlaceRequest{Size: uint64(1 + i*37%5000), Memory: 2, NOF: g % 2, Seed: uint64(g*1000 + i)})
				if err != nil {
					continue
				}
				for _, e := range slices.Concat(p.Memory, p.NOF) {
					if err := r.Free(e); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			_ = r.List()
			_ = r.Clone()
			_ = r.Used(TierMemory)
			_, _ = r.Get(tid(1))
		}
	})
	wg.Wait()
	if err := checkRegistry(r); err != nil {
		t.Fatal(err)
	}
	if r.Used(TierMemory) != 0 || r.Used(TierNOF) != 0 {
		t.Fatalf("leaked: %s", dump(r))
	}
}

// TestRegistryCloneConcurrent mutates a registry and its clone from two
// goroutines: the copy-on-write btrees they share must not race, and the
// two must end in the same state after the same operations.
func TestRegistryCloneConcurrent(t *testing.T) {
	r := NewRegistry()
	for i := 1; i <= 4; i++ {
		mustMount(t, r, testSeg(i, TierMemory, 1<<16, 1))
	}
	if _, err := r.Place(PlaceRequest{Size: 5000, Memory: 4}); err != nil {
		t.Fatal(err)
	}
	c := r.Clone()
	results := make([][]string, 2)
	var wg sync.WaitGroup
	for k, x := range []*Registry{r, c} {
		wg.Go(func() {
			for i := range 300 {
				p, err := x.Place(PlaceRequest{Size: uint64(64 + i%7*100), Memory: 2, Seed: uint64(i)})
				results[k] = append(results[k], fmt.Sprint(p, err))
				if err == nil && i%3 == 0 {
					if err := x.Free(p.Memory[0]); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if !slices.Equal(results[0], results[1]) || dump(r) != dump(c) {
		t.Fatal("registry and clone diverged")
	}
	for _, x := range []*Registry{r, c} {
		if err := checkRegistry(x); err != nil {
			t.Fatal(err)
		}
	}
}

// FreeMany leaves the registry exactly as freeing each extent in turn does: pieces of two segments
// reserved back to back, a random subset of them freed in random order (runs of neighbours and
// lone pieces), plus an extent of a segment that is not mounted (skipped).
func TestFreeManyIsFreeInTurn(t *testing.T) {
	for seed := range uint64(50) {
		rnd := rand.New(rand.NewPCG(seed, 7))
		a, b := NewRegistry(), NewRegistry()
		mustMount(t, a, testSeg(1, TierMemory, 1<<20, 1), testSeg(2, TierNOF, 1<<20, 1))
		mustMount(t, b, testSeg(1, TierMemory, 1<<20, 1), testSeg(2, TierNOF, 1<<20, 1))
		var pieces []Extent
		for s := 1; s <= 2; s++ {
			for off := uint64(0); ; {
				size := uint64(1 + rnd.IntN(5*Align))
				if off+RoundUp(size) > 1<<20 {
					break
				}
				if rnd.IntN(8) > 0 { // leave a gap now and then
					pieces = append(pieces, Extent{Segment: tid(s), Offset: off, Size: size})
				}
				off += RoundUp(size)
			}
		}
		for _, e := range pieces {
			if err := a.Reserve(e); err != nil {
				t.Fatal(err)
			}
			if err := b.Reserve(e); err != nil {
				t.Fatal(err)
			}
		}
		rnd.Shuffle(len(pieces), func(i, j int) { pieces[i], pieces[j] = pieces[j], pieces[i] })
		free := append(pieces[:rnd.IntN(len(pieces))], Extent{Segment: tid(9), Offset: 0, Size: 64})
		for _, e := range free {
			if err := b.Free(e); err != nil && !errors.Is(err, ErrSegmentNotFound) {
				t.Fatal(err)
			}
		}
		if err := a.FreeMany(slices.Clone(free)); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := checkRegistry(a); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if da, db := dump(a), dump(b); da != db || a.Used(TierMemory) != b.Used(TierMemory) || a.Used(TierNOF) != b.Used(TierNOF) {
			t.Fatalf("seed %d: FreeMany of %d extents:\n%s\nfreeing each in turn:\n%s", seed, len(free), da, db)
		}
		// Freeing any of them again fails, naming an extent, as Free does.
		if len(free) > 1 {
			if err := a.FreeMany(slices.Clone(free[:len(free)-1])); !errors.Is(err, ErrNotAllocated) {
				t.Fatalf("seed %d: FreeMany of free extents = %v", seed, err)
			}
		}
	}
}
