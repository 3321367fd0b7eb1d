package store

import (
	"slices"
)

// LockedObject is an object seen under its lock inside WithObject, WithObjects, WithGroup or
// WithToken. It is valid only during the callback: any use afterwards panics, so no pointer to a
// locked object outlives its lock. Work that must outlive the callback keeps a Token.
type LockedObject struct {
	s     *Store
	t     *TenantState
	e     *ObjectEntry
	valid bool
}

func (o *LockedObject) check() {
	if !o.valid {
		panic("store: LockedObject used outside its callback")
	}
}

// Key returns the object key.
func (o *LockedObject) Key() string { o.check(); return o.e.key }

// Group returns the explicit group id, or "" for a singleton.
func (o *LockedObject) Group() string { o.check(); return groupName(o.e) }

// State returns the object's replicated state.
func (o *LockedObject) State() *ObjectState { o.check(); return o.e.State() }

// Token returns the token of the state seen now.
func (o *LockedObject) Token() ObjectToken { o.check(); return tokenOf(o.t, o.e) }

// Handle returns a handle on the locked object's entry (for ClearHandleMarks after the lock).
func (o *LockedObject) Handle() ObjectHandle { o.check(); return ObjectHandle{Tenant: o.t, Entry: o.e} }

// Marked reports the leader's pending-unlink mark.
func (o *LockedObject) Marked() bool { o.check(); return o.e.markedLocked() }

// SetMark sets or clears the leader's pending-unlink mark (eviction's "removing" mark between its
// revalidation and its commit).
func (o *LockedObject) SetMark(on bool) { o.check(); o.e.setMarkLocked(on) }

// ExtendLease sets lease = max(lease, until).
func (o *LockedObject) ExtendLease(until int64) { o.check(); o.e.extendLeaseLocked(until) }

func lockAll(es []*ObjectEntry) {
	for _, e := range es {
		e.mu.Lock()
	}
}

func unlockAll(es []*ObjectEntry) {
	for _, e := range es {
		e.mu.Unlock()
	}
}

func (s *Store) run(t *TenantState, es []*ObjectEntry, fn func([]*LockedObject) error) error {
	los := make([]LockedObject, len(es))
	ptrs := make([]*LockedObject, len(es))
	for i, e := range es {
		los[i] = LockedObject{s: s, t: t, e: e, valid: true}
		ptrs[i] = &los[i]
	}
	defer func() {
		for i := range los {
			los[i].valid = false
		}
	}()
	return fn(ptrs)
}

// WithObject runs fn under the lock of the tenant's active object at key (OBJECT_NOT_FOUND if none).
func (s *Store) WithObject(tenant, key string, fn func(*LockedObject) error) error {
	return s.WithObjects(tenant, []string{key}, func(os []*LockedObject) error {
		if len(os) == 0 {
			return objErr(ObjectNotFound, NormalizeTenant(tenant), key, "object not found")
		}
		return fn(os[0])
	})
}

// WithObjects runs fn with the tenant's active objects among keys locked together, locked in
// canonical key order (duplicates once); fn sees them in that order, absent keys left out. It never
// takes a group lock, so it must not be called with one held that a member's change would need.
func (s *Store) WithObjects(tenant string, keys []string, fn func([]*LockedObject) error) error {
	t := s.tenants.Lookup(NormalizeTenant(tenant))
	if t == nil {
		return s.run(nil, nil, fn)
	}
	ks := slices.Clone(keys)
	slices.Sort(ks)
	ks = slices.Compact(ks)
	for {
		es := make([]*ObjectEntry, 0, len(ks))
		for _, k := range ks {
			if e := t.dir.lookup(k); e != nil {
				es = append(es, e)
			}
		}
		lockAll(es)
		// An entry may have been erased (and its key taken by a new one) between the route lookup
		// and its lock; drop the dead ones, and start over if a key now routes elsewhere.
		live := es[:0]
		stale := false
		for _, e := range es {
			switch e.Life() {
			case Active:
				live = append(live, e)
			case Removing:
				if t.dir.lookup(e.key) != e {
					stale = true
				}
				e.mu.Unlock()
			default:
				live = append(live, e) // creating is impossible here: its creator held the lock
			}
		}
		if stale {
			unlockAll(live)
			continue
		}
		defer unlockAll(live)
		return s.run(t, live, fn)
	}
}

// WithGroup runs fn as a group transaction: the group's lock, then its active members' locks in key
// order. OBJECT_NOT_FOUND if the tenant has no such group.
func (s *Store) WithGroup(tenant, group string, fn func([]*LockedObject) error) error {
	tenant = NormalizeTenant(tenant)
	t := s.tenants.Lookup(tenant)
	if t == nil {
		return errf(ObjectNotFound, "tenant %q group %q: group not found", tenant, group)
	}
	return s.withGroup(t, group, func(ms []*ObjectEntry, _ *GroupEntry) error { return s.run(t, ms, fn) })
}

// withGroup locks group g of t, then its active members in key order, and runs fn.
func (s *Store) withGroup(t *TenantState, group string, fn func([]*ObjectEntry, *GroupEntry) error) error {
	g := t.dir.group(group)
	if g == nil {
		return errf(ObjectNotFound, "tenant %q group %q: group not found", t.name, group)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.life != groupActive {
		return errf(ObjectNotFound, "tenant %q group %q: group not found", t.name, group)
	}
	ms := g.sortedMembersLocked()
	lockAll(ms)
	defer unlockAll(ms)
	live := ms[:0:0]
	for _, m := range ms {
		if m.Life() == Active {
			live = append(live, m)
		}
	}
	return fn(live, g)
}

// WithHandle runs fn under the lock of a census handle's entry if the entry is still live: its
// tenant is the registered instance and the entry is active (an active entry is the one its key
// routes to: an entry leaves the route only after it stops being active). It is WithToken without
// the directory lookup, for work that already holds the handle (eviction's revalidation); fn
// compares the object id and version when they matter. OBJECT_NOT_FOUND when the entry is gone.
func (s *Store) WithHandle(h ObjectHandle, fn func(*LockedObject) error) error {
	t, e := h.Tenant, h.Entry
	if s.tenants.Lookup(t.name) != t {
		return objErr(ObjectNotFound, t.name, e.key, "tenant instance changed")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.Life() != Active {
		return objErr(ObjectNotFound, t.name, e.key, "object not found")
	}
	lo := &LockedObject{s: s, t: t, e: e, valid: true}
	defer func() { lo.valid = false }()
	return fn(lo)
}

// WithToken runs fn under the lock of the token's object if it is still that incarnation: same
// tenant instance, same object id, active. Version is not checked; fn compares it when it matters.
func (s *Store) WithToken(tok ObjectToken, fn func(*LockedObject) error) error {
	t := s.tenants.Lookup(tok.Tenant)
	if t == nil || t.instance != tok.Instance {
		return objErr(ObjectNotFound, tok.Tenant, tok.Key, "tenant instance changed")
	}
	e := t.dir.lookup(tok.Key)
	if e == nil {
		return objErr(ObjectNotFound, tok.Tenant, tok.Key, "object not found")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.Life() != Active || e.State().ID != tok.ObjectID {
		return objErr(ObjectNotFound, tok.Tenant, tok.Key, "object not found")
	}
	return s.run(t, []*ObjectEntry{e}, func(os []*LockedObject) error { return fn(os[0]) })
}
