package evict

import (
	"math/rand/v2"
	"slices"
	"testing"

	"metad/store"
)

// TestSelectionKeepsThePrefix: whatever order units arrive in, the selection keeps exactly the
// shortest prefix of the eviction order that covers need, or the max oldest if that is shorter.
func TestSelectionKeepsThePrefix(t *testing.T) {
	x := newFixture(t, nil)
	for i := range 60 {
		x.put(key(i))
	}
	var hs []store.ObjectHandle
	x.s.VisitHandles(0, func(c []store.ObjectHandle) bool { hs = append(hs, c...); return true })
	rnd := rand.New(rand.NewPCG(5, 5))
	for trial := range 500 {
		n := 1 + rnd.IntN(len(hs))
		us := make([]unit, n)
		ordered := make([]*unit, n)
		for i := range us {
			// Few distinct leases, so ties are broken by tenant instance and object id.
			us[i] = unit{one: member{h: hs[i]}, lease: int64(rnd.IntN(4)), inst: hs[i].Tenant.Instance(), id: hs[i].State().ID,
				weight: uint64(1 + rnd.IntN(4))}
			ordered[i] = &us[i]
		}
		need, max := uint64(1+rnd.IntN(3*n)), 1+rnd.IntN(n+2)
		var want []string
		for _, u := range wantPrefix(ordered, need, max) {
			want = append(want, u.key())
		}
		sel := newSelection(need, max, new(selBuf), rnd.IntN(2*n))
		sel.gap = 1 + rnd.IntN(8) // prune often, so the bound and the prunes are exercised
		sel.limit = sel.gap
		for _, i := range rnd.Perm(n) {
			sel.add(&us[i])
		}
		var got []string
		for _, u := range sel.sorted() {
			got = append(got, u.key())
		}
		sel.release()
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: need %d max %d: kept %v, want %v", trial, need, max, got, want)
		}
	}
}

// The same on thousands of units with few distinct leases and weights, pruned at every gap from
// tiny to never: the kept set is exactly the prefix, in order.
func TestSelectionLarge(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 7))
	buf := new(selBuf) // reused, as the evictor's bufCache does
	for trial := range 200 {
		n := 1 + rnd.IntN(3000)
		us := make([]unit, n)
		for i := range us {
			us[i] = unit{lease: int64(rnd.IntN(5)), inst: uint64(1 + rnd.IntN(2)), id: uint64(i), weight: uint64(1 + rnd.IntN(3))}
		}
		ordered := make([]*unit, n)
		for i := range us {
			ordered[i] = &us[i]
		}
		need, max := uint64(1+rnd.IntN(3*n)), 1+rnd.IntN(n+2)
		var want []uint64
		for _, u := range wantPrefix(ordered, need, max) {
			want = append(want, u.id)
		}
		sel := newSelection(need, max, buf, rnd.IntN(2*n))
		if g := rnd.IntN(3); g < 2 {
			sel.gap = []int{1, 50}[g]
			sel.limit = sel.gap
		}
		for _, i := range rnd.Perm(n) {
			sel.add(&us[i])
		}
		var got []uint64
		for _, u := range sel.sorted() {
			got = append(got, u.id)
		}
		buf = sel.release()
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: n %d need %d max %d: kept %d units, want %d", trial, n, need, max, len(got), len(want))
		}
	}
}

// Growing the rank array copies it in chunks; every rank arrives, in order, with the room asked for.
func TestGrowRanks(t *testing.T) {
	for _, n := range []int{0, 1, copyChunk - 1, copyChunk, 3*copyChunk + 7} {
		rs := make([]rank, n)
		for i := range rs {
			rs[i] = rank{lease: int64(i), id: uint64(i), slot: i}
		}
		got := growRanks(rs, 100)
		if cap(got)-len(got) < 100 || !slices.Equal(got, rs) {
			t.Fatalf("n %d: len %d cap %d, equal %v", n, len(got), cap(got), slices.Equal(got, rs))
		}
		if again := growRanks(got, 100); &again[:1][0] != &got[:1][0] {
			t.Fatalf("n %d: grew although there was room", n)
		}
	}
}

// Sorting in pieces gives the eviction order, whatever the depth left for partitioning.
func TestSortRanks(t *testing.T) {
	rnd := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{0, 1, sortPiece, sortPiece + 1, 5*sortPiece + 3} {
		for _, depth := range []int{0, 1, 3, 64} {
			rs := make([]rank, n)
			for i := range rs {
				rs[i] = rank{lease: int64(rnd.IntN(8)), inst: uint64(1 + rnd.IntN(2)), id: uint64(i)}
			}
			rnd.Shuffle(n, func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
			want := slices.Clone(rs)
			slices.SortFunc(want, rank.cmp)
			sortRanks(rs, depth)
			if !slices.Equal(rs, want) {
				t.Fatalf("n %d depth %d: not in eviction order", n, depth)
			}
		}
	}
}

// wantPrefix is the selection's contract computed the obvious way: sort the units in eviction
// order and take the shortest prefix whose weight covers need, or the max oldest if shorter.
func wantPrefix(us []*unit, need uint64, max int) []*unit {
	us = slices.Clone(us)
	slices.SortFunc(us, older)
	var sum uint64
	for i, u := range us {
		if sum >= need || i >= max {
			return us[:i]
		}
		sum += u.weight
	}
	return us
}

// older is the eviction order on units (rank.cmp).
func older(a, b *unit) int { return rankOf(a).cmp(rankOf(b)) }

// key names a unit in test output: a singleton's key, or a group's least member key.
func (u *unit) key() string {
	if u.group == nil {
		return u.one.h.Key()
	}
	return u.members[0].h.Key()
}
