package alloc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// checkAllocator verifies every RangeAllocator invariant, including that the
// two trees agree.
func checkAllocator(a *RangeAllocator) error {
	spans := a.FreeSpans()
	var sum, largest uint64
	for i, s := range spans {
		if s.Size == 0 || s.Offset%Align != 0 || s.Size%Align != 0 {
			return fmt.Errorf("span %d %+v empty or misaligned", i, s)
		}
		if s.End() > a.Capacity() || s.End() < s.Offset {
			return fmt.Errorf("span %d %+v beyond capacity %d", i, s, a.Capacity())
		}
		if i > 0 && spans[i-1].End() >= s.Offset {
			return fmt.Errorf("spans %d %+v and %d %+v overlap, touch or are unsorted", i-1, spans[i-1], i, s)
		}
		sum += s.Size
		largest = max(largest, s.Size)
	}
	if sum != a.FreeBytes() {
		return fmt.Errorf("free spans sum %d, FreeBytes %d", sum, a.FreeBytes())
	}
	if a.Used()+a.FreeBytes() != a.Capacity() {
		return fmt.Errorf("used %d + free %d != capacity %d", a.Used(), a.FreeBytes(), a.Capacity())
	}
	if a.Largest() != largest {
		return fmt.Errorf("Largest %d, want %d", a.Largest(), largest)
	}
	if a.NumFreeSpans() != len(spans) || a.bySize.Len() != len(spans) {
		return fmt.Errorf("span counts: NumFreeSpans %d, bySize %d, spans %d", a.NumFreeSpans(), a.bySize.Len(), len(spans))
	}
	var bySize []Span
	a.bySize.Ascend(func(s Span) bool { bySize = append(bySize, s); return true })
	want := slices.Clone(spans)
	slices.SortFunc(want, func(x, y Span) int {
		if lessSizeOffset(x, y) {
			return -1
		}
		if lessSizeOffset(y, x) {
			return 1
		}
		return 0
	})
	if !slices.Equal(bySize, want) {
		return fmt.Errorf("bySize tree %v disagrees with byOffset tree %v", bySize, spans)
	}
	return nil
}

// refAlloc is the reference model: one bool per 64-byte cell, true = used.
type refAlloc struct{ used []bool }

func (r *refAlloc) capacity() uint64 { return uint64(len(r.used)) * Align }

// runs returns the maximal free runs in offset order.
func (r *refAlloc) runs() []Span {
	var out []Span
	for i := 0; i < len(r.used); {
		if r.used[i] {
			i++
			continue
		}
		j := i
		for j < len(r.used) && !r.used[j] {
			j++
		}
		out = append(out, Span{Offset: uint64(i) * Align, Size: uint64(j-i) * Align})
		i = j
	}
	return out
}

// bestFit is the smallest run holding need, lowest offset among equals.
func (r *refAlloc) bestFit(need uint64) (uint64, bool) {
	best := Span{Size: ^uint64(0)}
	found := false
	for _, s := range r.runs() {
		if s.Size >= need && s.Size < best.Size {
			best, found = s, true
		}
	}
	return best.Offset, found
}

// valid reports whether [off, off+RoundUp(size)) is aligned, non-empty and
// inside; all reports whether every cell of it has state want.
func (r *refAlloc) valid(off, size uint64) bool {
	return size > 0 && off%Align == 0 && size <= r.capacity() && off <= r.capacity()-RoundUp(size)
}

func (r *refAlloc) all(off, size uint64, want bool) bool {
	for c := off / Align; c < (off+RoundUp(size))/Align; c++ {
		if r.used[c] != want {
			return false
		}
	}
	return true
}

func (r *refAlloc) set(off, size uint64, v bool) {
	for c := off / Align; c < (off+RoundUp(size))/Align; c++ {
		r.used[c] = v
	}
}

func TestRoundUp(t *testing.T) {
	for _, tc := range []struct{ in, want uint64 }{
		{0, 0}, {1, 64}, {63, 64}, {64, 64}, {65, 128}, {128, 128}, {1 << 40, 1 << 40}, {1<<40 + 1, 1<<40 + 64},
	} {
		if got := RoundUp(tc.in); got != tc.want {
			t.Errorf("RoundUp(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestNewRangeAllocator(t *testing.T) {
	for _, tc := range []struct {
		capacity, want uint64
		spans          []Span
	}{
		{0, 0, []Span{}},
		{63, 0, []Span{}},
		{64, 64, []Span{{0, 64}}},
		{1000, 960, []Span{{0, 960}}},
		{^uint64(0), ^uint64(0) &^ 63, []Span{{0, ^uint64(0) &^ 63}}},
	} {
		a := NewRangeAllocator(tc.capacity)
		if a.Capacity() != tc.want || a.FreeBytes() != tc.want || a.Used() != 0 {
			t.Errorf("NewRangeAllocator(%d): capacity %d free %d used %d, want %d", tc.capacity, a.Capacity(), a.FreeBytes(), a.Used(), tc.want)
		}
		if got := a.FreeSpans(); !slices.Equal(got, tc.spans) {
			t.Errorf("NewRangeAllocator(%d).FreeSpans() = %v, want %v", tc.capacity, got, tc.spans)
		}
	}
}

// TestAllocBestFit builds holes of known sizes and checks which one each
// request takes.
func TestAllocBestFit(t *testing.T) {
	// Cells (64 B): 0-1 free(2), 2 used, 3-5 free(3), 6 used, 7 free(1),
	// 8 used, 9-10 free(2), 11 used, 12.. free (tail of 4).
	newHoles := func(t *testing.T) *RangeAllocator {
		a := NewRangeAllocator(16 * Align)
		for _, c := range []uint64{2, 6, 8, 11} {
			if err := a.Reserve(c*Align, Align); err != nil {
				t.Fatal(err)
			}
		}
		return a
	}
	for _, tc := range []struct {
		name  string
		sizes []uint64
		want  []uint64 // offsets; ^0 = fails
		spans []Span   // free spans after
	}{
		{name: "exact single cell hole", sizes: []uint64{1}, want: []uint64{7 * Align},
			spans: []Span{{0, 128}, {3 * 64, 192}, {9 * 64, 128}, {12 * 64, 256}}},
		{name: "two-cell holes tie: lowest offset", sizes: []uint64{65, 128}, want: []uint64{0, 9 * Align},
			spans: []Span{{3 * 64, 192}, {7 * 64, 64}, {12 * 64, 256}}},
		{name: "carve from start of smallest fitting", sizes: []uint64{129}, want: []uint64{3 * Align},
			spans: []Span{{0, 128}, {7 * 64, 64}, {9 * 64, 128}, {12 * 64, 256}}},
		{name: "only the tail fits", sizes: []uint64{200}, want: []uint64{12 * Align},
			spans: []Span{{0, 128}, {3 * 64, 192}, {7 * 64, 64}, {9 * 64, 128}}},
		{name: "too large", sizes: []uint64{257, 0}, want: []uint64{^uint64(0), ^uint64(0)},
			spans: []Span{{0, 128}, {3 * 64, 192}, {7 * 64, 64}, {9 * 64, 128}, {12 * 64, 256}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newHoles(t)
			for i, size := range tc.sizes {
				off, ok := a.Alloc(size)
				if tc.want[i] == ^uint64(0) {
					if ok {
						t.Errorf("Alloc(%d) = %d, want failure", size, off)
					}
					continue
				}
				if !ok || off != tc.want[i] {
					t.Errorf("Alloc(%d) = %d, %v, want %d", size, off, ok, tc.want[i])
				}
			}
			if got := a.FreeSpans(); !slices.Equal(got, tc.spans) {
				t.Errorf("FreeSpans = %v, want %v", got, tc.spans)
			}
			if err := checkAllocator(a); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestFreeCoalesces(t *testing.T) {
	a := NewRangeAllocator(4 * Align)
	var offs []uint64
	for range 4 {
		off, ok := a.Alloc(Align)
		if !ok {
			t.Fatal("Alloc failed")
		}
		offs = append(offs, off)
	}
	steps := []struct {
		off   uint64
		spans []Span
	}{
		{offs[1], []Span{{64, 64}}},
		{offs[3], []Span{{64, 64}, {192, 64}}},
		{offs[2], []Span{{64, 192}}}, // both neighbours
		{offs[0], []Span{{0, 256}}},  // right neighbour
	}
	for _, st := range steps {
		if err := a.Free(st.off, 1); err != nil { // size 1 rounds to 64
			t.Fatalf("Free(%d): %v", st.off, err)
		}
		if got := a.FreeSpans(); !slices.Equal(got, st.spans) {
			t.Fatalf("after Free(%d): %v, want %v", st.off, got, st.spans)
		}
	}
}

func TestFreeReserveErrors(t *testing.T) {
	// 8 cells; cells 2-3 and 6 used.
	mk := func(t *testing.T) *RangeAllocator {
		a := NewRangeAllocator(8 * Align)
		if err := a.Reserve(2*Align, 2*Align); err != nil {
			t.Fatal(err)
		}
		if err := a.Reserve(6*Align, 1); err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, tc := range []struct {
		name      string
		reserve   bool
		off, size uint64
		want      error
	}{
		{"free ok", false, 2 * Align, 2 * Align, nil},
		{"free part of used", false, 3 * Align, Align, nil},
		{"free already free", false, 0, Align, ErrNotAllocated},
		{"free overlaps free on the right", false, 2 * Align, 3 * Align, ErrNotAllocated},
		{"free overlaps free on the left", false, Align, 2 * Align, ErrNotAllocated},
		{"free covers used, free, used", false, 2 * Align, 5 * Align, ErrNotAllocated},
		{"free zero size", false, 2 * Align, 0, ErrNotAllocated},
		{"free unaligned", false, 2*Align + 1, Align, ErrNotAllocated},
		{"free beyond end", false, 8 * Align, Align, ErrNotAllocated},
		{"free wrapping size", false, 2 * Align, ^uint64(0), ErrNotAllocated},
		{"free wrapping offset", false, ^uint64(0) &^ 63, Align, ErrNotAllocated},
		{"reserve ok", true, 4 * Align, 2 * Align, nil},
		{"reserve whole free span", true, 0, 2 * Align, nil},
		{"reserve used", true, 2 * Align, Align, ErrNotFree},
		{"reserve straddles", true, Align, 2 * Align, ErrNotFree},
		{"reserve spans used cell", true, 5 * Align, 3 * Align, ErrNotFree},
		{"reserve zero", true, 0, 0, ErrNotFree},
		{"reserve unaligned", true, 1, Align, ErrNotFree},
		{"reserve beyond end", true, 7 * Align, 2 * Align, ErrNotFree},
		{"reserve wrapping", true, 7 * Align, ^uint64(0) - 10, ErrNotFree},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := mk(t)
			before, used := a.FreeSpans(), a.Used()
			var err error
			if tc.reserve {
				err = a.Reserve(tc.off, tc.size)
			} else {
				err = a.Free(tc.off, tc.size)
			}
			if tc.want == nil {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
			} else {
				if !errors.Is(err, tc.want) {
					t.Fatalf("error %v, want %v", err, tc.want)
				}
				if got := a.FreeSpans(); !slices.Equal(got, before) || a.Used() != used {
					t.Fatalf("state changed on error: %v used %d, was %v used %d", got, a.Used(), before, used)
				}
			}
			if err := checkAllocator(a); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestAllocatorClone(t *testing.T) {
	a := NewRangeAllocator(64 * Align)
	off, _ := a.Alloc(100)
	c := a.Clone()
	if _, ok := c.Alloc(Align); !ok {
		t.Fatal("clone Alloc failed")
	}
	if err := a.Free(off, 100); err != nil {
		t.Fatal(err)
	}
	if a.Used() != 0 || c.Used() != 3*Align {
		t.Fatalf("clone not independent: a used %d, c used %d", a.Used(), c.Used())
	}
	for _, x := range []*RangeAllocator{a, c} {
		if err := checkAllocator(x); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAllocatorModel runs random Alloc/Free/Reserve sequences against the
// cell model: every result, every free span and the best-fit choice must
// match, extents never overlap, and failed calls change nothing.
func TestAllocatorModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cells := rapid.IntRange(0, 200).Draw(t, "cells")
		tail := rapid.SampledFrom([]uint64{0, 0, 0, 1, 63}).Draw(t, "tail")
		a := NewRangeAllocator(uint64(cells)*Align + tail)
		ref := &refAlloc{used: make([]bool, cells)}
		var live []Span // extents handed out or reserved (may be stale after arbitrary frees)
		maxBytes := uint64(cells+2) * Align

		// unchanged asserts a failed call left the state alone.
		unchanged := func(t *rapid.T, before []Span, op string) {
			if got := a.FreeSpans(); !slices.Equal(got, before) {
				t.Fatalf("%s failed but changed spans: %v -> %v", op, before, got)
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"alloc": func(t *rapid.T) {
				size := rapid.Uint64Range(0, maxBytes).Draw(t, "size")
				before := a.FreeSpans()
				want, wantOK := ref.bestFit(RoundUp(size))
				if size == 0 {
					wantOK = false
				}
				off, ok := a.Alloc(size)
				if ok != wantOK || (ok && off != want) {
					t.Fatalf("Alloc(%d) = %d, %v; reference best fit %d, %v", size, off, ok, want, wantOK)
				}
				if !ok {
					unchanged(t, before, "Alloc")
					return
				}
				if !ref.all(off, size, false) {
					t.Fatalf("Alloc(%d) = %d overlaps a used extent", size, off)
				}
				ref.set(off, size, true)
				live = append(live, Span{off, size})
			},
			"free live": func(t *rapid.T) {
				if len(live) == 0 {
					t.Skip("nothing live")
				}
				i := rapid.IntRange(0, len(live)-1).Draw(t, "i")
				e := live[i]
				live = slices.Delete(live, i, i+1)
				wantOK := ref.all(e.Offset, e.Size, true) // false if already freed by "free any"
				before := a.FreeSpans()
				err := a.Free(e.Offset, e.Size)
				if (err == nil) != wantOK {
					t.Fatalf("Free(%d, %d) = %v, want ok=%v", e.Offset, e.Size, err, wantOK)
				}
				if err != nil {
					if !errors.Is(err, ErrNotAllocated) {
						t.Fatalf("Free error %v is not ErrNotAllocated", err)
					}
					unchanged(t, before, "Free")
					return
				}
				ref.set(e.Offset, e.Size, false)
			},
			"free any": func(t *rapid.T) {
				off := rapid.Uint64Range(0, uint64(cells+1)).Draw(t, "cell") * Align
				off += rapid.SampledFrom([]uint64{0, 0, 0, 0, 1}).Draw(t, "misalign")
				size := rapid.Uint64Range(0, maxBytes).Draw(t, "size")
				wantOK := ref.valid(off, size) && ref.all(off, size, true)
				before := a.FreeSpans()
				err := a.Free(off, size)
				if (err == nil) != wantOK {
					t.Fatalf("Free(%d, %d) = %v, want ok=%v", off, size, err, wantOK)
				}
				if err != nil {
					if !errors.Is(err, ErrNotAllocated) {
						t.Fatalf("Free error %v is not ErrNotAllocated", err)
					}
					unchanged(t, before, "Free")
					return
				}
				ref.set(off, size, false)
			},
			"reserve": func(t *rapid.T) {
				off := rapid.Uint64Range(0, uint64(cells+1)).Draw(t, "cell") * Align
				off += rapid.SampledFrom([]uint64{0, 0, 0, 0, 1}).Draw(t, "misalign")
				size := rapid.Uint64Range(0, maxBytes/2).Draw(t, "size")
				wantOK := ref.valid(off, size) && ref.all(off, size, false)
				before := a.FreeSpans()
				err := a.Reserve(off, size)
				if (err == nil) != wantOK {
					t.Fatalf("Reserve(%d, %d) = %v, want ok=%v", off, size, err, wantOK)
				}
				if err != nil {
					if !errors.Is(err, ErrNotFree) {
						t.Fatalf("Reserve error %v is not ErrNotFree", err)
					}
					unchanged(t, before, "Reserve")
					return
				}
				ref.set(off, size, true)
				live = append(live, Span{off, size})
			},
			"": func(t *rapid.T) {
				if err := checkAllocator(a); err != nil {
					t.Fatal(err)
				}
				if got, want := a.FreeSpans(), ref.runs(); !slices.Equal(got, want) {
					t.Fatalf("FreeSpans %v, reference %v", got, want)
				}
				if a.Capacity() != ref.capacity() {
					t.Fatalf("capacity %d, reference %d", a.Capacity(), ref.capacity())
				}
			},
		})
	})
}

// BenchmarkAllocFree measures one Free of a random live extent plus one
// Alloc of a random size (64 B .. 64 KiB), with 100k live extents in a
// segment about 80% full, so the allocator holds tens of thousands of
// scattered free spans.
func BenchmarkAllocFree(b *testing.B) {
	const live = 100_000
	rng := rand.New(rand.NewPCG(1, 2))
	size := func() uint64 { return 1 + rng.Uint64N(64<<10) }
	// Mean rounded size is ~32 KiB; 100k of them need ~3.2 GB.
	a := NewRangeAllocator(4 << 30)
	exts := make([]Span, 0, live)
	for len(exts) < live {
		s := size()
		off, ok := a.Alloc(s)
		if !ok {
			b.Fatalf("prefill failed at %d extents", len(exts))
		}
		exts = append(exts, Span{off, s})
	}
	// Warm up the churn so the free space is fragmented before timing.
	churn := func() bool {
		i := rng.IntN(len(exts))
		if err := a.Free(exts[i].Offset, exts[i].Size); err != nil {
			b.Fatal(err)
		}
		s := size()
		off, ok := a.Alloc(s)
		if !ok {
			exts[i] = exts[len(exts)-1]
			exts = exts[:len(exts)-1]
			return false
		}
		exts[i] = Span{off, s}
		return true
	}
	for range live {
		churn()
	}
	failed := 0
	b.ResetTimer()
	for b.Loop() {
		if !churn() {
			failed++
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(a.NumFreeSpans()), "freespans")
	b.ReportMetric(float64(len(exts)), "live")
	if failed > 0 {
		b.ReportMetric(float64(failed), "allocfail")
	}
}
