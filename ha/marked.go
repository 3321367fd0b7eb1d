package ha

import (
	"context"
	"errors"
	"fmt"

	"metad/fsm"
)

// ProposeMarked proposes a command that removes objects the leader marked while checking them (the
// service's four removal kinds, eviction's Evict), and settles the marks by the command's outcome,
// whenever that becomes known, through unmark (which clears them all: the marks of objects the
// command erased went with them).
//
//   - A result (applied, or refused whole or in part) or a failure that left no log entry
//     (noEntry(err) holds): the outcome is known, unmark runs.
//   - A failure whose outcome is unknown (leadership lost with the entry in flight):
//     the marks stay, so that no read on this leader leases an object the entry may still erase;
//     this node no longer leads that term, and the next term's store.ResetSoftState clears them.
//   - ctx ends first: ProposeMarked returns ErrUnknown with ctx's error, and the proposal goes
//     on; its marks settle as above when its outcome is known.
//
// propose is called once, with a context that is not cancelled with ctx (the proposal's outcome is
// what settles the marks, so it must be waited for); it must return once the entry's outcome is
// known (Node.Propose and Slot.Propose do). noEntry says which of propose's failures certainly left
// no entry that could still commit: NoEntry, for a propose that is Raft's alone, or a caller's
// predicate that also counts its own refusals which changed nothing; it runs on the proposal's
// goroutine.
func ProposeMarked(ctx context.Context, propose func(context.Context) (fsm.Result, error), noEntry func(error) bool,
	unmark func()) (fsm.Result, error) {
	type outcome struct {
		res fsm.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := propose(context.WithoutCancel(ctx))
		if err == nil || noEntry(err) {
			unmark()
		}
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done():
		return fsm.Result{}, fmt.Errorf("%w: stopped waiting for the removal: %w", ErrUnknown, ctx.Err())
	}
}

// NoEntry reports whether a failed proposal certainly left no entry that could still commit: this
// node did not lead (ErrNotLeader), it is shutting down (ErrShutdown), Raft did not take the entry
// within the apply timeout (ErrTimeout), or the command needs a feature level a member lacks
// (ErrFeatureLevel: Propose proposed nothing). ErrUnknown, a context's error and every other error
// are not known to have left none.
func NoEntry(err error) bool {
	return errors.Is(err, ErrNotLeader) || errors.Is(err, ErrShutdown) || errors.Is(err, ErrTimeout) || errors.Is(err, ErrFeatureLevel)
}
