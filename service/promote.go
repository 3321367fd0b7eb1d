package service

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// Promotion on hit (Config.PromoteOnHit; store/promote.go has the replicated half). The leader
// counts the linearizable reads that find an object on disk alone in a count-min sketch (leader
// soft state: a new leader starts from nothing, which only delays a promotion); a key read
// PromoteMinHits times is a candidate, queued for the next QueuePromotion proposal while MEMORY is
// below PromoteHighWatermark of its capacity and fewer than store.MaxPromotions promotions are
// live. Run proposes the candidates every promoteInterval, at most promoteBatch a proposal.

const (
	promoteInterval = 20 * time.Millisecond
	promoteBatch    = 1024
	sketchRows      = 4
	sketchWidth     = 1 << 14
	// sketchAge: after this many reads counted, every counter is halved, so that a key read
	// twice an hour ago does not count as hot now.
	sketchAge = 1 << 20
)

// promoter is the leader's admission filter and candidate list. Concurrency contract: mu guards
// every field but seed (fixed at construction).
type promoter struct {
	seed    maphash.Seed
	mu      sync.Mutex
	counts  [sketchRows][sketchWidth]uint8
	counted int
	pending map[promoteKey]struct{} // candidates not proposed yet (lookups; proposed in any order)
}

type promoteKey struct{ tenant, key string }

func newPromoter() *promoter {
	return &promoter{seed: maphash.MakeSeed(), pending: map[promoteKey]struct{}{}}
}

// hit counts one read of a disk-only object and reports whether it is past the filter (min reads).
func (p *promoter) hit(tenant, key string, min int) bool {
	var h maphash.Hash
	h.SetSeed(p.seed)
	h.WriteString(tenant)
	h.WriteByte(0)
	h.WriteString(key)
	sum := h.Sum64()
	p.mu.Lock()
	defer p.mu.Unlock()
	est := uint8(255)
	for r := range sketchRows {
		c := &p.counts[r][(sum>>(16*r))%sketchWidth]
		if *c < 255 {
			*c++
		}
		est = minU8(est, *c)
	}
	if p.counted++; p.counted >= sketchAge {
		p.counted = 0
		for r := range p.counts {
			for i := range p.counts[r] {
				p.counts[r][i] >>= 1
			}
		}
	}
	if int(est) >= min && len(p.pending) < promoteBatch*4 {
		p.pending[promoteKey{tenant, key}] = struct{}{}
		return true
	}
	return false
}

func minU8(a, b uint8) uint8 {
	if a < b {
		return a
	}
	return b
}

// take removes and returns up to n candidates.
func (p *promoter) take(n int) []promoteKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]promoteKey, 0, min(n, len(p.pending)))
	for k := range p.pending {
		if len(out) == n {
			break
		}
		out = append(out, k)
		delete(p.pending, k)
	}
	return out
}

// readHit is the Get path's part: a linearizable read on the leader of an object whose replicas
// reps (COMPLETE ones) include a LOCAL_DISK one and no memory one (MEMORY, NOF) counts toward its
// promotion, as the store's promotion takes it (DISK and DFS replicas beside it change nothing).
func (s *Service) readHit(tenant, key string, reps []store.Replica, linear bool) {
	if s.promote == nil || !linear || len(reps) == 0 {
		return
	}
	local := false
	for i := range reps {
		if reps[i].Tier.InMemory() {
			return
		}
		local = local || reps[i].Tier == alloc.TierLocalDisk
	}
	if local {
		s.promote.hit(tenant, key, s.cfg.PromoteMinHits)
	}
}

// runPromoter proposes the candidates every promoteInterval until ctx ends (the leader only).
func (s *Service) runPromoter(ctx context.Context) {
	t := time.NewTicker(promoteInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !s.b.IsLeader() {
			s.promote.take(promoteBatch * 4) // a follower's candidates are a stale leader's
			continue
		}
		keys := s.promote.take(promoteBatch)
		if len(keys) == 0 {
			continue
		}
		st := s.st.Store()
		capacity, used := st.Segments().Allocatable(alloc.TierMemory)
		if capacity == 0 || float64(used) >= s.cfg.PromoteHighWatermark*float64(capacity) || st.Tasks().Promotions() >= store.MaxPromotions {
			continue // no room for more in memory: the candidates are dropped, reads count them again
		}
		toks := make([]*metadv1.ObjectToken, len(keys))
		for i, k := range keys {
			toks[i] = wire.TokenTo(store.ObjectToken{Tenant: k.tenant, Key: k.key})
		}
		pctx, cancel := context.WithTimeout(ctx, s.cfg.BackgroundTimeout)
		_, err := s.b.Propose(pctx, &metadv1.Command{Op: &metadv1.Command_QueuePromotion{QueuePromotion: &metadv1.QueuePromotion{
			Tokens: toks, StateEpoch: st.Epoch()}}})
		cancel()
		if err != nil && ctx.Err() == nil {
			s.log.Debug("queue promotions", "keys", len(toks), "err", err)
		}
	}
}

// PromotionAllocStart places the memory replica of a promotion the calling client holds.
func (s *Service) PromotionAllocStart(ctx context.Context, req *metadv1.PromotionAllocStartRequest) (*metadv1.PromotionAllocStartResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	tenant, key, err := readKeyOf(req.GetTenant(), req.GetKey())
	if err != nil {
		return nil, fail(err, req.GetTenant(), req.GetKey())
	}
	client, err := clientOf("client_id", req.GetClientId())
	if err != nil {
		return nil, fail(err, tenant, req.GetKey())
	}
	for i, id := range req.GetPreferredSegmentIds() {
		if _, err := segmentIDOf("preferred_segment_ids", id); err != nil {
			return nil, fail(within("preferred_segment_ids", i, err), tenant, req.GetKey())
		}
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	cmd := &metadv1.Command{Op: &metadv1.Command_PromotionStart{PromotionStart: &metadv1.PromotionStart{Tenant: tenant, ClientId: client[:],
		Key: []byte(key), PreferredSegmentIds: req.GetPreferredSegmentIds(), Placement: wire.StrategyTo(s.cfg.Strategy)}}}
	res, err := s.propose(ctx, cmd, tenant, req.GetKey())
	if err != nil {
		return nil, err
	}
	if len(res.Replicas) != 1 {
		return nil, internalf("promotion start: %d replicas", len(res.Replicas))
	}
	return &metadv1.PromotionAllocStartResponse{Replica: wire.ReplicasTo(s.st.Store().Segments(), res.Replicas, res.Bytes)[0], Size: res.Bytes}, nil
}

// NotifyPromotion ends a promotion the calling client holds.
func (s *Service) NotifyPromotion(ctx context.Context, req *metadv1.NotifyPromotionRequest) (*metadv1.NotifyPromotionResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	tenant, key, err := readKeyOf(req.GetTenant(), req.GetKey())
	if err != nil {
		return nil, fail(err, req.GetTenant(), req.GetKey())
	}
	client, err := clientOf("client_id", req.GetClientId())
	if err != nil {
		return nil, fail(err, tenant, req.GetKey())
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	cmd := &metadv1.Command{Op: &metadv1.Command_PromotionEnd{PromotionEnd: &metadv1.PromotionEnd{Tenant: tenant, ClientId: client[:],
		Key: []byte(key), Success: req.GetSuccess()}}}
	if _, err := s.propose(ctx, cmd, tenant, req.GetKey()); err != nil {
		return nil, err
	}
	return &metadv1.NotifyPromotionResponse{}, nil
}

// PromotionCandidates returns how many keys wait for the next QueuePromotion proposal (0 without
// PromoteOnHit).
func (s *Service) PromotionCandidates() int {
	if s.promote == nil {
		return 0
	}
	s.promote.mu.Lock()
	defer s.promote.mu.Unlock()
	return len(s.promote.pending)
}
