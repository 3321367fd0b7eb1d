package store

import "metad/store/alloc"

// The replicated halves of eviction and of the reaper. The leader selects and revalidates with its
// soft state (leases, marks) and proposes tokens; every node then applies these, which check only
// replicated facts, so all nodes unlink exactly the same objects.

// EvictTokens evicts each token's object if it is still that exact state (tenant instance, object
// id, version), is not hard-pinned and has no PROCESSING replica of the tier: its COMPLETE replicas
// of the tier are dropped, and the object is erased when none remain. A token whose object moved is
// skipped (its error says why). It returns one error per token (nil = evicted) and the bytes freed.
func (s *Store) EvictTokens(tokens []ObjectToken, tier alloc.Tier) ([]error, uint64) {
	errs := make([]error, len(tokens))
	var freed uint64
	for i, tok := range tokens {
		t, err := s.writable(tok.Tenant)
		if err != nil {
			errs[i] = err
			continue
		}
		var n uint64
		n, errs[i] = s.evictOne(t, tok, tier)
		freed += n
		t.release()
	}
	return errs, freed
}

func (s *Store) evictOne(t *TenantState, tok ObjectToken, tier alloc.Tier) (uint64, error) {
	if t.instance != tok.Instance {
		return 0, objErr(ObjectNotFound, t.name, tok.Key, "tenant instance changed")
	}
	e := t.dir.lookup(tok.Key)
	if e == nil {
		return 0, objErr(ObjectNotFound, t.name, tok.Key, "object not found")
	}
	e.mu.Lock()
	st := e.State()
	switch {
	case e.Life() != Active || st.ID != tok.ObjectID || st.Version != tok.Version:
		e.mu.Unlock()
		return 0, objErr(ObjectNotFound, t.name, tok.Key, "object changed since it was selected")
	case st.HardPin:
		e.mu.Unlock()
		return 0, objErr(InvalidWrite, t.name, tok.Key, "object is hard-pinned")
	}
	var dropped []Replica
	ns := st.next()
	ns.Replicas = ns.Replicas[:0]
	for _, r := range st.Replicas {
		if r.Tier == tier {
			if r.Status == Processing {
				e.mu.Unlock()
				return 0, objErr(ReplicaIsNotReady, t.name, tok.Key, "a replica of the tier is PROCESSING")
			}
			dropped = append(dropped, r)
		} else {
			ns.Replicas = append(ns.Replicas, r)
		}
	}
	if len(dropped) == 0 {
		e.mu.Unlock()
		return 0, objErr(ObjectNotFound, t.name, tok.Key, "no replica of the tier")
	}
	var freed uint64
	for _, r := range dropped {
		freed += r.Extent.Size
	}
	if len(ns.Replicas) == 0 {
		e.setLifeLocked(Removing)
		e.mu.Unlock()
		s.finishErase(t, e, st)
		return freed, nil
	}
	e.state.Store(ns)
	e.mu.Unlock()
	s.freeReplicas(t, dropped, st.Size)
	return freed, nil
}

// RevokeTokens revokes, for each token whose object is still that exact state, every PROCESSING
// replica (the reaper of writes PROCESSING longer than put_release_timeout); the object is erased
// when nothing is left. One error per token, nil = revoked.
func (s *Store) RevokeTokens(tokens []ObjectToken) []error {
	errs := make([]error, len(tokens))
	for i, tok := range tokens {
		t, err := s.writable(tok.Tenant)
		if err != nil {
			errs[i] = err
			continue
		}
		errs[i] = s.revokeOne(t, tok)
		t.release()
	}
	return errs
}

func (s *Store) revokeOne(t *TenantState, tok ObjectToken) error {
	if t.instance != tok.Instance {
		return objErr(ObjectNotFound, t.name, tok.Key, "tenant instance changed")
	}
	e := t.dir.lookup(tok.Key)
	if e == nil {
		return objErr(ObjectNotFound, t.name, tok.Key, "object not found")
	}
	e.mu.Lock()
	st := e.State()
	if e.Life() != Active || st.ID != tok.ObjectID || st.Version != tok.Version {
		e.mu.Unlock()
		return objErr(ObjectNotFound, t.name, tok.Key, "object changed since it was selected")
	}
	return s.revokeLocked(t, e, st, 0)
}
