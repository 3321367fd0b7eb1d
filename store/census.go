package store

// Queries that describe the store as a whole or one tenant, for status calls, metrics and the
// eviction census. They read atomic counters and take no lock beyond a registry shard read; their
// figures are each exact at some instant during the call, not all at the same instant.

// TenantInfo is a plain value: one tenant instance as the store sees it at a moment.
type TenantInfo struct {
	Name      string
	Instance  uint64
	Life      TenantLife
	Requested uint64 // requested quota, bytes (0 = none)
	Effective uint64 // effective quota, bytes (0 = no quota)
	Charged   uint64 // MEMORY bytes charged
	Objects   int64
	Groups    int
}

func infoOf(t *TenantState) TenantInfo {
	q := t.Quota()
	return TenantInfo{Name: t.Name(), Instance: t.Instance(), Life: t.Life(), Requested: q.Requested(),
		Effective: q.Effective(), Charged: q.Charged(), Objects: t.Directory().Objects(), Groups: t.Directory().Groups()}
}

// Tenant describes the registered instance of tenant name (normalized by the caller); false when
// there is none.
func (s *Store) Tenant(name string) (TenantInfo, bool) {
	t := s.tenants.Lookup(name)
	if t == nil {
		return TenantInfo{}, false
	}
	return infoOf(t), true
}

// TenantInfos describes every registered tenant instance, sorted by name.
func (s *Store) TenantInfos() []TenantInfo {
	ts := s.tenants.List()
	out := make([]TenantInfo, len(ts))
	for i, t := range ts {
		out[i] = infoOf(t)
	}
	return out
}

// Totals is a plain value: the store's size at a moment.
type Totals struct {
	Tenants  int // registered instances, removed ones included until they leave the registry
	Objects  int64
	Groups   int
	Segments int
}

// Totals counts the tenants, objects, explicit groups and mounted segments.
func (s *Store) Totals() Totals {
	ts := s.tenants.List()
	out := Totals{Tenants: len(ts), Segments: s.segs.Len()}
	for _, t := range ts {
		out.Objects += t.Directory().Objects()
		out.Groups += t.Directory().Groups()
	}
	return out
}
