package evict

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"metad/store"
)

// TestFailedPlacementRoundOutlivesNotItsCause: a memory round that a failed placement asked for
// (store.EvictionWanted) does not run once memory has been freed since the failure. Here the
// tenant's objects are removed after a put found no room and fresh objects fill a third of the
// tier: the tier is far below its watermark, the put that failed no longer waits, and none of the
// fresh objects may be evicted. With nothing freed, the round runs as before.
func TestFailedPlacementRoundOutlivesNotItsCause(t *testing.T) {
	fill := func(x *fixture) {
		for i := range slots {
			x.put(key(i))
		}
		_, err := x.s.PutStart(t0, 1, store.PutStartRequest{Client: client, Key: "big", Size: slot, Config: store.ReplicaConfig{Memory: 1}})
		if !errors.Is(err, store.ErrNoAvailableHandle) {
			t.Fatalf("PutStart on a full tier: %v, want NO_AVAILABLE_HANDLE", err)
		}
	}
	ctx := context.Background()

	x := newFixture(t, nil)
	fill(x)
	for i := range slots {
		if err := x.s.Remove(t0, "", key(i), true); err != nil {
			t.Fatal(err)
		}
	}
	for i := range slots / 3 {
		x.put(fmt.Sprintf("fresh-%02d", i))
	}
	x.clock.Store(t0 + int64(time.Hour)) // every lease long expired: all of them evictable
	x.ev.step(ctx)
	if got := len(x.keys("")); got != slots/3 {
		t.Fatalf("%d of %d fresh objects left at a third of the tier; want none evicted for a put that no longer waits", got, slots/3)
	}
	x.ev.step(ctx)
	if got := len(x.keys("")); got != slots/3 {
		t.Fatalf("%d of %d fresh objects left after a second step", got, slots/3)
	}

	x = newFixture(t, nil)
	fill(x)
	x.clock.Store(t0 + int64(time.Hour))
	x.ev.step(ctx)
	if got := len(x.keys("")); got >= slots {
		t.Fatalf("%d of %d objects left: the round the failed placement asked for did not run", got, slots)
	}
}
