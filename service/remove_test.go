package service

import (
	"context"
	"fmt"
	"testing"

	"metad/ha"
	"metad/store"
)

// TestNoEntryCountsAuthRefusals: the service settles a removal's marks (ha.ProposeMarked with
// noEntry) after Raft's failures that left no entry and after an auth refusal at apply that the
// recheck upheld, and keeps them while the outcome is unknown.
func TestNoEntryCountsAuthRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"not the leader", &ha.NotLeaderError{}, true},
		{"shutting down", ha.ErrShutdown, true},
		{"not taken within the apply timeout", fmt.Errorf("%w: enqueue", ha.ErrTimeout), true},
		{"key revoked, checked again", fmt.Errorf("%w: API key k refused", ErrUnauthenticated), true},
		{"role revoked, checked again", &Error{Err: fmt.Errorf("%w: lacks the admin role", ErrPermissionDenied)}, true},
		{"leadership lost in flight", fmt.Errorf("%w: lost", ha.ErrUnknown), false},
		{"the caller stopped waiting", context.Canceled, false},
		{"a rejection", &store.Error{Reason: store.ObjectNotFound}, false},
	} {
		if got := noEntry(tc.err); got != tc.want {
			t.Errorf("%s: noEntry(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
