package wire

import (
	"fmt"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
)

// ArenaTo converts an arena to its snapshot record; segIndex maps each mounted segment to its
// 1-based position among the snapshot's segment records.
func ArenaTo(a *store.Arena, segIndex map[alloc.ID]uint32) *metadv1.ArenaRecord {
	r := &metadv1.ArenaRecord{ArenaId: a.ID, Term: a.Term, SegmentIndex: segIndex[a.Segment], Offset: a.Offset, Size: a.Size,
		Free: make([]*metadv1.ArenaSpan, len(a.Free))}
	for i, sp := range a.Free {
		r.Free[i] = &metadv1.ArenaSpan{Offset: sp.Offset, Size: sp.Size}
	}
	return r
}

// ArenaFrom converts an arena record; segs are the snapshot's segments in record order.
func ArenaFrom(r *metadv1.ArenaRecord, segs []alloc.ID) (store.Arena, error) {
	idx := int(r.GetSegmentIndex()) - 1
	if idx < 0 || idx >= len(segs) {
		return store.Arena{}, fmt.Errorf("arena %d: on segment #%d of %d", r.GetArenaId(), idx+1, len(segs))
	}
	a := store.Arena{ID: r.GetArenaId(), Term: r.GetTerm(), Segment: segs[idx], Offset: r.GetOffset(), Size: r.GetSize(),
		Free: make([]alloc.Span, len(r.GetFree()))}
	for i, sp := range r.GetFree() {
		a.Free[i] = alloc.Span{Offset: sp.GetOffset(), Size: sp.GetSize()}
	}
	return a, nil
}

// ArenaSpecsFrom converts an ArenaGrant's items.
func ArenaSpecsFrom(m *metadv1.ArenaGrant) []store.ArenaSpec {
	out := make([]store.ArenaSpec, len(m.GetArenas()))
	for i, a := range m.GetArenas() {
		out[i] = store.ArenaSpec{Segment: ID16(a.GetSegmentId()), Size: a.GetSize()}
	}
	return out
}

// CommitFrom builds the store's request for a PutCommit command.
func CommitFrom(m *metadv1.PutCommit) store.CommitRequest {
	req := store.CommitRequest{Tenant: m.GetTenant(), Client: ID16(m.GetClientId()), Tier: TierFrom(m.GetTier()),
		Items: make([]store.CommitItem, len(m.GetItems()))}
	n := 0
	for _, it := range m.GetItems() {
		n += len(it.GetReplicas())
	}
	slab := make([]store.CommitReplica, n) // every item's replicas in one allocation
	for i, it := range m.GetItems() {
		k := len(it.GetReplicas())
		ci := store.CommitItem{Key: string(it.GetKey()), Group: string(it.GetGroup()), Size: it.GetSize(),
			Config: ReplicaConfigFrom(it.GetConfig()), PutStart: it.GetPutStartUnixNano(),
			Replicas: slab[:k:k]}
		slab = slab[k:]
		for j, r := range it.GetReplicas() {
			ci.Replicas[j] = store.CommitReplica{Tier: TierFrom(r.GetTier()),
				Extent: alloc.Extent{Segment: ID16(r.GetSegmentId()), Offset: r.GetOffset(), Size: r.GetSize()}}
		}
		req.Items[i] = ci
	}
	return req
}

// CommitReplicasTo converts the extents a leader reserved for one object to a CommitItem's ranges.
// Their segment ids are slices of es, which the caller must not change while they are in use.
func CommitReplicasTo(es []alloc.Extent, tiers []alloc.Tier) []*metadv1.CommitReplica {
	out := make([]*metadv1.CommitReplica, len(es))
	reps := make([]metadv1.CommitReplica, len(es))
	for i := range es {
		e := &es[i] // the segment id is a slice of es, not of a copy that would escape
		r := &reps[i]
		r.Tier, r.SegmentId, r.Offset, r.Size = TierTo(tiers[i]), e.Segment[:], e.Offset, e.Size
		out[i] = r
	}
	return out
}
