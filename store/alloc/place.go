package alloc

import (
	"container/heap"
	"fmt"
	"math/bits"
)

// Limits of SEMANTICS section 1 that Place enforces.
const (
	MaxObjectSize = 1 << 40 // bytes
	MaxReplicas   = 8       // per tier
)

// Strategy is an immutable value, safe to share. It orders the
// non-preferred candidate segments of a placement. The zero value is
// StrategyRandom, the default.
type Strategy uint8

// Placement strategies.
const (
	// StrategyRandom: a Fisher-Yates shuffle of the tier's ID-sorted
	// segments driven by splitmix64 seeded with PlaceRequest.Seed.
	StrategyRandom Strategy = 0
	// StrategyFreeRatioFirst: descending free/size ratio, ties by ID.
	StrategyFreeRatioFirst Strategy = 1
)

// ParseStrategy accepts "random" or "free_ratio_first"; anything else fails
// with ErrInvalidStrategy.
func ParseStrategy(s string) (Strategy, error) {
	switch s {
	case "random":
		return StrategyRandom, nil
	case "free_ratio_first":
		return StrategyFreeRatioFirst, nil
	default:
		return 0, fmt.Errorf("parse strategy %q: want random or free_ratio_first: %w", s, ErrInvalidStrategy)
	}
}

// String returns the name ParseStrategy accepts, or "Strategy(n)".
func (s Strategy) String() string {
	switch s {
	case StrategyRandom:
		return "random"
	case StrategyFreeRatioFirst:
		return "free_ratio_first"
	default:
		return fmt.Sprintf("Strategy(%d)", uint8(s))
	}
}

// PlaceRequest is a plain value, safe to share if not mutated. It asks for
// Memory replicas (1..MaxReplicas) on MEMORY segments, NOF replicas
// (0..MaxReplicas) on NOF segments and DFS replicas (0..MaxReplicas) on DFS
// pools for an object of Size bytes (1..MaxObjectSize). Preferred segments are
// tried first, in order; Seed (chosen by the leader and carried in the
// command) drives StrategyRandom.
type PlaceRequest struct {
	Size      uint64
	Memory    int
	NOF       int
	DFS       int
	Preferred []ID
	Strategy  Strategy
	Seed      uint64
}

func (q *PlaceRequest) validate() error {
	switch {
	case q.Size == 0 || q.Size > MaxObjectSize:
		return fmt.Errorf("place: size %d not in 1..%d: %w", q.Size, uint64(MaxObjectSize), ErrInvalidRequest)
	case q.Memory < 1 || q.Memory > MaxReplicas:
		return fmt.Errorf("place: memory replicas %d not in 1..%d: %w", q.Memory, MaxReplicas, ErrInvalidRequest)
	case q.NOF < 0 || q.NOF > MaxReplicas:
		return fmt.Errorf("place: nof replicas %d not in 0..%d: %w", q.NOF, MaxReplicas, ErrInvalidRequest)
	case q.DFS < 0 || q.DFS > MaxReplicas:
		return fmt.Errorf("place: dfs replicas %d not in 0..%d: %w", q.DFS, MaxReplicas, ErrInvalidRequest)
	case q.Strategy != StrategyRandom && q.Strategy != StrategyFreeRatioFirst:
		return fmt.Errorf("place: strategy %s: %w", q.Strategy, ErrInvalidRequest)
	}
	return nil
}

// Placement is a plain value owned by the caller. Memory, NOF and DFS list the
// extents allocated, in candidate order, each in a distinct segment; Disk holds
// the one DISK extent, if any. Short counts the replicas asked for but not
// placed (MEMORY, NOF and DFS together; the DISK replica is not asked for).
type Placement struct {
	Memory []Extent
	NOF    []Extent
	DFS    []Extent
	Disk   []Extent
	Short  int
}

// All returns every extent of p in Tiers order: Memory, NOF, Disk, then DFS.
func (p Placement) All() []Extent {
	out := make([]Extent, 0, len(p.Memory)+len(p.NOF)+len(p.DFS)+len(p.Disk))
	return append(append(append(append(out, p.Memory...), p.NOF...), p.Disk...), p.DFS...)
}

// Place allocates the replicas of one object, each in a distinct segment.
// Per tier asked (MEMORY always, NOF and DFS when their count is > 0) the
// candidates are the mounted Preferred segments of that tier that are not
// closing, in the given order (duplicates ignored), then every other open
// segment of that tier in strategy order (closing segments are skipped without
// changing the order of the others); each replica takes the next candidate
// whose allocator can hold RoundUp(Size). A tier that gets no replica fails
// the whole call with a *NoSpaceError (ErrNoSpace) naming the tier and whether
// the object fits in any of its segments, and everything this call allocated
// is freed: nothing changes. Fewer replicas than asked, but at least one per
// tier, is success with Short > 0. Invalid requests fail with
// ErrInvalidRequest.
//
// While a DISK segment (a shared root) is mounted, every placement also takes
// one DISK extent, the same way (preferred, then strategy order), when one has
// room: a put always lands on the shared root unless the root is full, and a
// full root never fails a put (disk eviction makes room for the next ones).
//
// The result depends only on the registry state and req.
func (r *Registry) Place(req PlaceRequest) (Placement, error) {
	if err := req.validate(); err != nil {
		return Placement{}, err
	}
	size := RoundUp(req.Size)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.epoch++
	var pl Placement
	for _, ask := range [...]struct {
		tier Tier
		want int
		into *[]Extent
	}{{TierMemory, req.Memory, &pl.Memory}, {TierNOF, req.NOF, &pl.NOF}, {TierDFS, req.DFS, &pl.DFS}} {
		if ask.want == 0 {
			continue
		}
		exts, err := r.placeTierLocked(ask.tier, size, ask.want, &req)
		if err != nil {
			for _, e := range pl.All() {
				if ferr := r.freeLocked(e); ferr != nil {
					panic(fmt.Sprintf("alloc: rollback of %+v: %v", e, ferr))
				}
			}
			return Placement{}, err
		}
		*ask.into = exts
		pl.Short += ask.want - len(exts)
	}
	if len(r.byTier[TierDisk]) > r.closing[TierDisk] {
		pl.Disk, _ = r.placeTierLocked(TierDisk, size, 1, &req) // no room on the root: no DISK replica
	}
	return pl, nil
}

// placeTierLocked allocates up to want extents of size (already rounded) on
// tier t. It allocates nothing and returns a *NoSpaceError if no candidate
// has room.
func (r *Registry) placeTierLocked(t Tier, size uint64, want int, req *PlaceRequest) ([]Extent, error) {
	out := make([]Extent, 0, want)
	tried := 0
	try := func(seg *segment) {
		seg.mark = r.epoch
		tried++
		if off, ok := seg.alloc.Alloc(size); ok {
			r.used[t] = mustAdd("tier used bytes", r.used[t], size)
			out = append(out, Extent{Segment: seg.info.ID, Offset: off, Size: size})
		}
	}
	for _, id := range req.Preferred {
		if len(out) == want {
			break
		}
		seg, ok := r.segs[id]
		if !ok || seg.info.Tier != t || seg.mark == r.epoch || seg.closing {
			continue
		}
		try(seg)
	}
	if len(out) < want {
		cands := r.candidatesLocked(t, req)
		for len(out) < want {
			seg := cands.next()
			if seg == nil {
				break
			}
			if seg.mark != r.epoch && !seg.closing {
				try(seg)
			}
		}
	}
	if len(out) == 0 {
		e := &NoSpaceError{Tier: t, Size: size, Segments: len(r.byTier[t]) - r.closing[t], Tried: tried}
		for _, seg := range r.byTier[t] {
			if !seg.closing && seg.alloc.Capacity() >= size {
				e.Fits = true
				break
			}
		}
		return nil, e
	}
	return out, nil
}

// candidates iterates over every segment of a tier in a request's strategy
// order (candidatesLocked); next returns nil when exhausted. Both orders are
// produced lazily, so a placement that succeeds on its first candidates costs
// O(1) (random) or O(n) (free_ratio_first) rather than a full sort. A value
// on the caller's stack: the random order allocates nothing until it has
// displaced more than shuffleInline positions.
type candidates struct {
	list []*segment
	heap *ratioHeap // free_ratio_first; nil for the random order
	shuf shuffle
}

// candidatesLocked returns the candidates of tier t for req.
func (r *Registry) candidatesLocked(t Tier, req *PlaceRequest) candidates {
	list := r.byTier[t]
	if req.Strategy == StrategyFreeRatioFirst {
		h := make(ratioHeap, len(list))
		copy(h, list)
		heap.Init(&h)
		return candidates{heap: &h}
	}
	return candidates{list: list, shuf: shuffle{n: len(list), rng: splitmix64{state: req.Seed}}}
}

func (c *candidates) next() *segment {
	if c.heap != nil {
		if c.heap.Len() == 0 {
			return nil
		}
		return heap.Pop(c.heap).(*segment)
	}
	i, ok := c.shuf.next()
	if !ok {
		return nil
	}
	return c.list[i]
}

// freeRatioBefore reports whether a comes before b in free_ratio_first order:
// a higher free/size ratio, compared exactly as a.free*b.size > b.free*a.size
// in 128 bits, then the lower ID.
func freeRatioBefore(a, b *segment) bool {
	ah, al := bits.Mul64(a.alloc.FreeBytes(), b.alloc.Capacity())
	bh, bl := bits.Mul64(b.alloc.FreeBytes(), a.alloc.Capacity())
	if ah != bh {
		return ah > bh
	}
	if al != bl {
		return al > bl
	}
	return Compare(a.info.ID, b.info.ID) < 0
}

// ratioHeap is a container/heap of segments in free_ratio_first order. The
// order is total (IDs are unique), so pops are deterministic.
type ratioHeap []*segment

func (h ratioHeap) Len() int           { return len(h) }
func (h ratioHeap) Less(i, j int) bool { return freeRatioBefore(h[i], h[j]) }
func (h ratioHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *ratioHeap) Push(x any)        { *h = append(*h, x.(*segment)) }
func (h *ratioHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}

// shuffle yields a Fisher-Yates permutation of 0..n-1 lazily, one position
// at a time. Step i (0 <= i < n-1) draws j = i + rng.below(n-i) and swaps
// positions i and j, then yields position i; the last position draws
// nothing. This is exactly the prefix of the eager forward shuffle
//
//	for i := 0; i < n-1; i++ { j := i + below(n-i); p[i], p[j] = p[j], p[i] }
//
// applied to the identity, but only the displaced positions are stored.
type shuffle struct {
	n, i int
	rng  splitmix64
	// The values at positions >= i that differ from the identity: the
	// first shuffleInline of them in inline (nInline used), the rest in
	// moved; lookups only, never iterated. A placement draws a few
	// candidates, so it rarely makes the map.
	inline  [shuffleInline]struct{ pos, val int }
	nInline int
	moved   map[int]int
}

// shuffleInline is how many displaced positions a shuffle keeps without a map.
const shuffleInline = 8

func (s *shuffle) at(p int) int {
	for _, m := range s.inline[:s.nInline] {
		if m.pos == p {
			return m.val
		}
	}
	if v, ok := s.moved[p]; ok {
		return v
	}
	return p
}

// set records that position p holds v.
func (s *shuffle) set(p, v int) {
	for k := range s.inline[:s.nInline] {
		if s.inline[k].pos == p {
			s.inline[k].val = v
			return
		}
	}
	if _, ok := s.moved[p]; ok || s.nInline == shuffleInline {
		if s.moved == nil {
			s.moved = make(map[int]int)
		}
		s.moved[p] = v
		return
	}
	s.inline[s.nInline] = struct{ pos, val int }{p, v}
	s.nInline++
}

// forget drops position p, which is never read again.
func (s *shuffle) forget(p int) {
	for k := range s.inline[:s.nInline] {
		if s.inline[k].pos == p {
			s.nInline--
			s.inline[k] = s.inline[s.nInline]
			return
		}
	}
	delete(s.moved, p)
}

// displaced is how many positions the shuffle holds apart from the identity.
func (s *shuffle) displaced() int { return s.nInline + len(s.moved) }

func (s *shuffle) next() (int, bool) {
	if s.i >= s.n {
		return 0, false
	}
	i := s.i
	s.i++
	if i == s.n-1 {
		return s.at(i), true
	}
	j := i + int(s.rng.below(uint64(s.n-i)))
	vi, vj := s.at(i), s.at(j)
	if j != i {
		s.set(j, vi)
	}
	s.forget(i) // position i is never read again
	return vj, true
}

// splitmix64 is Vigna's SplitMix64 generator, written out here so that the
// sequence for a seed never changes with the Go version. Not safe for
// concurrent use; each Place makes its own.
type splitmix64 struct{ state uint64 }

func (g *splitmix64) next() uint64 {
	g.state += 0x9e3779b97f4a7c15
	z := g.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// below returns a uniform value in [0, n), n > 0, by Lemire's
// multiply-and-reject method: the high word of next()*n, redrawing while the
// low word falls under (2^64 mod n).
func (g *splitmix64) below(n uint64) uint64 {
	hi, lo := bits.Mul64(g.next(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(g.next(), n)
		}
	}
	return hi
}

// PlaceOn allocates one extent of size bytes (1..MaxObjectSize) on each of
// the segments ids, in order, for the targets of a copy or move: all or
// nothing. A segment that is not mounted fails the call with
// ErrSegmentNotFound, one without a free span that large with a
// *NoSpaceError of its tier; nothing is allocated then. ids must be
// distinct. It returns the extents and each one's tier. The result depends
// only on the registry state and the arguments.
func (r *Registry) PlaceOn(size uint64, ids []ID) ([]Extent, []Tier, error) {
	if size == 0 || size > MaxObjectSize {
		return nil, nil, fmt.Errorf("place: size %d not in 1..%d: %w", size, uint64(MaxObjectSize), ErrInvalidRequest)
	}
	size = RoundUp(size)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Extent, 0, len(ids))
	tiers := make([]Tier, 0, len(ids))
	undo := func() {
		for i, e := range out {
			r.used[tiers[i]] = mustSub("tier used bytes", r.used[tiers[i]], e.Size)
			if ferr := r.segs[e.Segment].alloc.Free(e.Offset, e.Size); ferr != nil {
				panic(fmt.Sprintf("alloc: rollback of %+v: %v", e, ferr))
			}
		}
	}
	for _, id := range ids {
		seg, ok := r.segs[id]
		if !ok {
			undo()
			return nil, nil, fmt.Errorf("place on segment %s: %w", id, ErrSegmentNotFound)
		}
		t := seg.info.Tier
		if !t.Placeable() {
			undo()
			return nil, nil, fmt.Errorf("place on segment %s: a %s segment takes no placement: %w", id, t, ErrInvalidRequest)
		}
		off, ok := seg.alloc.Alloc(size)
		if !ok {
			undo()
			return nil, nil, &NoSpaceError{Tier: t, Size: size, Segments: 1, Tried: 1, Fits: seg.alloc.Capacity() >= size}
		}
		r.used[t] = mustAdd("tier used bytes", r.used[t], size)
		out = append(out, Extent{Segment: id, Offset: off, Size: size})
		tiers = append(tiers, t)
	}
	return out, tiers, nil
}

// PlaceTier allocates up to want (1..MaxReplicas) extents of size bytes on
// tier t, each in a distinct segment that is not in exclude, trying the
// tier's segments in the strategy's order (seed drives StrategyRandom), as
// Place does for one tier without preferred segments. No segment with room
// is a *NoSpaceError and nothing is allocated; fewer than want is success.
// The result depends only on the registry state and the arguments.
func (r *Registry) PlaceTier(t Tier, size uint64, want int, exclude []ID, strategy Strategy, seed uint64) ([]Extent, error) {
	req := PlaceRequest{Size: size, Memory: want, Strategy: strategy, Seed: seed}
	if err := req.validate(); err != nil {
		return nil, err
	}
	if !t.Placeable() {
		return nil, fmt.Errorf("place: tier %s: %w", t, ErrInvalidRequest)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.epoch++
	for _, id := range exclude {
		if seg, ok := r.segs[id]; ok {
			seg.mark = r.epoch // placeTierLocked passes over a segment marked in this epoch
		}
	}
	return r.placeTierLocked(t, RoundUp(size), want, &req)
}
