package evict

import (
	"cmp"
	"math/bits"
	"runtime"
	"slices"
	"sync"
)

// rank is a unit's place in the eviction order and its weight, by value: the selection compares
// ranks, not units, so a comparison touches no memory outside the selection's own array.
type rank struct {
	lease  int64
	inst   uint64
	id     uint64
	weight uint64
	slot   int // the unit's slot in the selection's slab
}

func rankOf(u *unit) rank { return rank{lease: u.lease, inst: u.inst, id: u.id, weight: u.weight} }

// cmp is the eviction order: oldest lease first, ties by tenant instance, then by id (singletons,
// in creation order, before groups, in creation order). A read leases until its time + ttl and a
// completed write stamps its own time (SEMANTICS section 4), so an object ranks by its last read
// plus the ttl or its last write, whichever is later: a block just written ranks after every
// object read more than a ttl before it, and never as the oldest. Instance ids
// are never reused and ids are unique within an instance, so it is a total order and the selection
// is deterministic. Ties are common (leases are whole milliseconds, and every object of a batch is
// written at one leader time), so they are broken on integers the unit carries: the census
// compares units millions of times and must not chase key strings to do it.
func (a rank) cmp(b rank) int {
	if c := cmp.Compare(a.lease, b.lease); c != 0 {
		return c
	}
	if c := cmp.Compare(a.inst, b.inst); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// selection keeps the oldest units whose weight covers need, at most max of them, whatever order
// they arrive in. The kept set is a prefix of the eviction order (the shorter of the two bounds), so
// a census of a million objects holds only what a round can use.
//
// A candidate is appended (its rank to ranks, the unit to the slab); when ranks reaches limit,
// prune cuts them back to the prefix (cut: a quickselect weighted by the bounds, linear time) and
// the limit moves to half as much again, so each candidate costs amortized constant time and
// memory stays within 1.5x the kept set. Once a prune has kept enough, its youngest unit is a
// bound: a candidate younger than it can never be kept and costs one comparison. A heap did the
// same in O(log n) per candidate, but sifting a heap of hundreds of thousands of ranks misses the
// cache at every level, which was most of a census of singletons.
//
// Ranks are values (no pointer to chase when comparing). The slab is pages of slabPage units, so it
// grows without copying and is cleared page by page. No single allocation, copy or clear of
// pointerful memory is large, and the rank array grows by a copy that yields between chunks: the
// runtime copies without a preemption point, a collector's stop-the-world waits for such a copy with
// every other goroutine stopped, and memory fresh from the OS costs a page fault per 4 KiB touched
// (slow on a virtual machine: a copy of tens of megabytes can then outlast a leader lease). The
// storage comes from the evictor's bufCache and goes back when the round is over (release).
type selection struct {
	*selBuf
	need    uint64
	max     int
	limit   int  // prune when ranks reaches this
	gap     int  // a prune leaves room for at least this many candidates (tests shrink it)
	bounded bool // bound is set: the kept set already covers need or holds max units
	bound   rank // the youngest unit kept by the last prune that kept enough
}

// selBuf is a selection's storage.
type selBuf struct {
	ranks []rank   // candidates since the last prune, after the units it kept; no pointers
	pages [][]unit // the slab: slot i is pages[i/slabPage][i%slabPage]
	used  int      // slots handed out (free ones included)
	free  []int    // slots of dropped units
	out   []*unit  // what sorted returns
}

const (
	slabPage  = 1024  // units per slab page (128 KiB)
	pruneGap  = 4096  // the least room a prune leaves before the next
	prunePart = 2     // a prune leaves room for kept/prunePart more candidates
	copyChunk = 16384 // ranks (640 KiB) copied between yields when the rank array grows
	sortPiece = 8192  // ranks sorted between yields
)

// newSelection returns an empty selection over b's storage (b from bufCache.get, or new), for
// about hint candidates: the rank array is given, in one allocation, the room the census can need
// (at most hint, and never more than the 1.5x max it prunes back from), so that it does not grow by
// copying (growRanks) unless hint was short.
func newSelection(need uint64, max int, b *selBuf, hint int) *selection {
	if c := min(hint, max+max/prunePart+pruneGap); cap(b.ranks) < c {
		b.ranks = make([]rank, 0, c)
	}
	return &selection{selBuf: b, need: need, max: max, limit: pruneGap, gap: pruneGap}
}

func (b *selBuf) unit(slot int) *unit { return &b.pages[slot/slabPage][slot%slabPage] }

// release empties the selection and returns its storage, for bufCache.put; no unit sorted
// returned may be used after it.
func (s *selection) release() *selBuf {
	b := s.selBuf
	for i := 0; i*slabPage < b.used; i++ {
		clear(b.pages[i]) // drop handles and states, or a kept buffer would keep evicted objects alive
	}
	clear(b.out)
	b.ranks, b.used, b.free, b.out = b.ranks[:0], 0, b.free[:0], b.out[:0]
	s.selBuf = nil
	return b
}

// bufCache keeps selection storage from one round to the next while eviction is busy, one buffer
// per pass: a drain of a million objects runs several rounds in a row, and each would otherwise
// fault tens of megabytes of fresh memory back in (a sync.Pool loses its contents at every GC
// cycle, and a drain has several). The loop drops the cache when it goes idle. Safe for concurrent
// use (EvictTenant runs on request goroutines): a round that finds a pass's buffer taken uses a new
// one, and only one of them is kept.
type bufCache struct {
	mu   sync.Mutex
	bufs [2]*selBuf // pass 1 and pass 2
}

func (c *bufCache) get(pass int) *selBuf {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := c.bufs[pass]; b != nil {
		c.bufs[pass] = nil
		return b
	}
	return new(selBuf)
}

func (c *bufCache) put(pass int, b *selBuf) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bufs[pass] == nil {
		c.bufs[pass] = b
	}
}

// drop lets the collector have the cached buffers.
func (c *bufCache) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bufs = [2]*selBuf{}
}

// growRanks returns rs with room for at least n more ranks, copying a large array in chunks with a
// yield between them (see selection).
func growRanks(rs []rank, n int) []rank {
	if cap(rs)-len(rs) >= n {
		return rs
	}
	out := make([]rank, len(rs), len(rs)+n)
	for i := 0; i < len(rs); i += copyChunk {
		copy(out[i:], rs[i:min(i+copyChunk, len(rs))])
		runtime.Gosched()
	}
	return out
}

// add offers a unit; it is copied into the slab unless it is younger than a bound.
func (s *selection) add(u *unit) {
	r := rankOf(u)
	if s.bounded && r.cmp(s.bound) > 0 {
		return // younger than everything kept, which is already enough
	}
	if n := len(s.free); n > 0 {
		r.slot = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		r.slot = s.used
		if s.used == len(s.pages)*slabPage {
			s.pages = append(s.pages, make([]unit, slabPage))
		}
		s.used++
	}
	*s.unit(r.slot) = *u
	s.ranks = append(s.ranks, r)
	if len(s.ranks) >= s.limit {
		s.prune()
		// One allocation for the room to the next prune; append would grow a large slice by a
		// quarter at a time, copying it each time, and in one piece.
		s.ranks = growRanks(s.ranks, s.limit-len(s.ranks))
	}
}

// prune keeps the prefix of the candidates (cut), frees the slots of the rest, and sets the bound
// when what it kept is already enough.
func (s *selection) prune() {
	k := cut(s.ranks, s.need, s.max)
	for _, r := range s.ranks[k:] {
		*s.unit(r.slot) = unit{} // drop its references for the collector
		s.free = append(s.free, r.slot)
	}
	s.ranks = s.ranks[:k]
	var w uint64
	for _, r := range s.ranks {
		w += r.weight
	}
	if k > 0 && (w >= s.need || k >= s.max) {
		youngest := s.ranks[0]
		for _, r := range s.ranks[1:] {
			if r.cmp(youngest) > 0 {
				youngest = r
			}
		}
		s.bound, s.bounded = youngest, true
	}
	s.limit = k + max(k/prunePart, s.gap)
}

// cut reorders rs so that rs[:k] are the shortest prefix of the eviction order whose weight
// covers need, or its max oldest if that is shorter (all of rs if neither bound is reached), and
// returns k; rs[:k] are in no particular order. It is a quickselect that narrows [lo, hi] around
// the cut: rs[:lo] are the lo oldest and not enough, rs[:hi] are the hi oldest and enough (or all
// of rs). Ranks are distinct (a total order), so a partition has no ties. Expected linear time.
func cut(rs []rank, need uint64, max int) int {
	lo, hi := 0, len(rs)
	var wlo uint64 // weight of rs[:lo]
	for lo < hi && lo < max && wlo < need {
		p := partition(rs, lo, hi)
		var wl uint64
		for _, r := range rs[lo:p] {
			wl += r.weight
		}
		if p >= max || wlo+wl >= need {
			hi = p // rs[:p] is enough: the cut is at or before p
			continue
		}
		lo, wlo = p+1, wlo+wl+rs[p].weight // rs[:p] is not: the pivot is kept too
	}
	return lo
}

// partition orders rs[lo:hi] (hi > lo) around a pivot, the median of its first, middle and last
// rank: older ranks before it, younger after. It returns the pivot's index.
func partition(rs []rank, lo, hi int) int {
	mid, last := lo+(hi-lo)/2, hi-1
	if rs[mid].cmp(rs[lo]) < 0 {
		rs[mid], rs[lo] = rs[lo], rs[mid]
	}
	if rs[last].cmp(rs[lo]) < 0 {
		rs[last], rs[lo] = rs[lo], rs[last]
	}
	if rs[last].cmp(rs[mid]) < 0 {
		rs[last], rs[mid] = rs[mid], rs[last]
	}
	rs[mid], rs[last] = rs[last], rs[mid] // the median to the end
	pivot, p := rs[last], lo
	for i := lo; i < last; i++ {
		if rs[i].cmp(pivot) < 0 {
			rs[i], rs[p] = rs[p], rs[i]
			p++
		}
	}
	rs[p], rs[last] = rs[last], rs[p]
	return p
}

// sorted returns the kept units, oldest first (pointers into the slab, valid until release).
// Nothing may be added after it.
func (s *selection) sorted() []*unit {
	s.prune()
	sortRanks(s.ranks, bits.Len(uint(len(s.ranks))))
	out := s.out[:0]
	for _, r := range s.ranks {
		out = append(out, s.unit(r.slot))
	}
	s.out = out
	return out
}

// sortRanks sorts rs in eviction order with a yield of the processor after every sortPiece ranks
// or so: it partitions rs around a pivot until the pieces are that small, then sorts each. (One sort
// of a quarter of a million ranks holds a processor for tens of milliseconds.) depth bounds the
// partitioning; a piece still large when it runs out is sorted whole.
func sortRanks(rs []rank, depth int) {
	if len(rs) <= sortPiece || depth == 0 {
		slices.SortFunc(rs, rank.cmp)
		runtime.Gosched()
		return
	}
	p := partition(rs, 0, len(rs))
	sortRanks(rs[:p], depth-1)
	sortRanks(rs[p+1:], depth-1)
}
