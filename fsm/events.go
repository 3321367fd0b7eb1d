package fsm

import (
	"cmp"
	"slices"

	"metad/store"
	"metad/watch"
)

// The watch events. The store tells the FSM every change of an object's replicated state as it
// applies a command (store.ChangeSink); each change a reader can see is one event (watch.Of), and
// an entry's events, stamped with the entry's index and their order in it, go to the window when
// the entry has applied. Every member applies the same entries and so makes the same events at the
// same revisions. A restore empties the window (the events do not describe a replaced state).
//
// Within an entry the events are in order of tenant (segments, which belong to none, first, by
// id), then a tenant's new groups by name, its objects by key, its removed groups by name, and in
// apply order for one subject: a command over many objects (a tenant's removal, an unmount) visits
// them in an order that differs between members, and the order of its events must not.

// Window returns the window of this member's watch events.
func (f *FSM) Window() *watch.Window { return f.window }

// UseWindow replaces the window (one with other limits), before anyone subscribes to the old one;
// w's first events must follow the index the FSM has applied (0 before it applies anything).
func (f *FSM) UseWindow(w *watch.Window) { f.window = w }

// changed is the store's change sink (apply goroutine).
func (f *FSM) changed(c store.Change) {
	if k, ok := watch.Of(c, f.evicting); ok {
		f.pending = append(f.pending, watch.Event{Kind: k, Change: c})
	}
}

// publish stamps the events of the entry at index with their revisions and hands them to the
// window.
func (f *FSM) publish(index uint64) {
	if len(f.pending) > 1 {
		slices.SortStableFunc(f.pending, func(a, b watch.Event) int {
			ra, na := eventOrder(&a)
			rb, nb := eventOrder(&b)
			return cmp.Or(cmp.Compare(a.Change.Tenant, b.Change.Tenant), cmp.Compare(ra, rb), cmp.Compare(na, nb))
		})
	}
	at := f.lastTime.Load() // the entry's leader time (advance set it)
	for i := range f.pending {
		f.pending[i].Rev = watch.Rev{Index: index, Pos: uint32(i)}
		f.pending[i].At = at
	}
	f.window.Append(index, f.pending)
	clear(f.pending) // the window holds the events now; keep no states reachable from here
	f.pending = f.pending[:0]
}

// eventOrder is where e goes among its tenant's events of one entry (see above): a rank, then a
// name.
func eventOrder(e *watch.Event) (int, string) {
	switch e.Kind {
	case watch.SegmentMounted, watch.SegmentUnmounted:
		return 0, string(e.Change.Segment.ID[:])
	case watch.GroupCreated:
		return 0, e.Change.Group
	case watch.GroupRemoved:
		return 2, e.Change.Group
	}
	return 1, e.Change.Key
}
