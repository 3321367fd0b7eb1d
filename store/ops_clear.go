package store

import (
	"metad/store/alloc"
)

// A replica clear (BatchReplicaClear) drops an object's COMPLETE replicas that live on segments
// of one client: one named segment, or every segment the client owns. It runs in two steps, as a
// removal does (ops_remove.go): the leader prepares each key (no lease, no PROCESSING replica, a
// COMPLETE replica on those segments) and marks it, so that no read leases replicas that the
// command may drop; then the replicated step drops exactly the prepared incarnation's replicas on
// every node, erasing the object when none is left.

// ClearScope returns the segments a replica clear of client covers: seg when seg is not zero
// (SEGMENT_NOT_FOUND when it is not mounted, SEGMENT_OWNED_BY_OTHER_CLIENT when client does not
// own it), otherwise every segment client owns when it is asked (possibly none).
func (s *Store) ClearScope(client, seg alloc.ID) (func(alloc.ID) bool, error) {
	if !seg.IsZero() {
		if err := s.CheckUnmount(client, []alloc.ID{seg}); err != nil {
			return nil, err
		}
		return func(id alloc.ID) bool { return id == seg }, nil
	}
	ids := s.segs.SegmentsOf(client)
	set := make(map[alloc.ID]struct{}, len(ids))
	for _, id := range ids {
		set[id] = struct{}{}
	}
	return func(id alloc.ID) bool { _, ok := set[id]; return ok }, nil
}

// clearableLocked checks, under e.mu, that the replicas of e on the segments on can be cleared:
// the object is active, has no PROCESSING replica (a write, or a copy or move in progress) and has
// a COMPLETE replica there.
func clearableLocked(t *TenantState, e *ObjectEntry, objectID uint64, on func(alloc.ID) bool) error {
	st := e.State()
	if e.Life() != Active || (objectID != 0 && st.ID != objectID) {
		return objErr(ObjectNotFound, t.name, e.key, "object not found")
	}
	if st.HasProcessing() {
		return objErr(ReplicaIsNotReady, t.name, e.key, "a replica is still PROCESSING")
	}
	if !anyReplica(st, func(r Replica) bool { return r.Status == Complete && on(r.Extent.Segment) }) {
		return objErr(NoReplicaOnSegment, t.name, e.key, "no COMPLETE replica on the segments cleared")
	}
	return nil
}

// PrepareClear checks, on the leader, that key's replicas on the segments on can be cleared
// (present, not marked, no PROCESSING replica, a COMPLETE replica there, no read lease), marks the
// object for the command's flight and returns its token. A marked object is ErrUnlinkPending.
func (s *Store) PrepareClear(now int64, tenant, key string, on func(alloc.ID) bool) (ObjectToken, error) {
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
	if e.Life() == Active && e.markedLocked() {
		return ObjectToken{}, ErrUnlinkPending
	}
	if err := clearableLocked(t, e, 0, on); err != nil {
		return ObjectToken{}, err
	}
	if s.leasedLocked(e, now) {
		return ObjectToken{}, objErr(ObjectHasLease, tenant, key, "object has a read lease")
	}
	e.setMarkLocked(true)
	return tokenOf(t, e), nil
}

// ClearReplicas is the replicated step: it drops the COMPLETE replicas on the segments on of the
// token's object, if it is still that incarnation (tenant instance, 0 = current; object id) and has
// no PROCESSING replica, releasing their extents and memory charge, and erases the object when no
// replica is left. OBJECT_NOT_FOUND, REPLICA_IS_NOT_READY or NO_REPLICA_ON_SEGMENT otherwise, with
// nothing changed. Version is not checked: a change that left such a replica leaves it clearable.
func (s *Store) ClearReplicas(tok ObjectToken, on func(alloc.ID) bool) error {
	tenant := NormalizeTenant(tok.Tenant)
	t, err := s.writable(tenant)
	if err != nil {
		return err
	}
	defer t.release()
	if tok.Instance != 0 && tok.Instance != t.instance {
		return objErr(ObjectNotFound, tenant, tok.Key, "tenant instance changed")
	}
	e := t.dir.lookup(tok.Key)
	if e == nil {
		return objErr(ObjectNotFound, tenant, tok.Key, "object not found")
	}
	e.mu.Lock()
	if err := clearableLocked(t, e, tok.ObjectID, on); err != nil {
		e.mu.Unlock()
		return err
	}
	st := e.State()
	ns, dropped := st.nextKeeping(func(r Replica) bool { return r.Status != Complete || !on(r.Extent.Segment) })
	if len(ns.Replicas) == 0 {
		e.setLifeLocked(Removing)
		e.mu.Unlock()
		s.finishErase(t, e, st, nil)
		return nil
	}
	s.setStateLocked(t, e, ns)
	e.mu.Unlock()
	s.freeReplicas(t, dropped, st.Size, nil)
	return nil
}

// ClearReplica runs both steps in one call for a single store: the replicas of key on the
// segments of client that seg names (zero: all of them).
func (s *Store) ClearReplica(now int64, tenant, key string, client, seg alloc.ID) error {
	on, err := s.ClearScope(client, seg)
	if err != nil {
		return err
	}
	tok, err := s.PrepareClear(now, tenant, key, on)
	if err != nil {
		return err
	}
	if err := s.ClearReplicas(tok, on); err != nil {
		s.ClearMarks([]ObjectToken{tok})
		return err
	}
	s.ClearMarks([]ObjectToken{tok})
	return nil
}
