package service

import (
	"context"
	"math"
	"strings"
	"time"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// The arena keeper: the leader's loop that keeps its pool stocked and its arenas tidy. Every
// quarter lease it
//   - starts the table afresh when this node starts leading in a new term (and empties it when it
//     stops), and confirms leadership once (a read-barrier round) so that the lease stays held
//     while the node leads;
//   - brings the pool in line with the state: segments mounted, closing or gone, and this term's
//     arenas' free bytes (an arena that left the state takes its bytes out of the pool);
//   - drops reservations older than the fence (put_release_timeout), as the reaper revokes a
//     write that stayed PROCESSING that long;
//   - retires the arenas of earlier terms once the fence has passed since this node became ready;
//   - asks for an arena on every open segment whose pool bytes fell below half an arena, sized
//     by the bytes puts asked of the pool in recent rounds (arenaSize).
//
// Until a PutStart reaches the leader in a term, it only starts the table and retires old arenas:
// a leader that takes no puts confirms no lease and holds no arena.

// runKeeper runs the keeper until ctx ends.
func (r *reservations) runKeeper(ctx context.Context) {
	every := max(r.s.b.LeaseDuration()/4, 5*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		r.keep(ctx, every)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// keep is one round of the keeper.
func (r *reservations) keep(ctx context.Context, every time.Duration) {
	now := r.s.cfg.Now()
	st := r.s.b.Status()
	r.lock()
	if r.term == 0 || st.Role != ha.RoleLeader || st.Term != r.term {
		r.mu.Unlock()
		return
	}
	term, demand := r.term, r.demand
	r.mu.Unlock()
	r.retireOld(ctx, term, now)
	if !demand {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, max(every, r.s.b.LeaseDuration()))
	err := r.s.b.ReadBarrier(rctx) // ready, and the lease renewed
	cancel()
	if err != nil || r.s.b.LeaseTerm() != term {
		return
	}
	state := r.s.state()
	r.lock()
	if r.term != term {
		r.mu.Unlock()
		return
	}
	r.reconcileLocked(state, term)
	r.reapLocked(now)
	specs := r.planLocked(state, now)
	r.mu.Unlock()
	r.publish(state)
	if len(specs) > 0 {
		res, ok := r.propose(ctx, &metadv1.Command{Op: &metadv1.Command_ArenaGrant{ArenaGrant: &metadv1.ArenaGrant{Term: term, Arenas: specs}}})
		if ok {
			r.m.grants.Add(float64(res.Count))
		}
		r.lock()
		if r.term == term {
			r.reconcileLocked(r.s.state(), term)
			for _, sp := range specs { // a segment still short of arena bytes had no room for one
				id := wire.ID16(sp.SegmentId)
				if info, found := r.pool.Get(id); !found || info.Size-info.Used < sp.Size/refillBelow {
					r.failedAt[id] = now
				}
			}
		}
		r.mu.Unlock()
	}
}

// retireOld retires the arenas of other terms (earlier ones, or ones a restored snapshot brought)
// once the fence has passed since this node started leading in term, or since the restore (the
// table's readyAt).
func (r *reservations) retireOld(ctx context.Context, term uint64, now time.Time) {
	r.lock()
	due := r.term == term && now.Sub(r.readyAt) >= r.s.cfg.ArenaFence+r.s.b.LeaseDuration()
	r.mu.Unlock()
	if !due {
		return
	}
	var retire []uint64
	for _, a := range r.s.state().Arenas().List() {
		if a.Term != term { // an earlier term's, or one a restored snapshot brought
			retire = append(retire, a.ID)
		}
	}
	if len(retire) == 0 {
		return
	}
	if res, ok := r.propose(ctx, &metadv1.Command{Op: &metadv1.Command_ArenaRetire{ArenaRetire: &metadv1.ArenaRetire{ArenaIds: retire}}}); ok {
		r.m.retires.Add(float64(res.Count))
	}
}

// propose commits one of the keeper's commands, bounded by the background timeout.
func (r *reservations) propose(ctx context.Context, cmd *metadv1.Command) (store.Result, bool) {
	pctx, cancel := context.WithTimeout(ctx, r.s.cfg.BackgroundTimeout)
	defer cancel()
	res, err := r.s.b.Propose(pctx, cmd)
	if err != nil {
		r.s.log.Debug("arena keeper proposal failed", "err", err)
		return res, false
	}
	return res, true
}

// reconcileLocked brings the pool in line with the state (mu held): every mounted segment is in
// the pool, all of it reserved except the free bytes of this term's arenas that no reservation
// holds; a closing segment takes no reservation; a segment gone leaves the pool, and the bytes of
// an arena that left the state leave it too.
func (r *reservations) reconcileLocked(state *store.Store, term uint64) {
	segs := state.Segments().List()
	inState := make(map[alloc.ID]struct{}, len(segs))
	for _, info := range segs {
		inState[info.ID] = struct{}{}
		p, ok := r.pool.Get(info.ID)
		if ok && p.Segment != info.Segment {
			_, _ = r.pool.Unmount(info.ID) // unmounted and mounted again with another shape
			ok = false
		}
		if !ok {
			if _, err := r.pool.MountRecorded(info.Segment); err != nil {
				continue
			}
			_ = r.pool.Reserve(alloc.Extent{Segment: info.ID, Offset: 0, Size: info.Size})
		}
		_ = r.pool.SetClosing(info.ID, info.Closing)
	}
	for _, p := range r.pool.List() {
		if _, ok := inState[p.ID]; !ok {
			_, _ = r.pool.Unmount(p.ID)
		}
	}
	arenas := state.Arenas().List()
	live := make(map[uint64]struct{}, len(arenas))
	for _, a := range arenas {
		if a.Term != term {
			continue
		}
		live[a.ID] = struct{}{}
		if _, ok := r.known[a.ID]; ok {
			continue
		}
		for _, sp := range a.Free {
			_ = r.pool.Free(alloc.Extent{Segment: a.Segment, Offset: sp.Offset, Size: sp.Size})
		}
		r.known[a.ID] = arenaSpan{a.Segment, a.Offset, a.Size}
	}
	for id, sp := range r.known {
		if _, ok := live[id]; !ok {
			r.withdrawLocked(sp)
			delete(r.known, id)
		}
	}
}

// arenaSpan is where one of this term's arenas lies.
type arenaSpan struct {
	seg          alloc.ID
	offset, size uint64
}

// withdrawLocked takes the pool's free bytes inside an arena that left the state out of the pool
// (mu held); reservations already in it keep their ranges, and their commits meet
// RESERVATION_LOST.
func (r *reservations) withdrawLocked(a arenaSpan) {
	spans, ok := r.pool.FreeSpans(a.seg)
	if !ok {
		return
	}
	end := a.offset + a.size
	for _, sp := range spans {
		lo, hi := max(sp.Offset, a.offset), min(sp.Offset+sp.Size, end)
		if lo < hi {
			_ = r.pool.Reserve(alloc.Extent{Segment: a.seg, Offset: lo, Size: hi - lo})
		}
	}
}

// reapLocked drops the reservations older than the fence (mu held): a write is not expected to
// take longer (put_release_timeout). One whose commit is in flight or unknown only gives back its
// quota: its bytes may be the object's.
func (r *reservations) reapLocked(now time.Time) {
	limit := now.UnixNano() - int64(r.s.cfg.ArenaFence)
	for rk, res := range r.byKey { // each reservation on its own: order does not matter
		if res.start >= limit {
			continue
		}
		if res.committing {
			r.releaseLocked(rk, res)
		} else {
			r.dropLocked(rk, res)
		}
		r.m.reaped.Inc()
	}
}

// planLocked lists the arenas to ask for (mu held). It first takes the demand asked since the
// last round into the estimate of a round's demand per tier, which it spreads evenly over the
// tier's open segments (placement spreads puts over them).
func (r *reservations) planLocked(state *store.Store, now time.Time) (specs []*metadv1.ArenaSpec) {
	for t, b := range r.asked {
		r.roundAsked[t] = max(float64(b), r.roundAsked[t]*demandDecay)
		r.asked[t] = 0
	}
	segs := state.Segments().List()
	var open [alloc.NumTiers]int
	for _, info := range segs {
		if !info.Closing && store.ArenaTier(info.Tier) {
			open[info.Tier]++
		}
	}
	for _, info := range segs {
		if info.Closing || !store.ArenaTier(info.Tier) || now.Sub(r.failedAt[info.ID]) < time.Second {
			continue
		}
		size := r.arenaSize(info.Size, r.roundAsked[info.Tier]/float64(max(open[info.Tier], 1)))
		if size == 0 {
			continue
		}
		p, ok := r.pool.Get(info.ID)
		if !ok || p.Size-p.Used >= size/refillBelow {
			continue
		}
		specs = append(specs, &metadv1.ArenaSpec{SegmentId: info.ID[:], Size: size})
	}
	return specs
}

// arenaSize is the arena to ask for on a segment of segSize bytes that puts ask demand bytes of in
// a keeper round: room for arenaObjects replicas of the recent size or arenaRounds rounds of the
// demand, whichever is more, at least arenaMinBytes, at most 1/arenaShare of the segment; 0 when
// that share is less than one aligned block.
func (r *reservations) arenaSize(segSize uint64, demand float64) uint64 {
	want := uint64(math.Min(max(r.sizeAvg*arenaObjects, demand*arenaRounds), float64(uint64(1)<<40)))
	size := min(max(want, arenaMinBytes), segSize/arenaShare)
	return size &^ (alloc.Align - 1)
}

// publish sets the arena gauges from the state.
func (r *reservations) publish(state *store.Store) {
	for _, t := range alloc.Tiers {
		if store.ArenaTier(t) {
			r.m.arenaFree.WithLabelValues(strings.ToLower(t.String())).Set(float64(state.Arenas().FreeBytes(t)))
		}
	}
}
