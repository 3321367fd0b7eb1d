package service

import (
	"context"

	"metad/evict"
)

// Evictor is the leader's eviction as the service runs it (Config.Evictor); *evict.Evictor
// implements it. Its methods must be safe for concurrent use: EvictTenant runs on the callers'
// goroutines while Run works.
type Evictor interface {
	// EvictTenant evicts the tenant's own objects until deficit bytes of its quota are released
	// (tenant-quota eviction) and returns the bytes released; an error when it could not run.
	EvictTenant(ctx context.Context, tenant string, deficit uint64) (freed uint64, err error)
	// Kick makes the eviction loop look at once.
	Kick()
	// Run is the eviction loop (memory and NOF watermarks, the reaper), on the leader only; it
	// returns when ctx ends.
	Run(ctx context.Context) error
}

var _ Evictor = (*evict.Evictor)(nil)

// evictForQuota has the evictor release what the tenant's quota lacks for a put charging want
// bytes (evict.QuotaDeficit against the current state) and returns the bytes released. Call it only
// with Config.Evictor set.
func (s *Service) evictForQuota(ctx context.Context, tenant string, want uint64) (uint64, error) {
	return s.cfg.Evictor.EvictTenant(ctx, tenant, evict.QuotaDeficit(s.state(), tenant, want))
}
