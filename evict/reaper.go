package evict

import (
	"context"
	"fmt"

	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// reap is the reaper (SEMANTICS section 4): it finds, with a lock-free census, the writes that have
// stayed PROCESSING longer than PutReleaseTimeout since their PutStart, and the copies and moves
// (store.ReplicaTask) older than it since their start, and proposes RevokeExpired
// with their tokens (object id and version) in batches, each on a slot taken without waiting. Apply
// revokes a token only if the object is still that exact state, so a write that completed or was
// revoked meanwhile is left alone; leases and marks play no part. It returns the writes revoked.
// It then proposes RevokeExpired with the ids of the scheduled tasks PROCESSING longer than
// PutReleaseTimeout since their fetch (their worker died), which apply ends FAILED if they are
// still so at the entry's leader time.
func (e *Evictor) reap(ctx context.Context, s *store.Store) (int, error) {
	now, limit := e.now(), int64(e.cfg.PutReleaseTimeout)
	var toks []store.ObjectToken
	s.VisitHandles(e.cfg.CensusChunk, func(hs []store.ObjectHandle) bool {
		for _, h := range hs {
			st := h.State()
			if st == nil || h.Life() != store.Active {
				continue
			}
			if since, ok := st.PendingSince(); !ok || now-since <= limit {
				continue
			}
			toks = append(toks, member{h: h, st: st}.token())
		}
		return true
	})
	revoked := 0
	defer func() { e.m.reaped.Add(float64(revoked)) }()
	for len(toks) > 0 {
		n := min(len(toks), e.cfg.BatchSize)
		slot, ok := e.node.TryReserve()
		if !ok {
			if !e.node.IsLeader() {
				return revoked, ErrNotLeader
			}
			return revoked, ErrNoSlot
		}
		cmd := &metadv1.Command{Op: &metadv1.Command_RevokeExpired{RevokeExpired: &metadv1.RevokeExpired{Tokens: tokensTo(toks[:n]), StateEpoch: s.Epoch()}}}
		res, err := slot.Propose(ctx, cmd)
		if err != nil {
			return revoked, fmt.Errorf("evict: propose RevokeExpired of %d writes: %w", n, err)
		}
		if res.Reason != store.OK {
			return revoked, fmt.Errorf("%w: %s: %s", ErrRejected, res.Reason, res.Message)
		}
		revoked += res.Count
		toks = toks[n:]
	}
	return revoked, e.expireTasks(ctx, s, now, limit)
}

// expireTasks proposes RevokeExpired with the ids of the tasks PROCESSING longer than limit at now
// since their fetch, in batches of BatchSize, each on a slot taken without waiting.
func (e *Evictor) expireTasks(ctx context.Context, s *store.Store, now, limit int64) error {
	ids := s.Tasks().Expired(now, limit)
	for len(ids) > 0 {
		n := min(len(ids), e.cfg.BatchSize)
		slot, ok := e.node.TryReserve()
		if !ok {
			if !e.node.IsLeader() {
				return ErrNotLeader
			}
			return ErrNoSlot
		}
		cmd := &metadv1.Command{Op: &metadv1.Command_RevokeExpired{RevokeExpired: &metadv1.RevokeExpired{
			TaskIds: ids[:n], TaskTimeoutNs: limit, StateEpoch: s.Epoch()}}}
		res, err := slot.Propose(ctx, cmd)
		if err != nil {
			return fmt.Errorf("evict: propose RevokeExpired of %d tasks: %w", n, err)
		}
		if res.Reason != store.OK {
			return fmt.Errorf("%w: %s: %s", ErrRejected, res.Reason, res.Message)
		}
		e.m.expiredTasks.Add(float64(len(res.Tasks)))
		ids = ids[n:]
	}
	return nil
}
