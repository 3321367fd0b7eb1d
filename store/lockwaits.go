package store

import (
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Lock wait sampling for the read path. One read in lockSampleEvery times how long it waited for
// the route shard's read lock and for the object's lock; the rest pay one cheap per-P random draw.
// Only the leader's read path is timed: the apply path reads no clock (the determinism rule), and
// its lock waits would only show the reads it waited for anyway.
const lockSampleEvery = 64

// LockWaitBuckets are the upper bounds, in seconds, of the lock wait histograms.
var LockWaitBuckets = []float64{1e-6, 4e-6, 16e-6, 64e-6, 256e-6, 1e-3, 4e-3, 16e-3, 64e-3}

// WaitHist is a histogram of sampled lock waits. Safe for concurrent use (atomics only).
type WaitHist struct {
	counts [10]atomic.Uint64 // per bucket of LockWaitBuckets, then +Inf
	sumNs  atomic.Uint64
}

func (h *WaitHist) observe(d time.Duration) {
	s := d.Seconds()
	i := 0
	for i < len(LockWaitBuckets) && s > LockWaitBuckets[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNs.Add(uint64(d))
}

// Read returns the sample count, the summed wait in seconds, and the cumulative count per bucket
// upper bound (the form Prometheus histograms take).
func (h *WaitHist) Read() (count uint64, sum float64, cumulative map[float64]uint64) {
	cumulative = make(map[float64]uint64, len(LockWaitBuckets))
	for i, ub := range LockWaitBuckets {
		count += h.counts[i].Load()
		cumulative[ub] = count
	}
	count += h.counts[len(LockWaitBuckets)].Load()
	return count, float64(h.sumNs.Load()) / 1e9, cumulative
}

// LockWaits are the store's sampled lock wait histograms.
type LockWaits struct {
	Route  WaitHist // route shard read lock, on the read path
	Object WaitHist // object lock, on the read path
}

// LockWaits returns the store's sampled lock wait histograms.
func (s *Store) LockWaits() *LockWaits { return &s.waits }

func sampleLock() bool { return rand.Uint32()%lockSampleEvery == 0 }

// lookupTimed is the route lookup of the read path, timing the shard lock when sample is set.
func (d *GroupDirectory) lookupTimed(key string, sample bool, h *WaitHist) *ObjectEntry {
	if !sample {
		return d.lookup(key)
	}
	sh := d.shard(key)
	t0 := time.Now()
	sh.mu.RLock()
	h.observe(time.Since(t0))
	e := sh.m[key]
	sh.mu.RUnlock()
	return e
}

// lockTimed takes e.mu, timing the wait when sample is set.
func lockTimed(e *ObjectEntry, sample bool, h *WaitHist) {
	if !sample {
		e.mu.Lock()
		return
	}
	t0 := time.Now()
	e.mu.Lock()
	h.observe(time.Since(t0))
}
