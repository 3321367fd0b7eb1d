package kvfeed

import (
	"fmt"
	"strings"
	"testing"

	"metad/store"
	"metad/store/alloc"
	"metad/watch"
)

// TestEventsOfEachWatchEvent: what each kind of watch event sends, by the media of the object's
// COMPLETE replicas before and after.
func TestEventsOfEachWatchEvent(t *testing.T) {
	state := func(reps ...store.Replica) *store.ObjectState { return &store.ObjectState{Replicas: reps} }
	mem := store.Replica{ID: 1, Tier: alloc.TierMemory, Status: store.Complete}
	mem2 := store.Replica{ID: 3, Tier: alloc.TierMemory, Status: store.Complete}
	nof := store.Replica{ID: 2, Tier: alloc.TierNOF, Status: store.Complete}
	nofWriting := store.Replica{ID: 2, Tier: alloc.TierNOF, Status: store.Processing}
	for _, tc := range []struct {
		name          string
		kind          watch.Kind
		before, after *store.ObjectState
		want          string
	}{
		{"stored on memory", watch.Stored, nil, state(mem), "stored cpu"},
		{"stored on both", watch.Stored, state(nofWriting), state(nof, mem), "stored cpu, stored disk"},
		{"stored, a NOF replica still being written", watch.Stored, nil, state(mem, nofWriting), "stored cpu"},
		{"a NOF replica added", watch.Changed, state(mem, nofWriting), state(mem, nof), "stored disk"},
		{"a second memory replica", watch.Changed, state(mem), state(mem, mem2), ""},
		{"the memory replica evicted, NOF left", watch.Changed, state(mem, nof), state(nof), ""},
		{"removed from memory", watch.Removed, state(mem), nil, "removed cpu"},
		{"removed from both", watch.Removed, state(mem, nof), nil, "removed cpu"},
		{"removed from NOF", watch.Removed, state(nof, store.Replica{ID: 3, Tier: alloc.TierMemory, Status: store.Processing}), nil, "removed disk"},
		{"evicted from NOF", watch.Evicted, state(nof), state(), "removed disk"},
		{"evicted from memory", watch.Evicted, state(mem), state(), "removed cpu"},
	} {
		e := watch.Event{Kind: tc.kind, Change: store.Change{Tenant: "t", Key: "k", Group: "g", Before: tc.before, After: tc.after}}
		var got []string
		for _, ev := range appendEvents(nil, &e) {
			if ev.Tenant != "t" || ev.Key != "k" || ev.Group != "g" {
				t.Fatalf("%s: %+v", tc.name, ev)
			}
			got = append(got, fmt.Sprintf("%s %s", map[bool]string{true: "stored", false: "removed"}[ev.Stored], ev.Medium))
		}
		if strings.Join(got, ", ") != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, strings.Join(got, ", "), tc.want)
		}
	}
}
