package store

import "metad/store/alloc"

// Subject is what a Change is about.
type Subject uint8

const (
	// ObjectChange: an object's state changed (Key, Group, Before, After).
	ObjectChange Subject = iota
	// GroupChange: an explicit group got its first object, or is gone (Group, Gone).
	GroupChange
	// SegmentChange: a segment was mounted, or unmounted (Segment, Gone). Tenant is empty.
	SegmentChange
)

// Change is one change of the replicated state by an applied command. For an object: its state
// before and after, nil where the object did not exist (a create) or no longer exists (an erase).
// For a group or a segment: whether it came (Gone false) or went. The states and the segment are
// immutable (ObjectState's contract), so a Change may be kept and read from any goroutine.
type Change struct {
	Subject Subject
	Tenant  string
	Key     string
	Group   string // an object's explicit group ("" for a singleton), or the group of a GroupChange
	Before  *ObjectState
	After   *ObjectState
	Segment *alloc.Segment // a SegmentChange's segment
	Gone    bool           // a GroupChange's or SegmentChange's subject went
}

// ChangeSink is told every Change, on the goroutine that changes the store (the FSM's apply), in
// the order the changes happen, before the command that makes them returns. It must not call the
// store back or block: it runs under the object's and possibly the group's lock.
type ChangeSink func(Change)

// SetChangeSink sets the sink every later change is told (nil: none). Set it before the store is
// shared; a store that a restore builds has none until its owner sets one.
func (s *Store) SetChangeSink(sink ChangeSink) { s.sink = sink }

// setStateLocked publishes ns as e's state (e.mu held) and tells the sink.
func (s *Store) setStateLocked(t *TenantState, e *ObjectEntry, ns *ObjectState) {
	old := e.state.Swap(ns)
	s.tiers.change(old, ns)
	if s.sink != nil {
		s.sink(Change{Tenant: t.name, Key: e.key, Group: e.groupName(), Before: old, After: ns})
	}
}

// erased tells the sink that e, whose last state was st, is gone.
func (s *Store) erased(t *TenantState, e *ObjectEntry, st *ObjectState) {
	s.tiers.change(st, nil)
	if s.sink != nil {
		s.sink(Change{Tenant: t.name, Key: e.key, Group: e.groupName(), Before: st})
	}
}

// created tells the sink that e is a new object with state st.
func (s *Store) created(t *TenantState, e *ObjectEntry, st *ObjectState) {
	s.tiers.change(nil, st)
	if s.sink != nil {
		s.sink(Change{Tenant: t.name, Key: e.key, Group: e.groupName(), After: st})
	}
}

// groupJoined tells the sink that g got its first member (g.mu held).
func (s *Store) groupJoined(t *TenantState, g *GroupEntry) {
	if s.sink != nil {
		s.sink(Change{Subject: GroupChange, Tenant: t.name, Group: g.name})
	}
}

// dropGroupLocked removes g, which had members, from t's catalog and tells the sink (g.mu held).
// A group that never had a member (a create that lost its key) is dropped with the directory's
// dropGroupLocked: no one was told it existed.
func (s *Store) dropGroupLocked(t *TenantState, g *GroupEntry) {
	t.dir.dropGroupLocked(g)
	if s.sink != nil {
		s.sink(Change{Subject: GroupChange, Tenant: t.name, Group: g.name, Gone: true})
	}
}

// segmentChanged tells the sink that seg was mounted (gone false) or unmounted.
func (s *Store) segmentChanged(seg alloc.Segment, gone bool) {
	if s.sink != nil {
		s.sink(Change{Subject: SegmentChange, Segment: &seg, Gone: gone})
	}
}

func (e *ObjectEntry) groupName() string {
	if e.group == nil {
		return ""
	}
	return e.group.name
}
