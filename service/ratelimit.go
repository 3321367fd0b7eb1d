package service

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// Rate limits per principal (auth.Limit, set with SetLimit and replicated with the auth state),
// enforced by each member on the calls it is sent, with buckets of its own: soft state that no
// other member sees and no restart keeps. The gRPC adapter asks Throttle before it serves a call
// of a principal (after authorizing it) and OpenStream before it serves a watch stream; a member
// calling as itself, a call a member forwards for a principal (its first member charged it), and a
// cluster without authentication are never limited.
//
// Each principal has a bucket of calls and one of keys, each holding up to one second of its rate
// and refilled continuously. A call is admitted when each holds its cost (1 call, and its keys:
// callKeys), or a full second's worth when the cost is more, and then takes its cost from each,
// which may leave the keys bucket in debt; a call that does not find that much is refused with
// ErrRateLimited and how long until the bucket holds it. So a batch larger than a second of keys
// is admitted once the bucket is full, and the calls after it wait out its debt.
// The streams limit counts the watch streams a principal has open here.

// ErrRateLimited is what Throttle and OpenStream wrap for a call over its principal's limits.
var ErrRateLimited = errors.New("rate limited")

// RateLimitedError is a plain value: a call refused for its principal's limits. It is
// ErrRateLimited.
type RateLimitedError struct {
	Principal  string
	Limit      string        // "calls", "keys" or "streams"
	Rate       uint32        // the limit (per second, or streams at once)
	RetryAfter time.Duration // until the bucket holds something again (streams: a guess)
}

func (e *RateLimitedError) Error() string {
	if e.Limit == "streams" {
		return fmt.Sprintf("%v: principal %q has %d watch streams open on this member, its limit; close one first (retry after %s)",
			ErrRateLimited, e.Principal, e.Rate, e.RetryAfter)
	}
	return fmt.Sprintf("%v: principal %q is over its limit of %d %s per second on this member; retry after %s",
		ErrRateLimited, e.Principal, e.Rate, e.Limit, e.RetryAfter)
}

func (e *RateLimitedError) Unwrap() error { return ErrRateLimited }

// streamRetryAfter is the retry-after of a stream refused for the streams limit: nothing says when
// one of the others ends.
const streamRetryAfter = time.Second

// limiterShards spreads the principals over that many locks.
const limiterShards = 16

// maxTrackedPerShard bounds the principals one shard tracks: past it, an insert first drops the
// principals whose buckets are full and that hold no stream (they would start full anyway).
const maxTrackedPerShard = 4096

// limiter is safe for concurrent use: the buckets of the principals this member has limited.
type limiter struct {
	seed   maphash.Seed
	shards [limiterShards]limiterShard
}

// limiterShard guards the principals whose name hashes to it; its mutex is a leaf.
type limiterShard struct {
	mu sync.Mutex
	by map[string]*principalBuckets
}

// principalBuckets is one principal's soft state, guarded by its shard's mutex.
type principalBuckets struct {
	of      *auth.State // the auth state lim was resolved in
	lim     auth.Limit
	calls   bucket
	keys    bucket
	streams uint32
}

// bucket is a token bucket of capacity one second of its rate; tokens may go below zero (debt).
// A plain value, guarded by its shard's mutex.
type bucket struct {
	tokens float64
	at     int64 // Unix nanoseconds of the last refill; 0: never used (full)
}

// refill brings b to now at rate per second.
func (b *bucket) refill(now int64, rate uint32) {
	r := float64(rate)
	if b.at == 0 {
		b.tokens, b.at = r, now
		return
	}
	if now > b.at {
		b.tokens = math.Min(r, b.tokens+r*float64(now-b.at)/1e9)
		b.at = now
	}
}

// short refills b to now at rate per second and returns how long until it holds cost, or a full
// bucket when cost is more (so a cost past the capacity leaves it in debt); 0 when it does now.
func (b *bucket) short(now int64, rate uint32, cost float64) time.Duration {
	b.refill(now, rate)
	need := math.Min(cost, float64(rate))
	if b.tokens >= need {
		return 0
	}
	return time.Duration(math.Ceil((need-b.tokens)/float64(rate)*1e3)) * time.Millisecond
}

// full reports whether b holds its whole capacity at now (refilled).
func (b *bucket) full(now int64, rate uint32) bool {
	if b.at == 0 || rate == 0 {
		return true
	}
	b.refill(now, rate)
	return b.tokens >= float64(rate)
}

func newLimiter() *limiter {
	l := &limiter{seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].by = map[string]*principalBuckets{}
	}
	return l
}

// lock locks the principal's shard and returns it with the principal's buckets, their limits
// resolved in a (again when a changed since).
func (l *limiter) lock(a *auth.State, principal string, now int64) (*limiterShard, *principalBuckets) {
	sh := &l.shards[maphash.String(l.seed, principal)%limiterShards]
	sh.mu.Lock()
	pb := sh.by[principal]
	if pb == nil {
		if len(sh.by) >= maxTrackedPerShard {
			sh.sweepLocked(now)
		}
		pb = &principalBuckets{}
		sh.by[principal] = pb
	}
	if pb.of != a {
		pb.of, pb.lim = a, a.LimitOf(principal)
	}
	return sh, pb
}

// sweepLocked drops the principals with full buckets and no stream (mu held).
func (sh *limiterShard) sweepLocked(now int64) {
	for p, pb := range sh.by { // any order: each is dropped or kept on its own
		if pb.streams == 0 && pb.calls.full(now, pb.lim.CallsPerSec) && pb.keys.full(now, pb.lim.KeysPerSec) {
			delete(sh.by, p)
		}
	}
}

// Throttle charges one call with request req (nil for a stream) by caller c to c's buckets on this
// member, and refuses it (a *RateLimitedError) when one of them is empty. A call with no principal
// (a member as itself) is never limited, nor is any call while no limit is set.
func (s *Service) Throttle(c Caller, req proto.Message) error {
	a := s.st.Auth()
	if c.Principal == "" || !a.HasLimits() {
		return nil
	}
	now := s.cfg.Now().UnixNano()
	sh, pb := s.limits.lock(a, c.Principal, now)
	defer sh.mu.Unlock()
	lim := pb.lim
	if lim.CallsPerSec == 0 && lim.KeysPerSec == 0 {
		return nil
	}
	// Both buckets are checked before either is charged, so a refused call costs nothing.
	keys := float64(s.callKeys(req))
	if lim.CallsPerSec > 0 {
		if wait := pb.calls.short(now, lim.CallsPerSec, 1); wait > 0 {
			s.m.rateLimited.WithLabelValues("calls").Inc()
			return &RateLimitedError{Principal: c.Principal, Limit: "calls", Rate: lim.CallsPerSec, RetryAfter: wait}
		}
	}
	if lim.KeysPerSec > 0 {
		if wait := pb.keys.short(now, lim.KeysPerSec, keys); wait > 0 {
			s.m.rateLimited.WithLabelValues("keys").Inc()
			return &RateLimitedError{Principal: c.Principal, Limit: "keys", Rate: lim.KeysPerSec, RetryAfter: wait}
		}
		pb.keys.tokens -= keys
	}
	if lim.CallsPerSec > 0 {
		pb.calls.tokens--
	}
	return nil
}

// OpenStream counts a watch stream of caller c as open on this member, and refuses it (a
// *RateLimitedError) when c has its limit of streams open already; release, called once when the
// stream ends, counts it closed. A caller with no principal is never limited.
func (s *Service) OpenStream(c Caller) (release func(), err error) {
	a := s.st.Auth()
	if c.Principal == "" || !a.HasLimits() {
		return func() {}, nil
	}
	now := s.cfg.Now().UnixNano()
	sh, pb := s.limits.lock(a, c.Principal, now)
	defer sh.mu.Unlock()
	if n := pb.lim.Streams; n > 0 && pb.streams >= n {
		s.m.rateLimited.WithLabelValues("streams").Inc()
		return nil, &RateLimitedError{Principal: c.Principal, Limit: "streams", Rate: n, RetryAfter: streamRetryAfter}
	}
	pb.streams++
	var once sync.Once
	return func() {
		once.Do(func() {
			sh.mu.Lock()
			defer sh.mu.Unlock()
			pb.streams-- // pb stays in its shard while it holds a stream (sweepLocked)
		})
	}, nil
}

// callKeys is what a call with request req costs the keys bucket: a listing's page its limit
// (defaultScanPage when 0) and a pattern's page the keys it may examine (Config.ScanExamine), or
// the tenant's objects when it has more (every page walks them all: Store.ScanKeys); any other
// request the length of its first repeated field (a batch's items or keys); and at least 1.
func (s *Service) callKeys(req proto.Message) int {
	switch r := req.(type) {
	case nil:
		return 1
	case *metadv1.ListObjectKeysRequest:
		page := int(r.GetLimit())
		if page == 0 {
			page = defaultScanPage
		}
		return max(page, s.walked(r.GetTenant()))
	case *metadv1.GetByRegexRequest, *metadv1.RemoveByRegexRequest:
		return max(s.cfg.ScanExamine, s.walked(req.(interface{ GetTenant() string }).GetTenant()))
	}
	m := req.ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		if f := fields.Get(i); f.IsList() {
			return max(1, m.Get(f).List().Len())
		}
	}
	return 1
}

// walked is the objects a page of a scan of tenant (as the request names it) walks: the
// tenant's live objects, 0 when there is no such tenant.
func (s *Service) walked(tenant string) int {
	t, ok := s.st.Store().Tenant(store.NormalizeTenant(tenant))
	if !ok {
		return 0
	}
	return int(t.Objects)
}

// SetLimit sets (every limit 0: removes) the rate limits of a principal, a role or every
// principal (auth.AnyRole), through the log. A role is taken in any form ParseRole reads and
// recorded in its canonical one.
func (s *Service) SetLimit(ctx context.Context, req *metadv1.SetLimitRequest) (*metadv1.SetLimitResponse, error) {
	l := req.GetLimit()
	t, err := auth.ValidateLimit(l.GetPrincipal(), l.GetRole(), auth.Limit{CallsPerSec: l.GetCallsPerSec(),
		KeysPerSec: l.GetKeysPerSec(), Streams: l.GetStreams()})
	if err != nil {
		return nil, fail(badf("limit", "%s", msgOf(err)), "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	cmd := &metadv1.Command{Op: &metadv1.Command_SetLimit{SetLimit: &metadv1.SetLimit{Principal: t.Principal, Role: t.Role,
		CallsPerSec: l.GetCallsPerSec(), KeysPerSec: l.GetKeysPerSec(), Streams: l.GetStreams()}}}
	if _, err := s.propose(ctx, cmd, "", nil); err != nil {
		return nil, err
	}
	return &metadv1.SetLimitResponse{}, nil
}

// ListLimits lists every limit record (principals' by name, then roles') and, for a principal
// named in the request, the limits that apply to it.
func (s *Service) ListLimits(ctx context.Context, req *metadv1.ListLimitsRequest) (*metadv1.ListLimitsResponse, error) {
	if p := req.GetPrincipal(); p != "" {
		if err := auth.ValidatePrincipal(p); err != nil {
			return nil, fail(badf("principal", "%s", msgOf(err)), "", nil)
		}
	}
	if _, _, err := s.readState(ctx, req.GetStale()); err != nil {
		return nil, err
	}
	a := s.st.Auth()
	out := &metadv1.ListLimitsResponse{}
	for _, e := range a.Limits() {
		out.Limits = append(out.Limits, limitTo(e.Target, e.Limit))
	}
	if p := req.GetPrincipal(); p != "" {
		out.Effective = limitTo(auth.LimitTarget{Principal: p}, a.LimitOf(p))
	}
	return out, nil
}

func limitTo(t auth.LimitTarget, l auth.Limit) *metadv1.Limit {
	return &metadv1.Limit{Principal: t.Principal, Role: t.Role, CallsPerSec: l.CallsPerSec, KeysPerSec: l.KeysPerSec, Streams: l.Streams}
}
