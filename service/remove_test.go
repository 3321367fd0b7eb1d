package service

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"metad/ha"
	"metad/store"
)

// TestProposeMarkedSettlesByOutcome: the marks are cleared when the outcome is known (a result, or
// a failure that left no entry) and kept when it is not; a caller that stops waiting gets
// ErrUnknown, and the marks still settle when the proposal's outcome arrives.
func TestProposeMarkedSettlesByOutcome(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		unmarks bool
	}{
		{"applied", nil, true},
		{"not the leader", &ha.NotLeaderError{}, true},
		{"shutting down", ha.ErrShutdown, true},
		{"not taken within the apply timeout", fmt.Errorf("%w: enqueue", ha.ErrTimeout), true},
		{"leadership lost in flight", fmt.Errorf("%w: lost", ha.ErrUnknown), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var unmarked atomic.Bool
			_, err := ProposeMarked(context.Background(), func(context.Context) (store.Result, error) {
				return store.Result{}, tc.err
			}, func() { unmarked.Store(true) })
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if unmarked.Load() != tc.unmarks {
				t.Fatalf("unmarked %v, want %v", unmarked.Load(), tc.unmarks)
			}
		})
	}

	t.Run("caller stops waiting", func(t *testing.T) {
		release := make(chan struct{})
		unmarked := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		var proposeCtxErr atomic.Value
		entered := make(chan struct{})
		go func() { <-entered; cancel() }() // the caller gives up while the proposal is in flight
		_, err := ProposeMarked(ctx, func(pctx context.Context) (store.Result, error) {
			close(entered)
			<-release
			proposeCtxErr.Store(fmt.Sprint(pctx.Err()))
			return store.Result{}, nil
		}, func() { close(unmarked) })
		if !errors.Is(err, ha.ErrUnknown) || !errors.Is(err, context.Canceled) {
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
