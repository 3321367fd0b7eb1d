package fsm

import (
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/wire"
)

// applyStartDrain starts a drain job; its result's Drain is the job.
func applyStartDrain(st *State, e env, spec store.DrainSpec) store.Result {
	s := st.store
	id, err := s.Drains().Start(e.now, spec)
	if err != nil {
		return fromErr(err)
	}
	return drainResult(s, id)
}

// applyCancelDrain cancels a running drain job; its result's Drain is the job.
func applyCancelDrain(st *State, e env, m *metadv1.CancelDrain) store.Result {
	j, err := st.store.Drains().Cancel(e.now, m.GetDrainId())
	if err != nil {
		return fromErr(err)
	}
	return store.Result{Drain: &j}
}

func drainResult(s *store.Store, id uint64) store.Result {
	j, err := s.Drains().Get(id)
	if err != nil {
		panic("fsm: a drain job this entry changed is not kept: " + err.Error())
	}
	return store.Result{Drain: &j}
}

// applyScheduleDrainMoves creates the moves of a drain job; one item per move, whose Tasks holds
// the task created.
func applyScheduleDrainMoves(st *State, e env, m *metadv1.ScheduleDrainMoves) store.Result {
	s := st.store
	ids, errs, err := s.Drains().ScheduleMoves(e.now, m.GetDrainId(), wire.DrainMovesFrom(m))
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
func applyFinishDrain(st *State, e env, m *metadv1.FinishDrain) store.Result {
	return fromErr(st.store.Drains().Finish(e.now, m.GetDrainId()))
}
