package evict

import (
	"errors"
	"fmt"
	"time"

	"metad/store"
)

// Config configures one Evictor. Ratios are fractions of a tier's mounted capacity in bytes;
// durations are wall-clock. The YAML/flag names are the snake_case names in each comment (Validate
// uses them in its messages).
type Config struct {
	// HighWatermark (high_watermark): memory eviction runs while MEMORY used/capacity is above it.
	// In (0, 1]. Default 0.90.
	HighWatermark float64
	// EvictRatio (evict_ratio): the least fraction of MEMORY capacity one memory round frees:
	// target = max(ratio, used/capacity - high_watermark + ratio). In (0, 1]. Default 0.05.
	EvictRatio float64
	// NOFHighWatermark (nof_high_watermark): the same for the NOF tier. In (0, 1]. Default 0.90.
	NOFHighWatermark float64
	// NOFEvictRatio (nof_evict_ratio): the same for the NOF tier. In (0, 1]. Default 0.05.
	NOFEvictRatio float64
	// DiskHighWatermark (disk_high_watermark): the same for the shared roots (DISK): a root's size
	// is its quota, and disk eviction runs while the roots' used bytes are above this share of it.
	// In (0, 1]. Default 0.95.
	DiskHighWatermark float64
	// DiskEvictRatio (disk_evict_ratio): the same for DISK. In (0, 1]. Default 0.05.
	DiskEvictRatio float64
	// DFSHighWatermark (dfs_high_watermark): the same for the DFS pools. In (0, 1]. Default 0.90.
	DFSHighWatermark float64
	// DFSEvictRatio (dfs_evict_ratio): the same for DFS. In (0, 1]. Default 0.05.
	DFSEvictRatio float64
	// AllowEvictSoftPinned (allow_evict_soft_pinned): soft-pinned objects may be evicted, after every
	// unpinned candidate, when a round is still short of its lower bound. Default true.
	AllowEvictSoftPinned bool
	// OffloadOnEvict (offload_on_evict): memory eviction keeps an object that its memory replica's
	// owner would offload (an offloading LOCAL_DISK registration, no LOCAL_DISK replica yet) and
	// queues that offload instead, oldest first; once the object is on the SSD a later round evicts
	// its memory replicas, and it lives on on disk. Default false (offload at write only).
	OffloadOnEvict bool
	// ForceEvict (force_evict): with OffloadOnEvict, a round whose offload queue is full evicts the
	// objects it would wait for instead of skipping them (their memory copy is lost). Default false.
	ForceEvict bool

	// BusyInterval (busy_interval): pause between rounds while a tier is over its watermark or an
	// allocation failed. Default 10ms.
	BusyInterval time.Duration
	// IdleInterval (idle_interval): how often an idle evictor, or one on a follower, looks again.
	// Default 250ms.
	IdleInterval time.Duration

	// CensusChunk (census_chunk): handles the census reads between yields of the processor.
	// Default 256 (store.DefaultCensusChunk).
	CensusChunk int
	// BatchSize (batch_size): objects per Evict or RevokeExpired proposal, at most (a group is never
	// split, so one group larger than this is a proposal of its own). Every proposal is a log entry
	// (or part of one) that the leader's Raft loop writes and syncs before it serves the next
	// VerifyLeader, and that every node decodes and applies; fewer, larger entries cost the
	// foreground less than many small ones, as long as one apply stays short (EvictUnits yields
	// every 64 units; a 2048-object Evict applies in a few milliseconds). Default 2048, chosen with
	// bench-evict (docs/performance.md).
	BatchSize int
	// RoundLimit (round_limit): eviction units (singletons or groups) one round selects at most. A
	// larger target takes several rounds, each with a fresh census, so the selection stays bounded
	// and its ranking up to date. A census reads every object (a cache miss or more each), so the
	// limit is large enough that a drain of a few hundred thousand objects takes a few censuses.
	// Default 262144: at most about 65 MB of selection (up to 1.5x the limit in candidates, 128 B
	// each in the slab and 40 B in the rank array), held only while a round runs. A larger limit
	// means fewer censuses per drain but a longer one and a larger selection, held while the
	// foreground waits for processors (docs/performance.md).
	RoundLimit int

	// PutReleaseTimeout (put_release_timeout): a write PROCESSING longer than this (since its
	// PutStart) is revoked by the reaper. Default 600s.
	PutReleaseTimeout time.Duration
	// ReapInterval (reap_interval): how often the reaper looks for such writes. Default 10s.
	ReapInterval time.Duration
}

// DefaultConfig returns the defaults of SEMANTICS sections 4 and 7.
func DefaultConfig() Config {
	return Config{
		HighWatermark:        0.90,
		EvictRatio:           0.05,
		NOFHighWatermark:     0.90,
		NOFEvictRatio:        0.05,
		DiskHighWatermark:    0.95,
		DiskEvictRatio:       0.05,
		DFSHighWatermark:     0.90,
		DFSEvictRatio:        0.05,
		AllowEvictSoftPinned: true,
		BusyInterval:         10 * time.Millisecond,
		IdleInterval:         250 * time.Millisecond,
		CensusChunk:          store.DefaultCensusChunk,
		BatchSize:            2048,
		RoundLimit:           262144,
		PutReleaseTimeout:    600 * time.Second,
		ReapInterval:         10 * time.Second,
	}
}

// Validate checks every field and reports all problems at once.
func (c Config) Validate() error {
	var errs []error
	frac := func(name string, v float64) {
		if !(v > 0 && v <= 1) {
			errs = append(errs, fmt.Errorf("evict: %s must be in (0, 1], got %g", name, v))
		}
	}
	frac("high_watermark", c.HighWatermark)
	frac("evict_ratio", c.EvictRatio)
	frac("nof_high_watermark", c.NOFHighWatermark)
	frac("nof_evict_ratio", c.NOFEvictRatio)
	frac("disk_high_watermark", c.DiskHighWatermark)
	frac("disk_evict_ratio", c.DiskEvictRatio)
	frac("dfs_high_watermark", c.DFSHighWatermark)
	frac("dfs_evict_ratio", c.DFSEvictRatio)
	pos := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("evict: %s must be positive, got %s", name, d))
		}
	}
	pos("busy_interval", c.BusyInterval)
	pos("idle_interval", c.IdleInterval)
	pos("put_release_timeout", c.PutReleaseTimeout)
	pos("reap_interval", c.ReapInterval)
	if c.CensusChunk < 1 {
		errs = append(errs, fmt.Errorf("evict: census_chunk must be at least 1, got %d", c.CensusChunk))
	}
	if c.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("evict: batch_size must be at least 1, got %d", c.BatchSize))
	}
	if c.RoundLimit < 1 {
		errs = append(errs, fmt.Errorf("evict: round_limit must be at least 1, got %d", c.RoundLimit))
	}
	return errors.Join(errs...)
}
