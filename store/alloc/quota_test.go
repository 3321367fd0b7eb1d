package alloc

import (
	"cmp"
	"math/big"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestEffectiveQuotasExamples(t *testing.T) {
	const max64 = ^uint64(0)
	q := func(pairs ...any) []QuotaRequest {
		var out []QuotaRequest
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, QuotaRequest{Tenant: pairs[i].(string), Requested: pairs[i+1].(uint64)})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		capacity uint64
		reqs     []QuotaRequest
		want     []uint64
	}{
		{"empty", 100, nil, []uint64{}},
		{"fits", 100, q("a", uint64(30), "b", uint64(70)), []uint64{30, 70}},
		{"fits with unlimited", 100, q("a", uint64(30), "u", uint64(0), "b", uint64(20)), []uint64{30, 0, 20}},
		{"exactly full", 100, q("a", uint64(60), "b", uint64(40)), []uint64{60, 40}},
		{"halved", 100, q("a", uint64(100), "b", uint64(100)), []uint64{50, 50}},
		// 10*3/15 = 2 r0, 10*5/15 = 3 r5, 10*7/15 = 4 r10: one byte left, to c.
		{"largest remainder", 10, q("a", uint64(3), "b", uint64(5), "c", uint64(7)), []uint64{2, 3, 5}},
		// 100/3 each: remainders tie, the one spare byte goes to the lowest id.
		{"tie by tenant id", 100, q("c", uint64(50), "a", uint64(50), "b", uint64(50)), []uint64{33, 34, 33}},
		// Sum 18: 12*4/18 = 2 r12 (4 tenants), 12*2/18 = 1 r6; floors sum
		// to 9, so 3 spare bytes go to the lowest ids among the r12 tenants.
		{"several spare bytes", 12, q("d", uint64(4), "b", uint64(4), "e", uint64(2), "c", uint64(4), "a", uint64(4)),
			[]uint64{2, 3, 1, 3, 3}},
		{"zero capacity", 0, q("a", uint64(5), "b", uint64(0)), []uint64{0, 0}},
		{"unlimited only", 0, q("a", uint64(0)), []uint64{0}},
		// Sum 3*(2^64-1) overflows 64 bits; each gets exactly a third.
		{"sum beyond 2^64", max64, q("a", max64, "b", max64, "c", max64),
			[]uint64{max64 / 3, max64 / 3, max64 / 3}},
		// Sum exactly 2^64: a gets floor((2^64-1)^2/2^64) = 2^64-2 r1, b gets
		// 0 r(2^64-1); the spare byte goes to b.
		{"sum exactly 2^64", max64, q("a", max64, "b", uint64(1)), []uint64{max64 - 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EffectiveQuotas(tc.capacity, tc.reqs)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("EffectiveQuotas(%d, %v) = %v, want %v", tc.capacity, tc.reqs, got, tc.want)
			}
		})
	}
}

// refQuotas is SEMANTICS section 6 in math/big throughout.
func refQuotas(capacity uint64, reqs []QuotaRequest) []uint64 {
	out := make([]uint64, len(reqs))
	sum := new(big.Int)
	for _, r := range reqs {
		sum.Add(sum, new(big.Int).SetUint64(r.Requested))
	}
	c := new(big.Int).SetUint64(capacity)
	if sum.Cmp(c) <= 0 {
		for i, r := range reqs {
			out[i] = r.Requested
		}
		return out
	}
	rems := make([]*big.Int, len(reqs))
	var idx []int
	given := new(big.Int)
	for i, r := range reqs {
		if r.Requested == 0 {
			continue
		}
		num := new(big.Int).Mul(c, new(big.Int).SetUint64(r.Requested))
		quo, rem := new(big.Int).QuoRem(num, sum, new(big.Int))
		out[i], rems[i] = quo.Uint64(), rem
		given.Add(given, quo)
		idx = append(idx, i)
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := rems[b].Cmp(rems[a]); c != 0 {
			return c
		}
		if c := strings.Compare(reqs[a].Tenant, reqs[b].Tenant); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	left := new(big.Int).Sub(c, given).Uint64()
	for _, i := range idx[:left] {
		out[i]++
	}
	return out
}

func drawQuotaRequests(t *rapid.T) (uint64, []QuotaRequest) {
	tenants := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-d]{1,3}`), 0, 12, rapid.ID[string]).Draw(t, "tenants")
	amount := rapid.OneOf(
		rapid.Uint64Range(0, 10),
		rapid.Uint64Range(0, 1<<20),
		rapid.Uint64Range(1<<62, ^uint64(0)),
		rapid.Uint64(),
	)
	reqs := make([]QuotaRequest, len(tenants))
	for i, name := range tenants {
		reqs[i] = QuotaRequest{Tenant: name, Requested: amount.Draw(t, "requested")}
	}
	return amount.Draw(t, "capacity"), reqs
}

// TestEffectiveQuotasProperties: matches the big-number reference, sums to
// capacity when oversubscribed, never exceeds a request, gives 0 to
// unlimited tenants, and does not depend on the order of the requests.
func TestEffectiveQuotasProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity, reqs := drawQuotaRequests(t)
		got := EffectiveQuotas(capacity, reqs)
		if want := refQuotas(capacity, reqs); !slices.Equal(got, want) {
			t.Fatalf("EffectiveQuotas(%d, %v) = %v, reference %v", capacity, reqs, got, want)
		}
		sumReq, sumGot := new(big.Int), new(big.Int)
		for i, r := range reqs {
			sumReq.Add(sumReq, new(big.Int).SetUint64(r.Requested))
			sumGot.Add(sumGot, new(big.Int).SetUint64(got[i]))
			if got[i] > r.Requested {
				t.Fatalf("%s got %d > requested %d", r.Tenant, got[i], r.Requested)
			}
		}
		if sumReq.Cmp(new(big.Int).SetUint64(capacity)) > 0 && sumGot.Uint64() != capacity {
			t.Fatalf("oversubscribed: results sum %v, capacity %d", sumGot, capacity)
		}
		perm := rapid.Permutation(reqs).Draw(t, "perm")
		byTenant := map[string]uint64{}
		for i, r := range reqs {
			byTenant[r.Tenant] = got[i]
		}
		for i, v := range EffectiveQuotas(capacity, perm) {
			if byTenant[perm[i].Tenant] != v {
				t.Fatalf("permuted: %s got %d, in original order %d", perm[i].Tenant, v, byTenant[perm[i].Tenant])
			}
		}
	})
}
