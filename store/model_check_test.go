package store

import (
	"maps"
	"slices"

	"metad/store/alloc"
)

// The model-based property test's state check: after every step the store's visible state must be
// the reference model's (model_test.go).

// ---- the state check -----------------------------------------------------------------------------

func (h *modelHarness) checkState() {
	h.rt.Helper()
	s, m := h.s, h.m
	if err := s.CheckInvariants(); err != nil {
		h.fatalf("CheckInvariants: %v", err)
	}
	if _, got := s.EvictionWanted(); got != h.evict {
		h.fatalf("eviction flag %v, model %v (a placement failed this step: %v)", got, h.evict, h.evict)
	}
	h.evict = false
	if s.NextInstance() != m.nextInstance {
		h.fatalf("NextInstance %d, model %d", s.NextInstance(), m.nextInstance)
	}

	// Segments: mounted set, usage from the model's replicas, allocator accounting.
	used := map[alloc.ID]uint64{}
	for _, t := range m.tenants {
		for _, o := range t.objects {
			for _, r := range o.reps {
				used[r.ext.Segment] += alloc.RoundUp(o.size)
			}
		}
	}
	reg := s.Segments()
	infos := reg.List()
	if len(infos) != len(m.mounted) {
		h.fatalf("%d segments mounted, model %d", len(infos), len(m.mounted))
	}
	var tierUsed [3]uint64
	for _, info := range infos {
		d, ok := m.mounted[info.ID]
		if !ok || d.size != info.Size || d.tier != info.Tier {
			h.fatalf("segment %s mounted as %+v, model %+v (%v)", info.ID, info.Segment, d, ok)
		}
		if info.Used > info.Size {
			h.fatalf("segment %s: used %d > size %d", info.ID, info.Used, info.Size)
		}
		if info.Used != used[info.ID] {
			h.fatalf("segment %s: used %d, model's replicas hold %d", info.ID, info.Used, used[info.ID])
		}
		spans, ok := reg.FreeSpans(info.ID)
		if !ok {
			h.fatalf("segment %s: no free spans", info.ID)
		}
		var free uint64
		for _, sp := range spans {
			free += sp.Size
		}
		if free+info.Used != info.Size {
			h.fatalf("segment %s: free %d + used %d != size %d", info.ID, free, info.Used, info.Size)
		}
		tierUsed[info.Tier] += info.Used
		delete(used, info.ID)
	}
	for id, n := range used {
		h.fatalf("model has %d bytes of replicas on unmounted segment %s", n, id)
	}
	for _, tier := range []alloc.Tier{alloc.TierMemory, alloc.TierNOF} {
		if c := reg.Capacity(tier); c != m.capacity(tier) {
			h.fatalf("capacity %s %d, model %d", tier, c, m.capacity(tier))
		}
		if u := reg.Used(tier); u != tierUsed[tier] {
			h.fatalf("used %s %d, segments sum %d", tier, u, tierUsed[tier])
		}
	}

	// Tenants, quotas, objects, groups.
	eff := m.effective()
	var effSum, reqSum uint64
	census := map[string]bool{}
	for _, name := range mTenantNames {
		mt := m.tenants[name]
		st := s.Tenants().Lookup(name)
		if mt == nil {
			if st != nil {
				h.fatalf("tenant %q registered (instance %d), model: not", name, st.Instance())
			}
			continue
		}
		if st == nil {
			h.fatalf("tenant %q not registered, model: instance %d", name, mt.instance)
		}
		if st.Instance() != mt.instance || st.Life() != TenantOpen {
			h.fatalf("tenant %q instance %d %s, model %d", name, st.Instance(), st.Life(), mt.instance)
		}
		q := st.Quota()
		if q.Requested() != mt.requested {
			h.fatalf("tenant %q requested %d, model %d", name, q.Requested(), mt.requested)
		}
		if q.Charged() != mt.charged() {
			h.fatalf("tenant %q charged %d, model %d (size x MEMORY replicas)", name, q.Charged(), mt.charged())
		}
		if q.Effective() != eff[name] {
			h.fatalf("tenant %q effective quota %d, model %d (capacity %d)", name, q.Effective(), eff[name], m.capacity(alloc.TierMemory))
		}
		if mt.requested != 0 {
			effSum += q.Effective()
			reqSum += mt.requested
		}
		d := st.Directory()
		if n := d.Objects(); n != int64(len(mt.objects)) {
			h.fatalf("tenant %q: %d objects, model %d", name, n, len(mt.objects))
		}
		if n := d.Groups(); n != len(mt.groups) {
			h.fatalf("tenant %q: %d groups, model %d", name, n, len(mt.groups))
		}
		for _, key := range mKeys {
			h.checkObject(name, st, mt, key)
			if mt.objects[key] != nil {
				census[name+"/"+key] = true
			}
		}
		for _, g := range mGroupNames {
			keys, err := s.ListGroup(name, g)
			want := mt.members(g)
			if len(want) == 0 {
				h.want("ListGroup "+name+"/"+g, err, ObjectNotFound)
				continue
			}
			h.want("ListGroup "+name+"/"+g, err, OK)
			if !slices.Equal(keys, want) {
				h.fatalf("ListGroup %s/%s = %q, model %q", name, g, keys, want)
			}
		}
	}
	if capMem := m.capacity(alloc.TierMemory); reqSum > capMem && effSum != capMem {
		h.fatalf("oversubscribed (requested %d > capacity %d): effective quotas sum to %d", reqSum, capMem, effSum)
	}
	got := map[string]bool{}
	s.VisitHandles(2, func(hs []ObjectHandle) bool {
		if len(hs) > 2 {
			h.fatalf("census chunk of %d handles, asked for 2", len(hs))
		}
		for _, x := range hs {
			got[x.Tenant.Name()+"/"+x.Key()] = true
		}
		return true
	})
	if !maps.Equal(got, census) {
		h.fatalf("census %v, model %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(census)))
	}
}

func (h *modelHarness) checkObject(name string, st *TenantState, mt *mTenant, key string) {
	h.rt.Helper()
	e := st.dir.lookup(key)
	o := mt.objects[key]
	who := name + "/" + key
	if o == nil {
		if e != nil {
			h.fatalf("%s present (%s), model: absent", who, e.Life())
		}
		return
	}
	if e == nil {
		h.fatalf("%s absent, model: present", who)
	}
	if e.Life() != Active || e.markedLocked() {
		h.fatalf("%s: %s, marked %v", who, e.Life(), e.markedLocked())
	}
	ss := e.State()
	if o.id == 0 {
		if ss.ID == 0 || mt.seenIDs[ss.ID] {
			h.fatalf("%s: new object id %d is not fresh for the tenant instance", who, ss.ID)
		}
		o.id = ss.ID
		mt.seenIDs[ss.ID] = true
	}
	if ss.ID != o.id || ss.Version != o.version {
		h.fatalf("%s: id %d version %d, model id %d version %d", who, ss.ID, ss.Version, o.id, o.version)
	}
	if groupName(e) != o.group || ss.Size != o.size || ss.Writer != o.writer || ss.PutStart != o.putStart {
		h.fatalf("%s: group %q size %d writer %s put start %d, model %q %d %s %d", who,
			groupName(e), ss.Size, ss.Writer, ss.PutStart, o.group, o.size, o.writer, o.putStart)
	}
	if ss.HardPin != o.hardPin || ss.SoftPinTTL != o.softTTL || ss.SoftPinDeadline != o.softDeadline {
		h.fatalf("%s: hard pin %v soft ttl %d deadline %d, model %v %d %d", who,
			ss.HardPin, ss.SoftPinTTL, ss.SoftPinDeadline, o.hardPin, o.softTTL, o.softDeadline)
	}
	if len(ss.Replicas) != len(o.reps) {
		h.fatalf("%s: replicas %+v, model %+v", who, ss.Replicas, o.reps)
	}
	for i, r := range ss.Replicas {
		w := o.reps[i]
		if r.ID != w.id || r.Tier != w.tier || r.Extent != w.ext || r.Status != w.status {
			h.fatalf("%s: replica %d = %+v, model %+v", who, i, r, w)
		}
	}
	if l := e.leaseLocked(); l != o.lease {
		h.fatalf("%s: lease %d, model %d", who, l, o.lease)
	}
}
