package store

// Change is one change of an object's replicated state by an applied command: its state before and
// after, nil where the object did not exist (a create) or no longer exists (an erase). The states
// are immutable (ObjectState's contract), so a Change may be kept and read from any goroutine.
type Change struct {
	Tenant string
	Key    string
	Group  string // the explicit group, "" for a singleton
	Before *ObjectState
	After  *ObjectState
}

// ChangeSink is told every Change, on the goroutine that changes the store (the FSM's apply), in
// the order the changes happen, before the command that makes them returns. It must not call the
// store back or block: it runs under the object's and possibly the group's lock.
type ChangeSink func(Change)

// SetChangeSink sets the sink every later change of an object is told (nil: none). Set it before
// the store is shared; a store that a restore builds has none until its owner sets one.
func (s *Store) SetChangeSink(sink ChangeSink) { s.sink = sink }

// setStateLocked publishes ns as e's state (e.mu held) and tells the sink.
func (s *Store) setStateLocked(t *TenantState, e *ObjectEntry, ns *ObjectState) {
	old := e.state.Swap(ns)
	if s.sink != nil {
		s.sink(Change{Tenant: t.name, Key: e.key, Group: e.groupName(), Before: old, After: ns})
	}
}

// erased tells the sink that e, whose last state was st, is gone.
func (s *Store) erased(t *TenantState, e *ObjectEntry, st *ObjectState) {
	if s.sink != nil {
		s.sink(Change{Tenant: t.name, Key: e.key, Group: e.groupName(), Before: st})
	}
}

// created tells the sink that e is a new object with state st.
func (s *Store) created(t *TenantState, e *ObjectEntry, st *ObjectState) {
	if s.sink != nil {
		s.sink(Change{Tenant: t.name, Key: e.key, Group: e.groupName(), After: st})
	}
}

func (e *ObjectEntry) groupName() string {
	if e.group == nil {
		return ""
	}
	return e.group.name
}
