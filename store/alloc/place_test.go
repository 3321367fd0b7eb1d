package alloc

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestSplitmix64 pins the generator to Vigna's reference outputs.
func TestSplitmix64(t *testing.T) {
	g := splitmix64{state: 1234567}
	for i, want := range []uint64{
		6457827717110365317, 3203168211198807973, 9817491932198370423,
		4593380528125082431, 16408922859458223821,
	} {
		if got := g.next(); got != want {
			t.Fatalf("output %d = %d, want %d", i, got, want)
		}
	}
	g = splitmix64{}
	if got := g.next(); got != 0xe220a8397b1dcdaf {
		t.Fatalf("seed 0: %#x", got)
	}
}

func TestSplitmix64Below(t *testing.T) {
	g := splitmix64{state: 42}
	counts := make([]int, 7)
	for range 70000 {
		v := g.below(7)
		if v >= 7 {
			t.Fatalf("below(7) = %d", v)
		}
		counts[v]++
	}
	for v, c := range counts {
		if c < 9000 || c > 11000 {
			t.Fatalf("below(7) not uniform: value %d drawn %d times of 70000", v, c)
		}
	}
	if g.below(1) != 0 {
		t.Fatal("below(1) != 0")
	}
	// n just above 2^63 rejects about half the draws: 20 draws for these
	// 8 values (pinned by an independent Python implementation).
	g = splitmix64{state: 99}
	n := uint64(1)<<63 + 1
	for i, want := range []uint64{
		2412192838258505201, 943729858380535403, 2164399061527425849, 4820169792980186143,
		5093004042090514826, 6896427214207389439, 2350577710944196420, 1536013771446202289,
	} {
		if got := g.below(n); got != want {
			t.Fatalf("below(2^63+1) #%d = %d, want %d", i, got, want)
		}
	}
	h := splitmix64{state: 99}
	for range 20 {
		h.next()
	}
	if g.state != h.state {
		t.Fatal("below(2^63+1) did not take 20 draws")
	}
}

// TestShuffleMatchesEager checks the lazy shuffle against the eager
// forward Fisher-Yates shuffle written in doc.go.
func TestShuffleMatchesEager(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 300).Draw(t, "n")
		seed := rapid.Uint64().Draw(t, "seed")
		want := eagerShuffle(n, seed)
		s := shuffle{n: n, rng: splitmix64{state: seed}}
		var got []int
		for {
			v, ok := s.next()
			if !ok {
				break
			}
			got = append(got, v)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("lazy %v, eager %v", got, want)
		}
		if s.displaced() > n {
			t.Fatalf("the shuffle holds %d displaced positions of %d", s.displaced(), n)
		}
	})
}

func eagerShuffle(n int, seed uint64) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	g := splitmix64{state: seed}
	for i := 0; i < n-1; i++ {
		j := i + int(g.below(uint64(n-i)))
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// TestPlaceRandomGolden pins the random order for one seed: it must never
// change, or replicas of different versions would disagree.
func TestPlaceRandomGolden(t *testing.T) {
	r := NewRegistry()
	for i := 1; i <= 10; i++ {
		mustMount(t, r, testSeg(i, TierMemory, 1<<20, 1))
	}
	p, err := r.Place(PlaceRequest{Size: 1, Memory: 8, Seed: 0x5eed})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, e := range p.Memory {
		got = append(got, int(e.Segment[15]))
	}
	want := []int{1, 4, 5, 7, 3, 2, 6, 8} // also computed by an independent Python implementation
	if !slices.Equal(got, want) {
		t.Fatalf("random order for seed 0x5eed = %v, want %v", got, want)
	}
}

func memIDs(es []Extent) []ID {
	var out []ID
	for _, e := range es {
		out = append(out, e.Segment)
	}
	return out
}

func TestPlacePreferredAndDistinct(t *testing.T) {
	r := NewRegistry()
	for i := 1; i <= 5; i++ {
		mustMount(t, r, testSeg(i, TierMemory, 1<<20, 1))
	}
	mustMount(t, r, testSeg(10, TierNOF, 1<<20, 2), testSeg(11, TierNOF, 1<<20, 2))
	for _, strategy := range []Strategy{StrategyRandom, StrategyFreeRatioFirst} {
		t.Run(strategy.String(), func(t *testing.T) {
			c := r.Clone()
			req := PlaceRequest{
				Size: 1000, Memory: 4, NOF: 2, Strategy: strategy, Seed: 7,
				Preferred: []ID{tid(4), tid(99), tid(11), tid(2), tid(4)},
			}
			p, err := c.Place(req)
			if err != nil {
				t.Fatal(err)
			}
			mem := memIDs(p.Memory)
			if len(mem) != 4 || mem[0] != tid(4) || mem[1] != tid(2) {
				t.Fatalf("memory placement %v does not start with preferred 4, 2", mem)
			}
			if nof := memIDs(p.NOF); !slices.Equal(nof, []ID{tid(11), tid(10)}) {
				t.Fatalf("nof placement %v, want 11 then 10", nof)
			}
			all := slices.Concat(mem, memIDs(p.NOF))
			slices.SortFunc(all, Compare)
			if len(slices.Compact(all)) != 6 {
				t.Fatalf("replicas not in distinct segments: %v", all)
			}
			for _, e := range slices.Concat(p.Memory, p.NOF) {
				if e.Size != 1024 || e.Offset != 0 {
					t.Fatalf("extent %+v, want offset 0 size 1024", e)
				}
			}
			if p.Short != 0 {
				t.Fatalf("Short = %d", p.Short)
			}
			if c.Used(TierMemory) != 4*1024 || c.Used(TierNOF) != 2*1024 {
				t.Fatalf("used %s", dump(c))
			}
		})
	}
}

func TestPlaceShortAndSkipsFull(t *testing.T) {
	r := NewRegistry()
	mustMount(t, r,
		testSeg(1, TierMemory, 4096, 1),
		testSeg(2, TierMemory, 4096, 1),
		testSeg(3, TierMemory, 4096, 1),
		testSeg(4, TierMemory, 1024, 1), // too small for 2000 bytes
		testSeg(10, TierNOF, 4096, 2),
	)
	if err := r.Reserve(Extent{Segment: tid(2), Offset: 0, Size: 4096}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		req       PlaceRequest
		mem, nof  int
		short     int
		firstMem  ID
		memberOK  []ID
		usedAfter uint64
	}{
		{"memory short", PlaceRequest{Size: 2000, Memory: 5, Preferred: []ID{tid(2), tid(4), tid(3)}},
			2, 0, 3, tid(3), []ID{tid(1), tid(3)}, 4096 + 2*2048},
		{"nof short", PlaceRequest{Size: 64, Memory: 1, NOF: 3, Preferred: []ID{tid(4)}},
			1, 1, 2, tid(4), []ID{tid(4)}, 4096 + 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := r.Clone()
			p, err := c.Place(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Memory) != tc.mem || len(p.NOF) != tc.nof || p.Short != tc.short {
				t.Fatalf("placement %+v, want %d memory %d nof short %d", p, tc.mem, tc.nof, tc.short)
			}
			if p.Memory[0].Segment != tc.firstMem {
				t.Fatalf("first memory replica in %s, want %s", p.Memory[0].Segment, tc.firstMem)
			}
			got := memIDs(p.Memory)
			slices.SortFunc(got, Compare)
			if !slices.Equal(got, tc.memberOK) {
				t.Fatalf("memory segments %v, want %v", got, tc.memberOK)
			}
			if c.Used(TierMemory) != tc.usedAfter {
				t.Fatalf("Used(MEMORY) = %d, want %d", c.Used(TierMemory), tc.usedAfter)
			}
		})
	}
}

func TestPlaceNoSpaceChangesNothing(t *testing.T) {
	full := NewRegistry()
	mustMount(t, full, testSeg(1, TierMemory, 4096, 1), testSeg(2, TierMemory, 4096, 1), testSeg(10, TierNOF, 1024, 2))
	occupied := NewRegistry() // a small and a large MEMORY segment, the large one half used
	mustMount(t, occupied, testSeg(1, TierMemory, 1024, 1), testSeg(2, TierMemory, 4096, 1))
	if err := occupied.Reserve(Extent{tid(2), 0, 2048}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		r    *Registry
		req  PlaceRequest
		tier string
		fits bool // some segment of the tier is large enough: freeing space could help
	}{
		{"no segments", NewRegistry(), PlaceRequest{Size: 1, Memory: 1}, "MEMORY", false},
		{"memory too small", full, PlaceRequest{Size: 4097, Memory: 2}, "MEMORY", false},
		{"nof too small", full, PlaceRequest{Size: 2048, Memory: 2, NOF: 1}, "NOF", false},
		{"nof too small, preferred", full, PlaceRequest{Size: 2048, Memory: 1, NOF: 2, Preferred: []ID{tid(10), tid(1)}}, "NOF", false},
		{"nof absent", func() *Registry {
			r := NewRegistry()
			mustMount(t, r, testSeg(1, TierMemory, 4096, 1))
			return r
		}(), PlaceRequest{Size: 64, Memory: 1, NOF: 1}, "NOF", false},
		{"memory occupied", occupied, PlaceRequest{Size: 3000, Memory: 1}, "MEMORY", true},
		{"memory occupied, exactly the large segment", occupied, PlaceRequest{Size: 4096, Memory: 1}, "MEMORY", true},
		{"memory larger than the large segment", occupied, PlaceRequest{Size: 4097, Memory: 1}, "MEMORY", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := dump(tc.r)
			for _, strategy := range []Strategy{StrategyRandom, StrategyFreeRatioFirst} {
				req := tc.req
				req.Strategy = strategy
				p, err := tc.r.Place(req)
				if !errors.Is(err, ErrNoSpace) {
					t.Fatalf("Place = %+v, %v; want ErrNoSpace", p, err)
				}
				if !strings.Contains(err.Error(), "tier "+tc.tier) {
					t.Fatalf("error %q does not name tier %s", err, tc.tier)
				}
				var ns *NoSpaceError
				if !errors.As(err, &ns) || ns.Tier.String() != tc.tier || ns.Fits != tc.fits {
					t.Fatalf("error %#v: want a NoSpaceError of tier %s with Fits %v", err, tc.tier, tc.fits)
				}
				if after := dump(tc.r); after != before {
					t.Fatalf("failed Place changed state:\n%s\nwas\n%s", after, before)
				}
				if err := checkRegistry(tc.r); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestPlaceInvalidRequest(t *testing.T) {
	r := NewRegistry()
	mustMount(t, r, testSeg(1, TierMemory, 4096, 1))
	for _, req := range []PlaceRequest{
		{Size: 0, Memory: 1},
		{Size: MaxObjectSize + 1, Memory: 1},
		{Size: 1, Memory: 0},
		{Size: 1, Memory: MaxReplicas + 1},
		{Size: 1, Memory: 1, NOF: -1},
		{Size: 1, Memory: 1, NOF: MaxReplicas + 1},
		{Size: 1, Memory: 1, Strategy: 2},
	} {
		if _, err := r.Place(req); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("Place(%+v) = %v, want ErrInvalidRequest", req, err)
		}
	}
	if r.Used(TierMemory) != 0 {
		t.Fatal("invalid request allocated")
	}
}

func TestPlaceFreeRatioFirst(t *testing.T) {
	r := NewRegistry()
	mustMount(t, r,
		testSeg(1, TierMemory, 1024, 1), // used 512: 0.5
		testSeg(2, TierMemory, 4096, 1), // used 1024: 0.75
		testSeg(3, TierMemory, 2048, 1), // empty: 1.0
		testSeg(4, TierMemory, 512, 1),  // used 256: 0.5, ties with 1, higher ID
		testSeg(5, TierMemory, 8192, 1), // used 8192 - 64: 1/128
	)
	for _, e := range []Extent{{tid(1), 0, 512}, {tid(2), 0, 1024}, {tid(4), 0, 256}, {tid(5), 0, 8192 - 64}} {
		if err := r.Reserve(e); err != nil {
			t.Fatal(err)
		}
	}
	p, err := r.Place(PlaceRequest{Size: 64, Memory: 5, Strategy: StrategyFreeRatioFirst})
	if err != nil {
		t.Fatal(err)
	}
	want := []ID{tid(3), tid(2), tid(1), tid(4), tid(5)}
	if got := memIDs(p.Memory); !slices.Equal(got, want) {
		t.Fatalf("free_ratio_first order %v, want %v", got, want)
	}

	// Ratios equal in float64 but not exactly: 6 has more free per byte
	// than 5 and must come first despite its higher ID.
	r = NewRegistry()
	s5, s6 := MaxSegmentSize-64, MaxSegmentSize
	mustMount(t, r, testSeg(5, TierMemory, s5, 1), testSeg(6, TierMemory, s6, 1))
	for _, id := range []ID{tid(5), tid(6)} {
		if err := r.Reserve(Extent{id, 0, 64}); err != nil {
			t.Fatal(err)
		}
	}
	if float64(s5-64)/float64(s5) != float64(s6-64)/float64(s6) {
		t.Fatal("test premise: the float64 ratios should tie")
	}
	p, err = r.Place(PlaceRequest{Size: 64, Memory: 1, Strategy: StrategyFreeRatioFirst})
	if err != nil {
		t.Fatal(err)
	}
	if p.Memory[0].Segment != tid(6) {
		t.Fatalf("exact ratio order picked %s, want %s", p.Memory[0].Segment, tid(6))
	}
}

// refCandidates is the reference candidate order of one tier: preferred
// (mounted, of the tier, first occurrence), then an eager shuffle or an
// exact big.Rat sort of all the tier's segments, skipping the preferred.
func refCandidates(r *Registry, tier Tier, req PlaceRequest) []ID {
	var out []ID
	seen := map[ID]bool{}
	for _, id := range req.Preferred {
		if info, ok := r.Get(id); ok && info.Tier == tier && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	var list []SegmentInfo
	for _, info := range r.List() {
		if info.Tier == tier {
			list = append(list, info)
		}
	}
	if req.Strategy == StrategyRandom {
		perm := eagerShuffle(len(list), req.Seed)
		shuffled := make([]SegmentInfo, len(list))
		for i, p := range perm {
			shuffled[i] = list[p]
		}
		list = shuffled
	} else {
		ratio := func(s SegmentInfo) *big.Rat {
			return new(big.Rat).SetFrac(new(big.Int).SetUint64(s.Size-s.Used), new(big.Int).SetUint64(s.Size))
		}
		slices.SortStableFunc(list, func(a, b SegmentInfo) int {
			if c := ratio(b).Cmp(ratio(a)); c != 0 {
				return c
			}
			return Compare(a.ID, b.ID)
		})
	}
	for _, info := range list {
		if !seen[info.ID] {
			out = append(out, info.ID)
		}
	}
	return out
}

// refPlace predicts a Place on a clone: walk the reference candidates and
// take each whose allocator can hold the size.
func refPlace(r *Registry, req PlaceRequest) (Placement, error) {
	c := r.Clone()
	size := RoundUp(req.Size)
	var p Placement
	for _, tier := range []Tier{TierMemory, TierNOF} {
		want := req.Memory
		if tier == TierNOF {
			want = req.NOF
			if want == 0 {
				break
			}
		}
		var got []Extent
		for _, id := range refCandidates(r, tier, req) {
			if len(got) == want {
				break
			}
			seg := c.segs[id]
			if off, ok := seg.alloc.Alloc(size); ok {
				got = append(got, Extent{id, off, size})
			}
		}
		if len(got) == 0 {
			fits := slices.ContainsFunc(r.List(), func(s SegmentInfo) bool { return s.Tier == tier && s.Size >= size })
			return Placement{}, &NoSpaceError{Tier: tier, Size: size, Fits: fits}
		}
		p.Short += want - len(got)
		if tier == TierMemory {
			p.Memory = got
		} else {
			p.NOF = got
		}
	}
	return p, nil
}

func drawRegistry(t *rapid.T) *Registry {
	r := NewRegistry()
	n := rapid.IntRange(0, 20).Draw(t, "segments")
	for i := 1; i <= n; i++ {
		tier := rapid.SampledFrom([]Tier{TierMemory, TierMemory, TierNOF}).Draw(t, "tier")
		cells := rapid.Uint64Range(1, 64).Draw(t, "cells")
		s := testSeg(i*7%23+1, tier, cells*Align, rapid.IntRange(1, 3).Draw(t, "owner"))
		if _, err := r.Mount(s); err != nil {
			t.Fatal(err)
		}
		// Use some of it, leaving holes.
		for range rapid.IntRange(0, 4).Draw(t, "reservations") {
			cell := rapid.Uint64Range(0, cells-1).Draw(t, "cell")
			_ = r.Reserve(Extent{s.ID, cell * Align, rapid.Uint64Range(1, 8*Align).Draw(t, "size")})
		}
	}
	return r
}

func drawRequest(t *rapid.T) PlaceRequest {
	var preferred []ID
	for range rapid.IntRange(0, 6).Draw(t, "preferred") {
		preferred = append(preferred, tid(rapid.IntRange(1, 25).Draw(t, "pref")))
	}
	return PlaceRequest{
		Size:      rapid.Uint64Range(1, 40*Align).Draw(t, "size"),
		Memory:    rapid.IntRange(1, MaxReplicas).Draw(t, "memory"),
		NOF:       rapid.IntRange(0, MaxReplicas).Draw(t, "nof"),
		Preferred: preferred,
		Strategy:  rapid.SampledFrom([]Strategy{StrategyRandom, StrategyFreeRatioFirst}).Draw(t, "strategy"),
		Seed:      rapid.Uint64().Draw(t, "seed"),
	}
}

// TestPlaceMatchesReference checks Place against the reference order for
// both strategies, including preferred lists with duplicates, unknown IDs
// and IDs of the other tier, and full or too-small segments.
func TestPlaceMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRegistry(t)
		req := drawRequest(t)
		want, wantErr := refPlace(r, req)
		before := dump(r)
		got, err := r.Place(req)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("Place = %+v, %v; reference %+v, %v", got, err, want, wantErr)
		}
		if err != nil {
			if !errors.Is(err, ErrNoSpace) {
				t.Fatalf("error %v is not ErrNoSpace", err)
			}
			var got, want *NoSpaceError
			if !errors.As(err, &got) || !errors.As(wantErr, &want) || got.Tier != want.Tier || got.Size != want.Size || got.Fits != want.Fits {
				t.Fatalf("Place error %#v; reference %#v", err, wantErr)
			}
			if after := dump(r); after != before {
				t.Fatalf("failed Place changed state")
			}
			return
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Place = %+v\nreference %+v", got, want)
		}
		if err := checkRegistry(r); err != nil {
			t.Fatal(err)
		}
	})
}

// regOp is one generated registry operation for the determinism test.
type regOp struct {
	kind  int // 0 mount, 1 unmount, 2 place, 3 free, 4 reserve
	seg   Segment
	req   PlaceRequest
	pick  int
	start uint64
}

func drawOps(t *rapid.T) []regOp {
	var ops []regOp
	for range rapid.IntRange(1, 60).Draw(t, "ops") {
		op := regOp{kind: rapid.IntRange(0, 4).Draw(t, "kind")}
		switch op.kind {
		case 0:
			n := rapid.IntRange(1, 12).Draw(t, "seg")
			tier := rapid.SampledFrom([]Tier{TierMemory, TierNOF}).Draw(t, "tier")
			op.seg = testSeg(n, tier, rapid.Uint64Range(1, 32).Draw(t, "cells")*Align, rapid.IntRange(1, 3).Draw(t, "owner"))
		case 1:
			op.seg.ID = tid(rapid.IntRange(1, 12).Draw(t, "seg"))
		case 2:
			op.req = drawRequest(t)
		case 3:
			op.pick = rapid.IntRange(0, 1000).Draw(t, "pick")
		case 4:
			op.seg.ID = tid(rapid.IntRange(1, 12).Draw(t, "seg"))
			op.start = rapid.Uint64Range(0, 40).Draw(t, "cell") * Align
			op.pick = rapid.IntRange(1, 300).Draw(t, "size")
		}
		ops = append(ops, op)
	}
	return ops
}

// applyOps runs ops and records every result as text. placed carries the
// extents handed out so far, for later frees.
func applyOps(r *Registry, ops []regOp, placed *[]Extent) []string {
	var out []string
	for _, op := range ops {
		var res string
		switch op.kind {
		case 0:
			created, err := r.Mount(op.seg)
			res = fmt.Sprint("mount ", created, err)
		case 1:
			s, err := r.Unmount(op.seg.ID)
			res = fmt.Sprint("unmount ", s, err)
		case 2:
			p, err := r.Place(op.req)
			res = fmt.Sprint("place ", p, err)
			*placed = append(*placed, p.Memory...)
			*placed = append(*placed, p.NOF...)
		case 3:
			if len(*placed) == 0 {
				continue
			}
			i := op.pick % len(*placed)
			e := (*placed)[i]
			*placed = slices.Delete(*placed, i, i+1)
			err := r.Free(e)
			res = fmt.Sprint("free ", e, err)
		case 4:
			err := r.Reserve(Extent{op.seg.ID, op.start, uint64(op.pick)})
			res = fmt.Sprint("reserve ", err)
		}
		out = append(out, res)
	}
	return out
}

// TestPlaceDeterminism: the same operations on two fresh registries, and on
// a registry and its Clone from any point on, give identical results and
// identical states; the incremental totals always match the segments.
func TestPlaceDeterminism(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ops := drawOps(t)
		k := rapid.IntRange(0, len(ops)).Draw(t, "clone at")

		var p1, p2 []Extent
		r1, r2 := NewRegistry(), NewRegistry()
		res1 := applyOps(r1, ops, &p1)
		res2 := applyOps(r2, ops, &p2)
		if !slices.Equal(res1, res2) || dump(r1) != dump(r2) {
			t.Fatalf("two fresh registries diverged:\n%v\n%v", res1, res2)
		}

		var p3 []Extent
		r3 := NewRegistry()
		head := applyOps(r3, ops[:k], &p3)
		c := r3.Clone()
		p4 := slices.Clone(p3)
		tail3 := applyOps(r3, ops[k:], &p3)
		tail4 := applyOps(c, ops[k:], &p4)
		if !slices.Equal(tail3, tail4) || dump(r3) != dump(c) {
			t.Fatalf("registry and clone diverged:\n%v\n%v", tail3, tail4)
		}
		if !slices.Equal(slices.Concat(head, tail3), res1) || dump(r3) != dump(r1) {
			t.Fatalf("cloning changed the original's results")
		}
		for _, r := range []*Registry{r1, r3, c} {
			if err := checkRegistry(r); err != nil {
				t.Fatal(err)
			}
		}
	})
}
