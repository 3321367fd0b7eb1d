package service

import (
	"fmt"
	"io"
	"time"

	"metad/store"
	"metad/store/alloc"
)

// Config is a plain value, read-only once given to New. It holds the service's settings and what it
// runs beside them (the clock, the key source, the evictor). Settings that change a replicated
// outcome (Strategy, PutDiscardTimeout) are stamped by the leader into every command it proposes,
// so followers' values never matter.
type Config struct {
	// LeaseTTL is the read lease that Get and Exist grant, as the store applies it
	// (store.Config.LeaseTTL); New refuses a store that disagrees. Default 10 s.
	LeaseTTL time.Duration
	// ClientTTL is how long a client may stay silent (no Ping) before the leader expires it and
	// proposes the unmount of its segments (all but its DISK and DFS ones). Default 10 s.
	ClientTTL time.Duration
	// Strategy orders the non-preferred candidate segments of a placement. Default random.
	Strategy alloc.Strategy
	// PutDiscardTimeout is put_discard_timeout: a PutStart on a key whose previous write has no
	// COMPLETE replica and started longer ago than this discards that attempt. Default 30 s.
	PutDiscardTimeout time.Duration
	// DefaultQuota is the requested quota, in bytes, of tenant "default" in a new cluster (0 = no
	// quota). InitCluster applies it. Default 0.
	DefaultQuota uint64
	// SweepInterval is the period of Run's loop (leadership changes, client expiry, the end of
	// graceful unmounts). Default 200 ms.
	SweepInterval time.Duration
	// BackgroundTimeout bounds each proposal that Run's loop makes (client expiry, the end of a
	// graceful unmount). Default 5 s.
	BackgroundTimeout time.Duration
	// Now is the clock (leases, put times seen by the leader, client liveness, API key times).
	// nil = time.Now; tests inject a fake.
	Now func() time.Time
	// KeyRand is the source of API key ids and secrets (CreateKey). nil = crypto/rand; tests
	// inject a fixed one.
	KeyRand io.Reader
	// SessionTTL is how long a client session may go without a command before apply drops it
	// (by the leader times in the log). Default 5 min.
	SessionTTL time.Duration
	// SessionWindow bounds the sequence numbers a session may have in use at once, so the answers
	// it keeps. Default 64.
	SessionWindow uint32
	// Evictor is the leader's eviction (an *evict.Evictor over this node), nil for none. The
	// service owns it: Run runs its loop (memory and NOF watermarks, the reaper), every leadership
	// change kicks it, and a PutStart over its tenant's quota (rejected TENANT_QUOTA_EXCEEDED, or
	// over it with what reservations hold) has it evict the tenant's own objects for the deficit
	// (evict.QuotaDeficit) and is tried again, at most twice. Without it nothing is evicted.
	Evictor Evictor
	// ArenaFence is how long a write may take (put_release_timeout): the leader drops a
	// reservation older than this, and retires the arenas of earlier terms this long (plus the
	// leader lease) after it became ready, when no writer an earlier leader answered can still be
	// writing into them. Default 600 s.
	ArenaFence time.Duration
	// NoArenas makes every PutStart go through the log (no arena is asked for). Default false.
	NoArenas bool
	// AutoPromote makes the leader promote every learner that is within DefaultPromoteMaxLag of
	// its commit index (learners.go), checked every few sweeps. Default false: learners wait for
	// PromoteMember.
	AutoPromote bool
	// ScanExamine bounds the keys one page of GetByRegex or RemoveByRegex asks its pattern about
	// (scan.go): a page ends after that many, matched or not, and its token resumes after the last.
	// Default DefaultScanExamine.
	ScanExamine int
	// ScanPageTime bounds the time one page of GetByRegex or RemoveByRegex spends matching its
	// pattern (wall time on this member, not Now: it bounds CPU): a page ends after it, and its
	// token resumes after the last key examined. Default DefaultScanPageTime.
	ScanPageTime time.Duration
	// PromoteOnHit: the leader queues a promotion for a disk-only object that its linearizable reads
	// hit at least PromoteMinHits times (promote.go), while MEMORY is below PromoteHighWatermark of
	// its capacity. Default false.
	PromoteOnHit bool
	// PromoteMinHits is the admission filter's threshold: reads of a key (counted in a count-min
	// sketch) before its promotion is queued. Default 2.
	PromoteMinHits int
	// PromoteHighWatermark is the share of MEMORY capacity above which no promotion is queued (the
	// memory eviction's high watermark: promoting then would only be evicted again). Default 0.90.
	PromoteHighWatermark float64
}

// Defaults of the scan budget (Config.ScanExamine, ScanPageTime).
const (
	// DefaultScanExamine is the largest page (4096 keys): a pattern that matches every key
	// fills any page. The walk keeps that many candidates, so its cost grows with the bound too.
	DefaultScanExamine = maxScanPage
	// DefaultScanPageTime: a page of a pattern holds a core for about this long past its walk
	// (a twentieth of Raft's default heartbeat timeout of 400 ms), so scans in a row leave the
	// scheduler room for the calls and heartbeats beside them.
	DefaultScanPageTime = 20 * time.Millisecond
)

// DefaultConfig returns the defaults of SEMANTICS sections 3 and 4.
func DefaultConfig() Config {
	return Config{
		LeaseTTL:             store.DefaultConfig().LeaseTTL,
		ClientTTL:            10 * time.Second,
		Strategy:             alloc.StrategyRandom,
		PutDiscardTimeout:    store.DefaultDiscardAfter,
		SweepInterval:        200 * time.Millisecond,
		BackgroundTimeout:    5 * time.Second,
		SessionTTL:           5 * time.Minute,
		SessionWindow:        64,
		ArenaFence:           600 * time.Second,
		ScanExamine:          DefaultScanExamine,
		ScanPageTime:         DefaultScanPageTime,
		PromoteMinHits:       2,
		PromoteHighWatermark: 0.90,
		Now:                  time.Now,
	}
}

// Validate checks the config; the messages name the setting as flags and YAML spell it.
func (c Config) Validate() error {
	switch {
	case c.LeaseTTL <= 0:
		return fmt.Errorf("service: lease_ttl must be positive, got %s", c.LeaseTTL)
	case c.ClientTTL <= 0:
		return fmt.Errorf("service: client_ttl must be positive, got %s", c.ClientTTL)
	case c.Strategy != alloc.StrategyRandom && c.Strategy != alloc.StrategyFreeRatioFirst:
		return fmt.Errorf("service: placement strategy %s unknown, want random or free_ratio_first", c.Strategy)
	case c.PutDiscardTimeout < time.Millisecond:
		return fmt.Errorf("service: put_discard_timeout must be at least 1ms, got %s", c.PutDiscardTimeout)
	case c.SweepInterval <= 0:
		return fmt.Errorf("service: sweep_interval must be positive, got %s", c.SweepInterval)
	case c.BackgroundTimeout <= 0:
		return fmt.Errorf("service: background_timeout must be positive, got %s", c.BackgroundTimeout)
	case c.ScanExamine < 1:
		return fmt.Errorf("service: scan-examine must be at least 1, got %d", c.ScanExamine)
	case c.ScanPageTime <= 0:
		return fmt.Errorf("service: scan-page-time must be positive, got %s", c.ScanPageTime)
	case c.PromoteOnHit && (c.PromoteMinHits < 1 || c.PromoteMinHits > 255):
		return fmt.Errorf("service: promote-min-hits must be 1..255, got %d", c.PromoteMinHits)
	case c.PromoteOnHit && (c.PromoteHighWatermark <= 0 || c.PromoteHighWatermark > 1):
		return fmt.Errorf("service: promote-high-watermark must be in (0, 1], got %v", c.PromoteHighWatermark)
	}
	if err := validSessionConfig(c); err != nil {
		return err
	}
	return nil
}

// nowNano is the configured clock in Unix nanoseconds.
func (c *Config) nowNano() int64 { return c.Now().UnixNano() }
