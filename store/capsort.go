package store

import (
	"cmp"
	"encoding/binary"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// A capture's objects come in the directory's hash order, and a snapshot file wants them in key
// order. Sorting them with a key comparison chases two key pointers per comparison, about twenty
// times per object; at a million objects that was most of a Persist. KeyOrder instead reads each
// key once into a sortRef, an 8-byte window of the key in big-endian order with the object's
// index, sorts those (no pointer to chase), and compares whole keys only where two windows tie.
// It leaves the objects where they are: moving them would write three pointers per object, each
// through the collector's write barrier while it marks, and the writer reads them by index anyway.

// sortRef is one object of a tenant in the sort: window is 8 bytes of its key from the tenant's
// common prefix on, zero-padded (so windows order as the keys do, and equal windows need the keys).
type sortRef struct {
	window uint64
	i      int // the object's index before the sort
}

// keyWindow is the 8 bytes of key from off, big-endian, the missing ones zero. A key shorter than
// another with the same bytes pads with the smallest byte, so it never orders after it.
func keyWindow(key string, off int) uint64 {
	if off >= len(key) {
		return 0
	}
	var b [8]byte
	copy(b[:], key[off:])
	return binary.BigEndian.Uint64(b[:])
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// minSortPart is the fewest objects a sort worker takes: below it, a goroutine costs more than its
// share of the work.
const minSortPart = 1 << 14

// KeyOrder returns the indexes of t.Objects in ascending key order (keys are distinct within a
// tenant), leaving t.Objects as they are. It sorts on up to GOMAXPROCS goroutines: each reads its
// part's keys into windows and sorts them (the key reads are cache misses, which then overlap),
// and the sorted parts are merged in rounds, the merges of a round in parallel.
func (t *TenantCapture) KeyOrder() []int {
	return keyOrder(t.Objects, max(1, min(runtime.GOMAXPROCS(0), len(t.Objects)/minSortPart)))
}

// keyOrder is KeyOrder of objs on exactly workers goroutines (at least 1, at most len(objs)).
func keyOrder(objs []CapturedObject, workers int) []int {
	n := len(objs)
	if n < 2 {
		return make([]int, n)
	}
	buf := make([]sortRef, 2*n)
	rs, spare := buf[:n], buf[n:]
	parts := make([]int, workers+1) // part w is rs[parts[w]:parts[w+1]]
	for w := range parts {
		parts[w] = w * n / workers
	}
	// Windows from the key's start, and each part's common prefix with the first key; the common
	// prefix of all, if any, moves the windows past it (keys that all begin alike, as
	// "model/layer/..." do, would otherwise tie in every window).
	first := objs[0].Key
	lcps := make([]int, workers)
	parallel(workers, func(w int) {
		lcp := len(first)
		for i := parts[w]; i < parts[w+1]; i++ {
			k := objs[i].Key
			rs[i] = sortRef{window: keyWindow(k, 0), i: i}
			if lcp > 0 {
				lcp = commonPrefix(first[:lcp], k)
			}
		}
		lcps[w] = lcp
	})
	byRef := func(a, b sortRef) int {
		if c := cmp.Compare(a.window, b.window); c != 0 {
			return c
		}
		return strings.Compare(objs[a.i].Key, objs[b.i].Key)
	}
	lcp := slices.Min(lcps)
	parallel(workers, func(w int) {
		part := rs[parts[w]:parts[w+1]]
		if lcp > 0 {
			for j := range part {
				part[j].window = keyWindow(objs[part[j].i].Key, lcp)
			}
		}
		slices.SortFunc(part, byRef)
	})
	for len(parts) > 2 { // merge neighbouring parts into spare, then swap
		next := make([]int, 0, len(parts)/2+1)
		for w := 0; w < len(parts)-1; w += 2 {
			next = append(next, parts[w])
		}
		next = append(next, n)
		parallel(len(next)-1, func(m int) {
			lo, mid, hi := parts[2*m], n, n
			if 2*m+1 < len(parts)-1 {
				mid, hi = parts[2*m+1], parts[2*m+2]
			}
			mergeRefs(spare[lo:hi], rs[lo:mid], rs[mid:hi], byRef)
		})
		rs, spare, parts = spare, rs, next
	}
	order := make([]int, n)
	for j := range rs {
		order[j] = rs[j].i
	}
	return order
}

// mergeRefs merges the sorted a and b into dst (len(a)+len(b)).
func mergeRefs(dst, a, b []sortRef, cmp func(a, b sortRef) int) {
	i, j := 0, 0
	for k := range dst {
		if j == len(b) || (i < len(a) && cmp(a[i], b[j]) <= 0) {
			dst[k] = a[i]
			i++
		} else {
			dst[k] = b[j]
			j++
		}
	}
}

// parallel runs fn(0..n-1), each on its own goroutine but the last on the caller's, and returns
// when every one has.
func parallel(n int, fn func(int)) {
	var wg sync.WaitGroup
	for w := range n - 1 {
		wg.Go(func() { fn(w) })
	}
	fn(n - 1)
	wg.Wait()
}
