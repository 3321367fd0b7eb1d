package alloc

import (
	"fmt"
	"math/bits"
)

// Every sum of byte counts in this package goes through these helpers, so a total can never wrap
// silently. Two kinds of sum are told apart:
//   - a sum that input can push past 2^64 (a tier's capacity when a segment is mounted) is checked
//     with add64 and refused by its caller, changing nothing;
//   - a sum that the package's invariants bound (used <= capacity, a freed range was allocated)
//     uses mustAdd or mustSub, which panic: a result out of range means the state is broken, and
//     a replica must stop rather than go on with wrong totals.

// add64 returns a+b and whether it fits in 64 bits.
func add64(a, b uint64) (uint64, bool) {
	s, carry := bits.Add64(a, b, 0)
	return s, carry == 0
}

// mustAdd returns a+b; a sum past 2^64 breaks an invariant named by what, and panics.
func mustAdd(what string, a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		overflowed(what, a, b)
	}
	return s
}

// mustSub returns a-b; b > a breaks an invariant named by what, and panics.
func mustSub(what string, a, b uint64) uint64 {
	d, borrow := bits.Sub64(a, b, 0)
	if borrow != 0 {
		underflowed(what, a, b)
	}
	return d
}

// overflowed and underflowed panic for mustAdd and mustSub (kept out of them so that they inline).
//
//go:noinline
func overflowed(what string, a, b uint64) {
	panic(fmt.Sprintf("alloc: %s: %d + %d overflows 64 bits", what, a, b))
}

//go:noinline
func underflowed(what string, a, b uint64) {
	panic(fmt.Sprintf("alloc: %s: %d - %d is below zero", what, a, b))
}
