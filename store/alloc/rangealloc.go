package alloc

import (
	"fmt"

	"github.com/google/btree"
)

// Align is the allocation granule in bytes: every extent's offset and size is
// a multiple of it.
const Align = 64

// RoundUp rounds size up to a multiple of Align. It wraps for sizes above
// 2^64-64; callers check size <= MaxObjectSize (2^40) first.
func RoundUp(size uint64) uint64 { return (size + Align - 1) &^ (Align - 1) }

// Span is an immutable value, safe to share. It is a half-open byte range
// [Offset, Offset+Size) relative to the start of a segment.
type Span struct {
	Offset, Size uint64
}

// End returns Offset+Size, the first byte after the span.
func (s Span) End() uint64 { return s.Offset + s.Size }

const (
	// btreeDegree: nodes hold up to 2*32-1 spans of 16 bytes, about 1 KiB.
	btreeDegree = 32
	// freeListNodes bounds the recycled btree nodes kept per allocator
	// (shared by its two trees) so that thousands of idle segments do not
	// each pin tens of KiB of spare nodes.
	freeListNodes = 8
)

// RangeAllocator is not safe for concurrent use: the Registry guards every
// allocator with its own mutex, and a standalone allocator needs its owner's
// lock. It manages the free space of one segment of Capacity bytes.
//
// Invariants (checked by the tests after every operation):
//   - free spans are disjoint, Align-aligned, inside [0, Capacity), and
//     coalesced: no two are adjacent (a.End() < b.Offset for consecutive spans);
//   - byOffset and bySize hold exactly the same spans;
//   - FreeBytes() is the sum of the free spans and Used()+FreeBytes() ==
//     Capacity().
//
// The set of free spans is a pure function of the set of free bytes, so two
// allocators that went through different operation histories but have the
// same free bytes behave identically from then on.
type RangeAllocator struct {
	capacity uint64
	free     uint64
	// byOffset orders free spans by Offset, for coalescing and range checks.
	byOffset *btree.BTreeG[Span]
	// bySize orders free spans by (Size, Offset), for best fit.
	bySize *btree.BTreeG[Span]
}

func lessOffset(a, b Span) bool { return a.Offset < b.Offset }

func lessSizeOffset(a, b Span) bool {
	if a.Size != b.Size {
		return a.Size < b.Size
	}
	return a.Offset < b.Offset
}

// NewRangeAllocator returns an allocator whose whole capacity is free.
// capacity is rounded down to a multiple of Align (the Registry only passes
// aligned sizes), since no allocation could use a shorter tail.
func NewRangeAllocator(capacity uint64) *RangeAllocator {
	capacity &^= Align - 1
	fl := btree.NewFreeListG[Span](freeListNodes)
	a := &RangeAllocator{
		capacity: capacity,
		free:     capacity,
		byOffset: btree.NewWithFreeListG(btreeDegree, lessOffset, fl),
		bySize:   btree.NewWithFreeListG(btreeDegree, lessSizeOffset, fl),
	}
	if capacity > 0 {
		a.insert(Span{Offset: 0, Size: capacity})
	}
	return a
}

// Clone returns an independent copy. The btrees are cloned copy-on-write, so
// this is O(1) and later writes to either copy do not affect the other.
func (a *RangeAllocator) Clone() *RangeAllocator {
	return &RangeAllocator{
		capacity: a.capacity,
		free:     a.free,
		byOffset: a.byOffset.Clone(),
		bySize:   a.bySize.Clone(),
	}
}

// Capacity returns the managed size in bytes.
func (a *RangeAllocator) Capacity() uint64 { return a.capacity }

// Used returns the allocated bytes (sum of rounded extent sizes).
func (a *RangeAllocator) Used() uint64 { return a.capacity - a.free }

// FreeBytes returns Capacity() - Used().
func (a *RangeAllocator) FreeBytes() uint64 { return a.free }

// NumFreeSpans returns the number of free spans (fragmentation measure).
func (a *RangeAllocator) NumFreeSpans() int { return a.byOffset.Len() }

// Largest returns the size of the largest free span, 0 if full.
func (a *RangeAllocator) Largest() uint64 {
	s, ok := a.bySize.Max()
	if !ok {
		return 0
	}
	return s.Size
}

// FreeWithin returns the free bytes inside [offset, end), as spans clipped to it, by offset.
// O(log n + k) for k spans returned.
func (a *RangeAllocator) FreeWithin(offset, end uint64) []Span {
	var out []Span
	start := offset
	if s, ok := a.floor(offset); ok && s.End() > offset {
		start = s.Offset
	}
	a.byOffset.AscendGreaterOrEqual(Span{Offset: start}, func(s Span) bool {
		if s.Offset >= end {
			return false
		}
		lo, hi := max(s.Offset, offset), min(s.End(), end)
		if lo < hi {
			out = append(out, Span{Offset: lo, Size: hi - lo})
		}
		return true
	})
	return out
}

// FreeSpans returns a copy of the free spans sorted by offset.
func (a *RangeAllocator) FreeSpans() []Span {
	out := make([]Span, 0, a.byOffset.Len())
	a.byOffset.Ascend(func(s Span) bool {
		out = append(out, s)
		return true
	})
	return out
}

// Alloc reserves RoundUp(size) bytes and returns their offset. It uses best
// fit: the smallest free span that holds the rounded size, the lowest offset
// among spans of that size, carved from the span's start. ok is false (and
// nothing changes) if size is 0 or no free span is large enough.
// O(log n) in the number of free spans.
func (a *RangeAllocator) Alloc(size uint64) (offset uint64, ok bool) {
	// size > a.free also rules out sizes whose rounding would wrap, since
	// a.free <= capacity <= 2^64-64.
	if size == 0 || size > a.free {
		return 0, false
	}
	need := RoundUp(size)
	var best Span
	a.bySize.AscendGreaterOrEqual(Span{Size: need}, func(s Span) bool {
		best, ok = s, true
		return false
	})
	if !ok {
		return 0, false
	}
	a.remove(best)
	if best.Size > need {
		a.insert(Span{Offset: best.Offset + need, Size: best.Size - need})
	}
	a.free = mustSub("allocator free bytes", a.free, need)
	return best.Offset, true
}

// Free returns [offset, offset+RoundUp(size)) to the free space, coalescing
// with free neighbours. It fails with ErrNotAllocated, changing nothing, if
// size is 0, offset is not aligned, the range leaves the segment, or any part
// of it is already free. O(log n).
func (a *RangeAllocator) Free(offset, size uint64) error {
	need, err := a.checkRange(offset, size)
	if err != nil {
		return fmt.Errorf("free [%d,+%d): %v: %w", offset, size, err, ErrNotAllocated)
	}
	end := offset + need
	prev, hasPrev := a.floor(offset)
	if hasPrev && prev.End() > offset {
		return fmt.Errorf("free [%d,%d): overlaps free span [%d,%d): %w",
			offset, end, prev.Offset, prev.End(), ErrNotAllocated)
	}
	// prev (if any) starts before offset, so the first span at or after
	// offset starts strictly after it.
	next, hasNext := a.ceil(offset)
	if hasNext && next.Offset < end {
		return fmt.Errorf("free [%d,%d): overlaps free span [%d,%d): %w",
			offset, end, next.Offset, next.End(), ErrNotAllocated)
	}
	merged := Span{Offset: offset, Size: need}
	if hasPrev && prev.End() == offset {
		a.remove(prev)
		merged.Offset = prev.Offset
		merged.Size = mustAdd("coalesced span", merged.Size, prev.Size)
	}
	if hasNext && next.Offset == end {
		a.remove(next)
		merged.Size = mustAdd("coalesced span", merged.Size, next.Size)
	}
	a.insert(merged)
	a.free = mustAdd("allocator free bytes", a.free, need)
	return nil
}

// Reserve marks exactly [offset, offset+RoundUp(size)) as used; snapshot
// restore uses it to rebuild an allocator from the recorded extents. It fails
// with ErrNotFree, changing nothing, if size is 0, offset is not aligned, the
// range leaves the segment, or any part of it is not free. O(log n).
func (a *RangeAllocator) Reserve(offset, size uint64) error {
	need, err := a.checkRange(offset, size)
	if err != nil {
		return fmt.Errorf("reserve [%d,+%d): %v: %w", offset, size, err, ErrNotFree)
	}
	end := offset + need
	s, ok := a.floor(offset)
	if !ok || s.End() < end {
		return fmt.Errorf("reserve [%d,%d): not inside one free span: %w", offset, end, ErrNotFree)
	}
	a.remove(s)
	if s.Offset < offset {
		a.insert(Span{Offset: s.Offset, Size: offset - s.Offset})
	}
	if s.End() > end {
		a.insert(Span{Offset: end, Size: s.End() - end})
	}
	a.free = mustSub("allocator free bytes", a.free, need)
	return nil
}

// checkRange validates a range argument and returns its rounded size. The
// returned error is a plain description; callers wrap it with their sentinel.
func (a *RangeAllocator) checkRange(offset, size uint64) (uint64, error) {
	switch {
	case size == 0:
		return 0, fmt.Errorf("empty range")
	case offset%Align != 0:
		return 0, fmt.Errorf("offset not %d-byte aligned", Align)
	case size > a.capacity: // before RoundUp, which could wrap
		return 0, fmt.Errorf("beyond capacity %d", a.capacity)
	}
	need := RoundUp(size) // <= capacity, which is aligned
	if offset > a.capacity-need {
		return 0, fmt.Errorf("beyond capacity %d", a.capacity)
	}
	return need, nil
}

// floor returns the free span with the greatest Offset <= offset.
func (a *RangeAllocator) floor(offset uint64) (s Span, ok bool) {
	a.byOffset.DescendLessOrEqual(Span{Offset: offset}, func(x Span) bool {
		s, ok = x, true
		return false
	})
	return s, ok
}

// ceil returns the free span with the smallest Offset >= offset.
func (a *RangeAllocator) ceil(offset uint64) (s Span, ok bool) {
	a.byOffset.AscendGreaterOrEqual(Span{Offset: offset}, func(x Span) bool {
		s, ok = x, true
		return false
	})
	return s, ok
}

func (a *RangeAllocator) insert(s Span) {
	a.byOffset.ReplaceOrInsert(s)
	a.bySize.ReplaceOrInsert(s)
}

func (a *RangeAllocator) remove(s Span) {
	a.byOffset.Delete(s)
	a.bySize.Delete(s)
}
