package service

import (
	"context"
	"slices"
	"sync"

	metadv1 "metad/proto/metadv1"
	"metad/store/alloc"
)

// Client liveness (SEMANTICS section 3). Clients Ping the leader; a client silent for ClientTTL is
// expired by the leader, which proposes the unmount of its segments (all but its DISK and DFS ones,
// which are the cluster's: store.Store.UnmountClient). The table below is leader
// soft state: it is never replicated. The known clients are the owners of mounted segments (which
// are replicated) plus whoever pinged; an owner the table has not seen yet starts its grace when the
// leader first sees it, and on gaining leadership every known client gets a fresh grace, so
// clients never have to remount after a failover.

// liveness is safe for concurrent use. It records when each client was last heard from.
type liveness struct {
	mu   sync.Mutex         // guards last; a leaf: nothing is acquired while it is held
	last map[alloc.ID]int64 // client -> Unix ns of its last Ping, or of the start of its grace
}

func newLiveness() *liveness { return &liveness{last: make(map[alloc.ID]int64)} }

// touch records a Ping.
func (l *liveness) touch(c alloc.ID, now int64) {
	l.mu.Lock()
	l.last[c] = max(l.last[c], now)
	l.mu.Unlock()
}

// leadershipChanged starts the table afresh: on gaining leadership every known client's grace
// starts now; on losing it the table is dropped (it is leader state).
func (l *liveness) leadershipChanged(leader bool, now int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !leader {
		clear(l.last)
		return
	}
	for c := range l.last {
		l.last[c] = now
	}
}

// expired returns the owners silent for ttl or longer, sorted. An owner not in the table starts
// its grace now; a client that owns nothing and has been silent for ttl is forgotten.
func (l *liveness) expired(owners []alloc.ID, now, ttl int64) []alloc.ID {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []alloc.ID
	isOwner := make(map[alloc.ID]struct{}, len(owners))
	for _, c := range owners {
		isOwner[c] = struct{}{}
		last, ok := l.last[c]
		if !ok {
			l.last[c] = now
			continue
		}
		if now-last >= ttl {
			out = append(out, c)
		}
	}
	for c, last := range l.last {
		if _, ok := isOwner[c]; !ok && now-last >= ttl {
			delete(l.last, c)
		}
	}
	slices.SortFunc(out, alloc.Compare)
	return out
}

// silentSince reports whether c has not been heard from since t (it may have pinged meanwhile).
func (l *liveness) silentSince(c alloc.ID, t int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	last, ok := l.last[c]
	return !ok || last <= t
}

// forget drops c if it has not been heard from after t.
func (l *liveness) forget(c alloc.ID, t int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.last[c]; ok && last <= t {
		delete(l.last, c)
	}
}

// owners returns the distinct owners of the mounted segments that a client's expiry unmounts (not
// the Shared ones: a client that mounted only a shared root or a DFS pool never expires).
func owners(segs []alloc.SegmentInfo) []alloc.ID {
	seen := make(map[alloc.ID]struct{})
	var out []alloc.ID
	for _, sg := range segs {
		if sg.Tier.Shared() {
			continue
		}
		if _, ok := seen[sg.Owner]; !ok {
			seen[sg.Owner] = struct{}{}
			out = append(out, sg.Owner)
		}
	}
	return out
}

// expireClients runs on the leader from Run's loop: every client silent for ClientTTL gets its
// segments unmounted by an UnmountSegment{reason CLIENT_EXPIRED} proposal. A failed proposal is
// retried on the next sweep (the client stays expired in the table).
func (s *Service) expireClients(ctx context.Context) {
	now := s.cfg.nowNano()
	due := s.live.expired(owners(s.state().Segments().List()), now, int64(s.cfg.ClientTTL))
	for _, c := range due {
		if ctx.Err() != nil || !s.b.IsLeader() {
			return
		}
		// A Ping may have arrived since the table was read: it wins.
		if !s.live.silentSince(c, now-int64(s.cfg.ClientTTL)) {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, s.cfg.BackgroundTimeout)
		res, err := s.b.Propose(pctx, &metadv1.Command{Op: &metadv1.Command_UnmountSegment{UnmountSegment: &metadv1.UnmountSegment{
			ClientId: c[:], Reason: metadv1.UnmountReason_UNMOUNT_REASON_CLIENT_EXPIRED}}})
		cancel()
		if err != nil {
			s.log.Warn("client expiry: proposal failed; retrying on the next sweep", "client", c.String(), "err", err)
			continue
		}
		s.live.forget(c, now-int64(s.cfg.ClientTTL))
		s.m.clientsExpired.Inc()
		s.log.Info("client expired: segments unmounted", "client", c.String(),
			"segments", res.Unmount.Segments, "replicas", res.Unmount.Replicas, "objects_erased", res.Unmount.Erased)
	}
}

// finishClosing runs on the leader from Run's loop: every segment whose graceful unmount is due
// (its deadline passed by this leader's clock, or it holds no replica any more) is unmounted by an
// UnmountClosed proposal naming the deadline read here; apply unmounts it only if that is still
// its deadline and the entry's leader time has reached it or the segment is empty. A deadline is
// replicated state, so a new leader finishes what the old one scheduled. A failed proposal, or one
// that changed nothing (this clock ahead of the entry's), is tried again on the next sweep.
func (s *Service) finishClosing(ctx context.Context) {
	now := s.cfg.nowNano()
	for _, sg := range s.state().Segments().List() {
		if sg.UnmountAt == 0 || (sg.UnmountAt > now && sg.Used != 0) {
			continue
		}
		if ctx.Err() != nil || !s.b.IsLeader() {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, s.cfg.BackgroundTimeout)
		res, err := s.b.Propose(pctx, &metadv1.Command{Op: &metadv1.Command_UnmountClosed{UnmountClosed: &metadv1.UnmountClosed{
			SegmentId: sg.ID[:], UnmountAtUnixNano: sg.UnmountAt}}})
		cancel()
		if err != nil {
			s.log.Warn("graceful unmount: proposal failed; retrying on the next sweep", "segment", sg.ID.String(), "err", err)
			continue
		}
		if res.Unmount.Segments > 0 {
			s.m.gracefulUnmounts.Inc()
			s.log.Info("graceful unmount ended: segment unmounted", "segment", sg.ID.String(), "owner", sg.Owner.String(),
				"replicas", res.Unmount.Replicas, "objects_erased", res.Unmount.Erased)
		}
	}
}
