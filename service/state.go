package service

import (
	"context"
	"errors"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// Answers from the leader's state. A request that the leader can refuse from its own applied state
// is refused without a log entry (SEMANTICS section 8), and a removal is prepared against that
// state before it is proposed. Both read the state, so both follow the rules of a read:
//
//   - The leader decides nothing from its state before it is ready (Backend.LeaderReady: its
//     term-start barrier applied, so the state holds everything committed before its term); a
//     request that arrives earlier waits for it.
//   - A check that lets the request through needs nothing more: the command goes through the log,
//     and apply, the authority, decides again.
//   - An answer given without going through the log (a refusal, or a batch or RemoveAll with
//     nothing left to propose) is a linearizable read: before it is given the leader confirms its
//     leadership and catches up with everything committed so far (Backend.ReadBarrier), then checks
//     again and answers from that state, or goes on to propose if the check now passes. A deposed
//     leader that still believes it leads answers NOT_LEADER instead of a stale refusal. Refusals
//     are rare, so the extra heartbeat round costs little.

// fromState runs check on the leader's state, following the rules above. check reports whether
// there is anything to propose; a *store.Error from it is a refusal (nothing to propose), and any
// other error a failure that is returned as it is. It may run twice (on the store current each
// time), so it must set everything the caller uses afresh on every run. fromState returns what the
// last run of check returned, or the error of the readiness wait or of the barrier.
func (s *Service) fromState(ctx context.Context, check func(st *store.Store) (propose bool, err error)) (bool, error) {
	if err := s.b.LeaderReady(ctx); err != nil {
		return false, err
	}
	propose, err := check(s.state())
	var se *store.Error
	if propose || (err != nil && !errors.As(err, &se)) {
		return propose, err
	}
	if err := s.b.ReadBarrier(ctx); err != nil {
		return false, err
	}
	return check(s.state())
}

// proposeChecked proposes cmd unless the leader's state refuses it (fsm.Check), in which case it
// returns the refusal as the result apply would have given, without a log entry. A request whose
// session already applied it is answered with the kept result instead (session.go), without a
// log entry either.
func (s *Service) proposeChecked(ctx context.Context, cmd *metadv1.Command) (store.Result, error) {
	cmd = stamped(ctx, cmd)
	var refusal store.Result
	propose, err := s.fromState(ctx, func(st *store.Store) (bool, error) {
		if r, ok := s.answered(ctx); ok {
			refusal = r
			return false, nil
		}
		var refused bool
		refusal, refused = fsm.Check(st, s.st.Auth(), cmd)
		if r, ok := s.answered(ctx); refused && ok { // its first attempt applied meanwhile
			refusal = r
		}
		return !refused, nil
	})
	if err != nil {
		return store.Result{}, err
	}
	if !propose {
		return refusal, nil
	}
	return s.proposeAuthed(ctx, cmd)
}
