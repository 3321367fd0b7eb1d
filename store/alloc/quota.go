package alloc

import (
	"cmp"
	"math/big"
	"math/bits"
	"slices"
	"strings"
)

// QuotaRequest is a plain value, safe to share. Requested is the tenant's
// requested quota in bytes; 0 means no quota (unlimited) and takes no part
// in the sharing.
type QuotaRequest struct {
	Tenant    string
	Requested uint64
}

// EffectiveQuotas computes SEMANTICS section 6. capacity is the summed size
// of the mounted MEMORY segments. The result is in the order of reqs; an
// entry with Requested 0 gets 0 (no quota).
//
// If the non-zero requests sum to at most capacity, each gets what it asked.
// Otherwise each gets floor(capacity*requested/sum), computed exactly (the
// sum may exceed 2^64), and the capacity - sum(floors) remaining bytes (fewer
// than the number of tenants) go one each to the largest fractional
// remainders, ties by tenant id ascending. The results then sum to exactly
// capacity. The value for each entry does not depend on the order of reqs
// as long as tenant ids are unique (for duplicate ids the final tie-break is
// the position in reqs).
func EffectiveQuotas(capacity uint64, reqs []QuotaRequest) []uint64 {
	out := make([]uint64, len(reqs))
	var sumHi, sumLo uint64
	for _, q := range reqs {
		var c uint64
		sumLo, c = bits.Add64(sumLo, q.Requested, 0)
		sumHi = mustAdd("quota request sum", sumHi, c)
	}
	if sumHi == 0 && sumLo <= capacity {
		for i, q := range reqs {
			out[i] = q.Requested
		}
		return out
	}

	// Oversubscribed: sum > capacity. Remainders are numerators over the
	// common denominator sum, so they compare directly. rem holds each
	// remainder as 128 bits (hi, lo): it is below sum < 2^128.
	type share struct {
		idx    int
		remHi  uint64
		remLo  uint64
		tenant string
	}
	shares := make([]share, 0, len(reqs))
	var given uint64
	var bigSum, num, quo, rem *big.Int
	if sumHi != 0 {
		bigSum = new(big.Int).Lsh(new(big.Int).SetUint64(sumHi), 64)
		bigSum.Or(bigSum, new(big.Int).SetUint64(sumLo))
		num, quo, rem = new(big.Int), new(big.Int), new(big.Int)
	}
	bigCap := new(big.Int).SetUint64(capacity)
	var buf [16]byte
	for i, q := range reqs {
		if q.Requested == 0 {
			continue
		}
		s := share{idx: i, tenant: q.Tenant}
		if sumHi == 0 {
			// capacity*req < 2^64*sum because capacity < 2^64 and
			// req <= sum, so the quotient fits and Div64 cannot panic.
			hi, lo := bits.Mul64(capacity, q.Requested)
			out[i], s.remLo = bits.Div64(hi, lo, sumLo)
		} else {
			num.Mul(bigCap, num.SetUint64(q.Requested))
			quo.QuoRem(num, bigSum, rem)
			out[i] = quo.Uint64() // <= capacity
			rem.FillBytes(buf[:])
			s.remHi = uint64FromBE(buf[:8])
			s.remLo = uint64FromBE(buf[8:])
		}
		given = mustAdd("quota shares", given, out[i])
		shares = append(shares, s)
	}
	left := mustSub("quota remainder", capacity, given) // < len(shares)
	if left == 0 {
		return out
	}
	slices.SortFunc(shares, func(a, b share) int {
		if c := cmp.Compare(b.remHi, a.remHi); c != 0 {
			return c
		}
		if c := cmp.Compare(b.remLo, a.remLo); c != 0 {
			return c
		}
		if c := strings.Compare(a.tenant, b.tenant); c != 0 {
			return c
		}
		return cmp.Compare(a.idx, b.idx)
	})
	for _, s := range shares[:left] {
		out[s.idx]++
	}
	return out
}

func uint64FromBE(b []byte) uint64 {
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}
