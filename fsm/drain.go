package fsm

import (
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/wire"
)

// applyStartDrain starts a drain job; its result's Drain is the job.
func applyStartDrain(s *store.Store, e env, c *metadv1.Command) store.Result {
	id, err := s.StartDrain(e.now, wire.DrainSpecFrom(c.GetStartDrain()))
	if err != nil {
		return fromErr(err)
	}
	return drainResult(s, id)
}

// applyCancelDrain cancels a running drain job; its result's Drain is the job.
func applyCancelDrain(s *store.Store, e env, c *metadv1.Command) store.Result {
	j, err := s.CancelDrain(e.now, c.GetCancelDrain().GetDrainId())
	if err != nil {
		return fromErr(err)
	}
	return store.Result{Drain: &j}
}

func drainResult(s *store.Store, id uint64) store.Result {
	j, err := s.DrainJob(id)
	if err != nil {
		panic("fsm: a drain job this entry changed is not kept: " + err.Error())
	}
	return store.Result{Drain: &j}
}

// applyScheduleDrainMoves creates the moves of a drain job; one item per move, whose Tasks holds
// the task created.
func applyScheduleDrainMoves(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetScheduleDrainMoves()
	ids, errs, err := s.ScheduleDrainMoves(e.now, m.GetDrainId(), wire.DrainMovesFrom(m))
	if err != nil {
		return fromErr(err)
	}
	r := store.Result{Items: make([]store.Result, len(ids))}
	for i := range ids {
		if errs[i] != nil {
			r.Items[i] = fromErr(errs[i])
			continue
		}
		r.Count++
	}
	return r
}

// applyFinishDrain marks a drain job done.
func applyFinishDrain(s *store.Store, e env, c *metadv1.Command) store.Result {
	return fromErr(s.FinishDrain(e.now, c.GetFinishDrain().GetDrainId()))
}
