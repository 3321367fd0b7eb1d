package store

import (
	"slices"
)

// Removal is split in two so that a lease, which is leader soft state, never decides a replicated
// outcome. The leader first prepares: under the object lock it checks the lease (unless force), that
// no replica is PROCESSING, and marks the object for unlink, so that from then on its reads find the
// object gone. Then the replicated step (RemoveObject, EraseTokens, EraseGroup) erases exactly the
// prepared incarnation on every node. If the proposal fails the leader clears the marks. The
// composites Remove, RemoveAll and RemoveGroup run both steps in one call for a single store.

// ---- replicated steps ----------------------------------------------------------------------------

// RemoveObject erases the token's object: the object under tok.Key, if it belongs to tenant
// instance tok.Instance (0 = the current instance) and has id tok.ObjectID (0 = whatever object is
// there). OBJECT_NOT_FOUND if absent or another incarnation; OBJECT_HAS_REPLICATION_TASK while a
// copy or move runs; REPLICA_IS_NOT_READY while a replica is PROCESSING. A hard pin does not protect from removal. Version is not checked.
func (s *Store) RemoveObject(tok ObjectToken) error {
	tenant := NormalizeTenant(tok.Tenant)
	t, err := s.writable(tenant)
	if err != nil {
		return err
	}
	defer t.release()
	if tok.Instance != 0 && tok.Instance != t.instance {
		return objErr(ObjectNotFound, tenant, tok.Key, "tenant instance changed")
	}
	return s.removeObject(t, tok.Key, tok.ObjectID)
}

func (s *Store) removeObject(t *TenantState, key string, objectID uint64) error {
	e := t.dir.lookup(key)
	if e == nil {
		return objErr(ObjectNotFound, t.name, key, "object not found")
	}
	e.mu.Lock()
	st := e.State()
	if e.Life() != Active || (objectID != 0 && st.ID != objectID) {
		e.mu.Unlock()
		return objErr(ObjectNotFound, t.name, key, "object not found")
	}
	if err := st.busy(t.name, key); err != nil {
		e.mu.Unlock()
		return err
	}
	e.setLifeLocked(Removing)
	e.mu.Unlock()
	s.finishErase(t, e, st, nil)
	return nil
}

// EraseTokens erases each token's object if it is still that incarnation (tenant instance and object
// id; with matchVersion also the version) and has no PROCESSING replica. It returns one error per
// token (nil = erased) in order.
func (s *Store) EraseTokens(tokens []ObjectToken, matchVersion bool) []error {
	errs := make([]error, len(tokens))
	for i, tok := range tokens {
		t, err := s.writable(tok.Tenant)
		if err != nil {
			errs[i] = err
			continue
		}
		if tok.Instance != 0 && t.instance != tok.Instance {
			errs[i] = objErr(ObjectNotFound, tok.Tenant, tok.Key, "tenant instance changed")
		} else if matchVersion {
			errs[i] = s.eraseVersion(t, tok)
		} else {
			errs[i] = s.removeObject(t, tok.Key, tok.ObjectID)
		}
		t.release()
	}
	return errs
}

func (s *Store) eraseVersion(t *TenantState, tok ObjectToken) error {
	e := t.dir.lookup(tok.Key)
	if e == nil {
		return objErr(ObjectNotFound, t.name, tok.Key, "object not found")
	}
	e.mu.Lock()
	st := e.State()
	if e.Life() != Active || st.ID != tok.ObjectID || st.Version != tok.Version || st.busy(t.name, tok.Key) != nil {
		e.mu.Unlock()
		return objErr(ObjectNotFound, t.name, tok.Key, "object changed since it was selected")
	}
	e.setLifeLocked(Removing)
	e.mu.Unlock()
	s.finishErase(t, e, st, nil)
	return nil
}

// GroupToken names one incarnation of an explicit group as the leader prepared its removal:
// the tenant instance (0 = current), the group id (0 = any), and MaxObjectID, the tenant's object id
// counter at prepare time. A member with a larger id joined after the leader checked the leases, so
// EraseGroup refuses rather than erase an object nobody checked.
type GroupToken struct {
	Tenant      string
	Instance    uint64
	Group       string
	GroupID     uint64
	MaxObjectID uint64 // 0 = no limit
}

// EraseGroup erases an explicit group and all its members as one step, if it is still the token's
// incarnation. OBJECT_NOT_FOUND if absent or another incarnation; REPLICA_IS_NOT_READY if a member
// is PROCESSING; OBJECT_ALREADY_EXISTS if a member joined after the token was prepared (nothing is
// erased then). It returns the number of members erased.
func (s *Store) EraseGroup(tok GroupToken) (int, error) {
	tenant, group := NormalizeTenant(tok.Tenant), tok.Group
	t, err := s.writable(tenant)
	if err != nil {
		return 0, err
	}
	defer t.release()
	g := t.dir.group(group)
	if g == nil || (tok.Instance != 0 && tok.Instance != t.instance) || (tok.GroupID != 0 && g.id != tok.GroupID) {
		return 0, errf(ObjectNotFound, "tenant %q group %q: group not found", tenant, group)
	}
	g.mu.Lock()
	if g.life != groupActive {
		g.mu.Unlock()
		return 0, errf(ObjectNotFound, "tenant %q group %q: group not found", tenant, group)
	}
	ms := g.sortedMembersLocked()
	for _, m := range ms {
		m.mu.Lock()
	}
	for _, m := range ms {
		if m.Life() != Active {
			continue
		}
		var err error
		switch st := m.State(); {
		case tok.MaxObjectID != 0 && st.ID > tok.MaxObjectID:
			err = errf(ObjectAlreadyExists, "tenant %q group %q: member %q joined after the removal was prepared", tenant, group, m.key)
		case st.busy(tenant, m.key) != nil:
			err = st.busy(tenant, m.key)
		}
		if err != nil {
			unlockAll(ms)
			g.mu.Unlock()
			return 0, err
		}
	}
	type gone struct {
		e  *ObjectEntry
		st *ObjectState
	}
	erased := make([]gone, 0, len(ms))
	for _, m := range ms {
		if m.Life() == Active {
			erased = append(erased, gone{m, m.State()})
			m.setLifeLocked(Removing)
		}
		m.mu.Unlock()
	}
	g.members = nil
	s.dropGroupLocked(t, g)
	g.mu.Unlock()
	for _, x := range erased {
		s.unlinkErased(t, x.e, x.st, nil)
	}
	return len(erased), nil
}

// ---- leader steps --------------------------------------------------------------------------------

// PrepareRemove checks, on the leader, that key can be removed (present, not marked, no PROCESSING
// replica, no lease unless force), marks it for unlink and returns its token.
func (s *Store) PrepareRemove(now int64, tenant, key string, force bool) (ObjectToken, error) {
	tenant = NormalizeTenant(tenant)
	t := s.tenants.Lookup(tenant)
	if t == nil || t.Life() != TenantOpen {
		return ObjectToken{}, errf(TenantNotRegistered, "tenant %q is not registered", tenant)
	}
	e := t.dir.lookup(key)
	if e == nil {
		return ObjectToken{}, objErr(ObjectNotFound, tenant, key, "object not found")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := s.removableLocked(now, t, e, force); err != nil {
		return ObjectToken{}, err
	}
	e.setMarkLocked(true)
	return tokenOf(t, e), nil
}

// removableLocked checks a removal on the leader (e.mu held). An object already marked has a
// removal or eviction in flight: ErrUnlinkPending, for the caller to ask again.
func (s *Store) removableLocked(now int64, t *TenantState, e *ObjectEntry, force bool) error {
	if e.Life() != Active {
		return objErr(ObjectNotFound, t.name, e.key, "object not found")
	}
	if e.markedLocked() {
		return ErrUnlinkPending
	}
	if err := e.State().busy(t.name, e.key); err != nil {
		return err
	}
	if !force && s.leasedLocked(e, now) {
		return objErr(ObjectHasLease, t.name, e.key, "object has a read lease")
	}
	return nil
}

func tokenOf(t *TenantState, e *ObjectEntry) ObjectToken {
	st := e.State()
	return ObjectToken{Tenant: t.name, Instance: t.instance, Key: e.key, ObjectID: st.ID, Version: st.Version}
}

// PrepareRemoveAll marks every removable object of the tenant (see PrepareRemove) and returns their
// tokens in key order.
func (s *Store) PrepareRemoveAll(now int64, tenant string, force bool) ([]ObjectToken, error) {
	tenant = NormalizeTenant(tenant)
	t := s.tenants.Lookup(tenant)
	if t == nil || t.Life() != TenantOpen {
		return nil, errf(TenantNotRegistered, "tenant %q is not registered", tenant)
	}
	var toks []ObjectToken
	t.dir.visit(t, nil, func(hs []ObjectHandle) bool {
		for _, h := range hs {
			e := h.Entry
			e.mu.Lock()
			if s.removableLocked(now, t, e, force) == nil {
				e.setMarkLocked(true)
				toks = append(toks, tokenOf(t, e))
			}
			e.mu.Unlock()
		}
		return true
	})
	slices.SortFunc(toks, func(a, b ObjectToken) int { return compareKeys(a.Key, b.Key) })
	return toks, nil
}

// PrepareRemoveGroup checks, on the leader, that a group can be removed (no member leased unless
// force, none PROCESSING), marks every member and returns the group's token and the members' tokens
// (to clear the marks if the proposal fails).
func (s *Store) PrepareRemoveGroup(now int64, tenant, group string, force bool) (GroupToken, []ObjectToken, error) {
	tenant = NormalizeTenant(tenant)
	t := s.tenants.Lookup(tenant)
	if t == nil || t.Life() != TenantOpen {
		return GroupToken{}, nil, errf(TenantNotRegistered, "tenant %q is not registered", tenant)
	}
	var toks []ObjectToken
	var gt GroupToken
	err := s.withGroup(t, group, func(ms []*ObjectEntry, g *GroupEntry) error {
		// A member already marked is being removed or evicted by another proposal; the group's
		// erase takes it too if that one fails, so it needs no check and no mark of ours.
		var check []*ObjectEntry
		for _, m := range ms {
			if !m.markedLocked() {
				check = append(check, m)
			}
		}
		for _, m := range check {
			if err := s.removableLocked(now, t, m, force); err != nil {
				return err
			}
		}
		for _, m := range check {
			m.setMarkLocked(true)
			toks = append(toks, tokenOf(t, m))
		}
		// Under g.mu no member can join, so every member with an id up to the counter was checked.
		gt = GroupToken{Tenant: tenant, Instance: t.instance, Group: group, GroupID: g.id, MaxObjectID: t.dir.nextObjectID.Load()}
		return nil
	})
	return gt, toks, err
}

// ClearHandleMarks is ClearMarks for a caller that holds the entries it marked: hs[i] is the entry
// marked for toks[i] (LockedObject.Handle). It clears each mark with no key lookup, so clearing the
// marks of a large eviction costs a lock per object instead of a lookup in a map of millions. An
// entry whose object is no longer toks[i]'s (or none, or erased) is left alone, as ClearMarks does.
func (s *Store) ClearHandleMarks(hs []ObjectHandle, toks []ObjectToken) {
	if len(hs) != len(toks) {
		panic("store: ClearHandleMarks with different numbers of handles and tokens")
	}
	for i, h := range hs {
		e := h.Entry
		e.mu.Lock()
		if st := e.State(); st != nil && st.ID == toks[i].ObjectID && h.Tenant.instance == toks[i].Instance && e.Life() == Active {
			e.setMarkLocked(false)
		}
		e.mu.Unlock()
	}
}

// ClearMarks clears the unlink marks of the tokens' objects (a proposal failed). A token whose object
// was erased or recreated meanwhile is ignored.
func (s *Store) ClearMarks(tokens []ObjectToken) {
	for _, tok := range tokens {
		t := s.tenants.Lookup(tok.Tenant)
		if t == nil || t.instance != tok.Instance {
			continue
		}
		e := t.dir.lookup(tok.Key)
		if e == nil {
			continue
		}
		e.mu.Lock()
		if st := e.State(); st != nil && st.ID == tok.ObjectID {
			e.setMarkLocked(false)
		}
		e.mu.Unlock()
	}
}

// ResetSoftState starts leader soft state conservatively on gaining leadership: every object counts
// as leased until now + ttl (no lease the old leader granted is broken) and no mark survives.
func (s *Store) ResetSoftState(now int64) {
	s.leaseFloor.Store(now + s.leaseTTL)
	s.VisitHandles(0, func(hs []ObjectHandle) bool {
		for _, h := range hs {
			h.Entry.mu.Lock()
			h.Entry.setMarkLocked(false)
			h.Entry.mu.Unlock()
		}
		return true
	})
}

// ---- single-store composites ---------------------------------------------------------------------

// Remove removes one object: OBJECT_NOT_FOUND; OBJECT_HAS_LEASE unless force; REPLICA_IS_NOT_READY
// while a replica is PROCESSING (force does not bypass it).
func (s *Store) Remove(now int64, tenant, key string, force bool) error {
	tok, err := s.PrepareRemove(now, tenant, key, force)
	if err != nil {
		return err
	}
	if err := s.RemoveObject(tok); err != nil {
		s.ClearMarks([]ObjectToken{tok})
		return err
	}
	return nil
}

// BatchRemove is Remove for many keys of one tenant; results in request order.
func (s *Store) BatchRemove(now int64, tenant string, keys []string, force bool) []error {
	errs := make([]error, len(keys))
	for i, k := range keys {
		errs[i] = s.Remove(now, tenant, k, force)
	}
	return errs
}

// RemoveAll removes every removable object of the tenant and returns how many it removed.
func (s *Store) RemoveAll(now int64, tenant string, force bool) (int, error) {
	toks, err := s.PrepareRemoveAll(now, tenant, force)
	if err != nil {
		return 0, err
	}
	n := 0
	for i, err := range s.EraseTokens(toks, false) {
		if err == nil {
			n++
		} else {
			s.ClearMarks(toks[i : i+1])
		}
	}
	return n, nil
}

// RemoveGroup erases an explicit group and all its members (OBJECT_HAS_LEASE if a member is leased,
// unless force) and returns how many objects it erased.
func (s *Store) RemoveGroup(now int64, tenant, group string, force bool) (int, error) {
	gt, toks, err := s.PrepareRemoveGroup(now, tenant, group, force)
	if err != nil {
		return 0, err
	}
	n, err := s.EraseGroup(gt)
	if err != nil {
		s.ClearMarks(toks)
	}
	return n, err
}
