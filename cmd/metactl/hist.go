package main

import (
	"math/bits"
	"time"
)

// Latency histogram: log-linear buckets (64 per power of two), so a quantile is within 1/64
// (1.6 %) of the true value and the memory is fixed (30 KiB) whatever the run length. Values are
// nanoseconds. Not safe for concurrent use: each bench goroutine has its own, merged at the end.
const (
	histSubBits = 6
	histSub     = 1 << histSubBits                 // linear sub-buckets per power of two
	histBuckets = (64 - histSubBits + 1) * histSub // enough for any uint64
)

// hist is not safe for concurrent use (one per goroutine, merged after): a latency histogram.
type hist struct {
	counts [histBuckets]uint64
	n      uint64
	max    uint64
}

// bucketOf returns the bucket of v: v itself below histSub, else (shift+1)*histSub + the top
// histSubBits bits after the leading one.
func bucketOf(v uint64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits - 1
	return (shift+1)*histSub + int(v>>uint(shift)) - histSub
}

// bucketRange returns the smallest and largest value of bucket i.
func bucketRange(i int) (lo, hi uint64) {
	if i < histSub {
		return uint64(i), uint64(i)
	}
	shift := uint(i/histSub - 1)
	m := uint64(i%histSub + histSub)
	return m << shift, (m+1)<<shift - 1
}

func (h *hist) record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[bucketOf(v)]++
	h.n++
	h.max = max(h.max, v)
}

func (h *hist) merge(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile returns the q-quantile (0 < q <= 1): the midpoint of the bucket holding the value of
// rank ceil(q*n), capped at the largest value recorded (which is the answer for the last rank);
// 0 when empty.
func (h *hist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q * float64(h.n))
	if float64(rank) < q*float64(h.n) {
		rank++
	}
	rank = max(rank, 1)
	if rank >= h.n {
		return time.Duration(h.max)
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bucketRange(i)
			return time.Duration(min(lo+(hi-lo)/2, h.max))
		}
	}
	return time.Duration(h.max)
}
