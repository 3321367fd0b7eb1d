package main

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

func TestHistBuckets(t *testing.T) {
	// Every value lies in the range of its bucket, and buckets are ordered and contiguous.
	vals := []uint64{0, 1, 63, 64, 65, 127, 128, 129, 1000, 1 << 20, 1<<20 + 12345, 1<<63 - 1, 1 << 63, 1<<64 - 1}
	for range 10000 {
		vals = append(vals, rand.Uint64()>>rand.UintN(64))
	}
	for _, v := range vals {
		i := bucketOf(v)
		if i < 0 || i >= histBuckets {
			t.Fatalf("bucketOf(%d) = %d out of range", v, i)
		}
		lo, hi := bucketRange(i)
		if v < lo || v > hi {
			t.Fatalf("value %d in bucket %d [%d, %d]", v, i, lo, hi)
		}
		if lo >= histSub && float64(hi-lo)/float64(lo) > 1.0/histSub {
			t.Fatalf("bucket %d [%d, %d] wider than 1/%d", i, lo, hi, histSub)
		}
	}
	for i := 1; i < histBuckets; i++ {
		_, prevHi := bucketRange(i - 1)
		lo, _ := bucketRange(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ends at %d", i, lo, prevHi)
		}
	}
}

func TestHistQuantiles(t *testing.T) {
	var parts [4]hist
	var all []time.Duration
	for i := range 100000 {
		d := time.Duration(rand.ExpFloat64() * float64(time.Millisecond))
		all = append(all, d)
		parts[i%4].record(d)
	}
	var h hist
	for i := range parts {
		h.merge(&parts[i])
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for _, q := range []float64{0.5, 0.99, 0.999, 1} {
		exact := all[int(q*float64(len(all)))-1]
		got := h.quantile(q)
		if diff := float64(got-exact) / float64(exact); diff > 0.02 || diff < -0.02 {
			t.Errorf("q%.3f = %v, exact %v (%.1f%% off)", q, got, exact, 100*diff)
		}
	}
	if h.n != 100000 || time.Duration(h.max) != all[len(all)-1] || h.quantile(1) != all[len(all)-1] {
		t.Errorf("n %d max %v quantile(1) %v, want %v", h.n, time.Duration(h.max), h.quantile(1), all[len(all)-1])
	}
	var empty hist
	if empty.quantile(0.5) != 0 {
		t.Error("quantile of an empty histogram")
	}
	var one hist
	one.record(5 * time.Millisecond)
	if got := one.quantile(0.5); got != 5*time.Millisecond {
		t.Errorf("single value: %v", got)
	}
}
