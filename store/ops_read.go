package store

import (
	"slices"
	"time"
)

// GetResult is what a reader gets: the COMPLETE replicas, the object's size and data type, and the
// lease it now holds (0 for Peek).
type GetResult struct {
	Replicas []Replica
	Size     uint64
	DataType uint32
	LeaseTTL time.Duration
}

// Get returns the COMPLETE replicas of an object and grants a read lease (leader soft state):
// lease = max(lease, now + ttl). Absent (or marked for unlink by the leader): OBJECT_NOT_FOUND;
// present with nothing COMPLETE: REPLICA_IS_NOT_READY. Reading an explicit group's member whose lease
// is within half a ttl of expiry, or of a group that gained a member since the last refresh, leases
// every member of the group. Reads of an unknown tenant find nothing.
func (s *Store) Get(now int64, tenant, key string) (GetResult, error) {
	tenant = NormalizeTenant(tenant)
	t := s.tenants.Lookup(tenant)
	if t == nil {
		return GetResult{}, objErr(ObjectNotFound, tenant, key, "object not found")
	}
	r, err := s.read(now, t, key, true, true)
	if err != nil {
		return GetResult{}, err
	}
	r.LeaseTTL = s.cfg.LeaseTTL
	return r, nil
}

// Peek is Get without a lease: what a stale read on any node, or a read that must not extend
// leases, returns.
func (s *Store) Peek(tenant, key string) (GetResult, error) {
	tenant = NormalizeTenant(tenant)
	t := s.tenants.Lookup(tenant)
	if t == nil {
		return GetResult{}, objErr(ObjectNotFound, tenant, key, "object not found")
	}
	return s.read(0, t, key, true, false)
}

// Exist reports, per key, whether the object has a COMPLETE replica, leasing each one that does.
// Never an error for a missing key or tenant; ErrUnlinkPending when a key's removal is being
// committed (ask again). It takes any number of keys (a BatchExist has up to MaxReadBatch): they
// are looked up lookupManyMax at a time, each route shard's read lock once per chunk, and a key
// costs no allocation, found or not.
func (s *Store) Exist(now int64, tenant string, keys []string) ([]bool, error) {
	return s.exist(now, tenant, keys, true)
}

// Contains is Exist without leases, marks or the leader's soft state: what a stale BatchExist on
// any node answers. It never fails.
func (s *Store) Contains(tenant string, keys []string) []bool {
	out, _ := s.exist(0, tenant, keys, false)
	return out
}

// exist is Exist (lease set) and Contains: one route lookup per key in shard-grouped chunks, then
// each found entry's lock alone, as read takes it.
func (s *Store) exist(now int64, tenant string, keys []string, lease bool) ([]bool, error) {
	out := make([]bool, len(keys))
	t := s.tenants.Lookup(NormalizeTenant(tenant))
	if t == nil {
		return out, nil
	}
	n := min(len(keys), lookupManyMax)
	ents := make([]*ObjectEntry, n)
	shards := make([]uint8, n)
	for off := 0; off < len(keys); off += lookupManyMax {
		chunk := keys[off:min(off+lookupManyMax, len(keys))]
		t.dir.lookupMany(chunk, ents[:len(chunk)], shards)
		for i, e := range ents[:len(chunk)] {
			if e == nil {
				continue
			}
			ok, pending := s.existEntry(now, e, lease)
			if pending {
				return nil, ErrUnlinkPending
			}
			out[off+i] = ok
		}
		clear(ents) // drop the references before the next chunk (or the caller) keeps them alive
	}
	return out, nil
}

// existEntry is read's decision for an entry found under a key, with no result to build: whether
// it is active with a COMPLETE replica, leasing it (and its group, as read does) when lease is set.
// pending reports an entry marked for unlink on a linearizable read (read's ErrUnlinkPending).
func (s *Store) existEntry(now int64, e *ObjectEntry, lease bool) (ok, pending bool) {
	lockTimed(e, sampleLock(), &s.waits.Object)
	if e.Life() != Active {
		e.mu.Unlock()
		return false, false
	}
	if lease && e.markedLocked() {
		e.mu.Unlock()
		return false, true
	}
	ready := false
	for _, rep := range e.State().Replicas {
		if rep.Status == Complete {
			ready = true
			break
		}
	}
	if !ready || !lease {
		e.mu.Unlock()
		return ready, false
	}
	until := now + s.leaseTTL
	old := e.leaseLocked()
	e.extendLeaseLocked(until)
	e.mu.Unlock()
	if g := e.group; g != nil && (old < now+s.leaseTTL/2 || g.gen.Load() != g.leasedGen.Load()) {
		s.leaseGroup(g, until)
	}
	return true, false
}

// BatchGet is Get for many keys of one tenant; results in request order (an item may be
// ErrUnlinkPending).
func (s *Store) BatchGet(now int64, tenant string, keys []string) ([]GetResult, []error) {
	res := make([]GetResult, len(keys))
	errs := make([]error, len(keys))
	for i, k := range keys {
		res[i], errs[i] = s.Get(now, tenant, k)
	}
	return res, errs
}

// read is the read path: one route lookup, then the object lock alone (never the group's, never a
// route lock), so a read waits only for a change of the same object. want asks for the replicas;
// lease grants a read lease (leader soft state) and marks a linearizable read: an object marked for
// unlink is then ErrUnlinkPending. A stale read (no lease) ignores marks.
func (s *Store) read(now int64, t *TenantState, key string, want, lease bool) (GetResult, error) {
	sample := sampleLock()
	e := t.dir.lookupTimed(key, sample, &s.waits.Route)
	if e == nil {
		return GetResult{}, objErr(ObjectNotFound, t.name, key, "object not found")
	}
	lockTimed(e, sample, &s.waits.Object)
	if e.Life() != Active {
		e.mu.Unlock()
		return GetResult{}, objErr(ObjectNotFound, t.name, key, "object not found")
	}
	if lease && e.markedLocked() {
		e.mu.Unlock()
		return GetResult{}, ErrUnlinkPending
	}
	st := e.State()
	r := GetResult{Size: st.Size, DataType: st.DataType}
	ready := false
	for _, rep := range st.Replicas {
		if rep.Status == Complete {
			ready = true
			if !want {
				break
			}
			r.Replicas = append(r.Replicas, rep)
		}
	}
	if !ready {
		e.mu.Unlock()
		return GetResult{}, objErr(ReplicaIsNotReady, t.name, key, "no COMPLETE replica")
	}
	if !lease {
		e.mu.Unlock()
		return r, nil
	}
	until := now + s.leaseTTL
	old := e.leaseLocked()
	e.extendLeaseLocked(until)
	e.mu.Unlock()
	if g := e.group; g != nil && (old < now+s.leaseTTL/2 || g.gen.Load() != g.leasedGen.Load()) {
		s.leaseGroup(g, until)
	}
	return r, nil
}

// leaseGroup leases every live member of g until `until`: a group transaction that holds g.mu and
// one member lock at a time.
func (s *Store) leaseGroup(g *GroupEntry, until int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gen := g.gen.Load()
	for _, m := range g.members {
		m.mu.Lock()
		if m.Life() == Active && !m.markedLocked() {
			m.extendLeaseLocked(until)
		}
		m.mu.Unlock()
	}
	g.leasedGen.Store(gen)
}

// ListGroup returns the member keys of a tenant's explicit group in key order.
func (s *Store) ListGroup(tenant, group string) ([]string, error) {
	tenant = NormalizeTenant(tenant)
	t := s.tenants.Lookup(tenant)
	if t == nil {
		return nil, errf(ObjectNotFound, "tenant %q group %q: group not found", tenant, group)
	}
	return groupKeys(tenant, group, t.dir.group(group))
}

// groupKeys lists the members of g, found in the catalog under group (nil: not there), in key
// order. The catalog lookup and g's lock are two steps, so g may have been erased between them
// (EraseGroup empties and drops it under its lock) or be a group just created whose first member
// has not joined yet: a group without members is not found, never listed empty. Either answer
// (not found, or every member) is one that the state held at some point of the call.
func groupKeys(tenant, group string, g *GroupEntry) ([]string, error) {
	if g == nil {
		return nil, errf(ObjectNotFound, "tenant %q group %q: group not found", tenant, group)
	}
	g.mu.Lock()
	if g.life != groupActive || len(g.members) == 0 {
		g.mu.Unlock()
		return nil, errf(ObjectNotFound, "tenant %q group %q: group not found", tenant, group)
	}
	keys := make([]string, 0, len(g.members))
	for _, m := range g.members {
		keys = append(keys, m.key)
	}
	g.mu.Unlock()
	slices.Sort(keys)
	return keys, nil
}

// leased reports whether e holds a read lease at now (e.mu held): its own lease, or the floor a new
// leader sets so that no lease granted by the old leader is broken.
func (s *Store) leasedLocked(e *ObjectEntry, now int64) bool {
	return now < max(e.leaseLocked(), s.leaseFloor.Load())
}

// LeasedLocked is leasedLocked for callers outside the package that hold the object through
// WithObject.
func (o *LockedObject) Leased(now int64) bool { o.check(); return o.s.leasedLocked(o.e, now) }
