package store

// Lock-free reads for the eviction census. The census (package evict) copies handles with
// VisitHandles or VisitTenantHandles and ranks them with no lock held, so it reads an entry's leader
// soft state straight from its atomic meta word. Such a read is a hint, exact only at the instant of
// the load: the evictor revalidates every candidate under its lock (WithGroup, WithToken) before it
// marks it, and the replicated apply checks the token again.

// Life returns the entry's lifecycle as of now (a lock-free read).
func (h ObjectHandle) Life() Lifecycle { return h.Entry.Life() }

// LeaseDeadline returns the entry's own lease in unix ns: the later of its read lease deadline and
// its last completed write's time (PutEnd stamps it, and a stamp protects nothing), 0 when never
// read nor written (a lock-free read, millisecond precision). It leaves out the store's LeaseFloor.
func (h ObjectHandle) LeaseDeadline() int64 {
	return int64(h.Entry.meta.Load()>>metaLeaseShft) * 1e6
}

// Marked reports the leader's pending-unlink mark (a lock-free read): the object is between an
// eviction's or a remove's revalidation and the commit of its proposal.
func (h ObjectHandle) Marked() bool { return h.Entry.meta.Load()&metaMarkBit != 0 }

// LeaseFloor returns the time (unix ns) until which every object counts as leased: a new leader's
// ResetSoftState sets it to one lease ttl after taking office. An object is leased at now when
// now < max(its LeaseDeadline, LeaseFloor).
func (s *Store) LeaseFloor() int64 { return s.leaseFloor.Load() }

// VisitTenantHandles is VisitHandles restricted to the current instance of one tenant (nothing when
// it is not registered): handles copied one route shard at a time under that shard's read lock, and
// handed to fn in chunks of at most chunk (0 = DefaultCensusChunk) with no lock held, yielding the
// processor after each.
func (s *Store) VisitTenantHandles(tenant string, chunk int, fn func([]ObjectHandle) bool) {
	t := s.tenants.Lookup(NormalizeTenant(tenant))
	if t == nil {
		return
	}
	t.dir.visit(t, nil, chunked(chunk, fn))
}
