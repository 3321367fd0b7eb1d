package ha

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"metad/fsm"
)

// TestProposeMarkedSettlesByOutcome: the marks are cleared when the outcome is known (a result, or
// a failure that left no entry: NoEntry, or the caller's predicate) and kept when it is not; a
// caller that stops waiting gets ErrUnknown, and the marks still settle when the proposal's outcome
// arrives.
func TestProposeMarkedSettlesByOutcome(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		unmarks bool
	}{
		{"applied", nil, true},
		{"not the leader", &NotLeaderError{}, true},
		{"shutting down", ErrShutdown, true},
		{"not taken within the apply timeout", fmt.Errorf("%w: enqueue", ErrTimeout), true},
		{"leadership lost in flight", fmt.Errorf("%w: lost", ErrUnknown), false},
		{"the caller stopped waiting", fmt.Errorf("%w: %w", ErrUnknown, context.Canceled), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var unmarked atomic.Bool
			_, err := ProposeMarked(context.Background(), func(context.Context) (fsm.Result, error) {
				return fsm.Result{}, tc.err
			}, NoEntry, func() { unmarked.Store(true) })
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if unmarked.Load() != tc.unmarks {
				t.Fatalf("unmarked %v, want %v", unmarked.Load(), tc.unmarks)
			}
		})
	}

	t.Run("a refusal the caller's predicate counts", func(t *testing.T) {
		refused := errors.New("refused at apply, nothing changed")
		noEntry := func(err error) bool { return NoEntry(err) || errors.Is(err, refused) }
		for _, err := range []error{fmt.Errorf("checked again: %w", refused), ErrShutdown} {
			unmarked := false
			_, got := ProposeMarked(context.Background(), func(context.Context) (fsm.Result, error) {
				return fsm.Result{}, err
			}, noEntry, func() { unmarked = true })
			if got != err || !unmarked {
				t.Fatalf("%v: err %v, unmarked %v; want the error and the marks cleared", err, got, unmarked)
			}
		}
		unmarked := false
		_, _ = ProposeMarked(context.Background(), func(context.Context) (fsm.Result, error) {
			return fsm.Result{}, refused
		}, NoEntry, func() { unmarked = true })
		if unmarked {
			t.Fatal("marks cleared for a failure that NoEntry alone does not count")
		}
	})

	t.Run("caller stops waiting", func(t *testing.T) {
		release := make(chan struct{})
		unmarked := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		var proposeCtxErr atomic.Value
		entered := make(chan struct{})
		go func() { <-entered; cancel() }() // the caller gives up while the proposal is in flight
		_, err := ProposeMarked(ctx, func(pctx context.Context) (fsm.Result, error) {
			close(entered)
			<-release
			proposeCtxErr.Store(fmt.Sprint(pctx.Err()))
			return fsm.Result{}, nil
		}, NoEntry, func() { close(unmarked) })
		if !errors.Is(err, ErrUnknown) || !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want ErrUnknown and Canceled", err)
		}
		select {
		case <-unmarked:
			t.Fatal("marks cleared before the outcome was known")
		default:
		}
		close(release)
		select {
		case <-unmarked:
		case <-time.After(10 * time.Second):
			t.Fatal("marks not cleared once the outcome was known")
		}
		if got := proposeCtxErr.Load(); got != "<nil>" {
			t.Fatalf("the proposal's context ended with the caller's: %v", got)
		}
	})
}
