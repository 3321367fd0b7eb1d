package store

import (
	"cmp"
	"fmt"
	"slices"

	"metad/store/alloc"
)

// CheckInvariants verifies the store's structural invariants and returns the first violation. It is
// meant for a quiescent store (tests, and the FSM after a restore); concurrent writers can make it
// report transient states. Checked:
//   - every route entry is active, has a state, and routes under its own key;
//   - an explicit member is in its group's member list, its group is active and in the catalog,
//     and every catalog group is non-empty with members that route to themselves;
//   - each directory's object count equals its route entries;
//   - each tenant's charged quota equals the sum of its objects' MemoryBytes;
//   - an object's replica task names its COMPLETE source and PROCESSING targets among its
//     replicas, and it has no other PROCESSING replica (ReplicaTask);
//   - replica extents and the free spans of allocation arenas (which lie inside their arena's
//     span) never overlap within a segment, lie on a mounted segment, and add up to the segment's
//     used bytes;
//   - the objects by tier (TierObjects) are what the objects' states count.
func (s *Store) CheckInvariants() error {
	var tally tierTally
	type ext struct {
		off, size uint64
		t         *TenantState
		key       string
	}
	who := func(x ext) string {
		if x.t == nil {
			return x.key // an arena's free span
		}
		return fmt.Sprintf("tenant %q key %q", x.t.name, x.key)
	}
	extents := map[alloc.ID][]ext{}
	for _, t := range s.tenants.List() {
		d := t.dir
		var entries int64
		var charged uint64
		members := map[*GroupEntry]int{}
		for i := range d.routes {
			sh := &d.routes[i]
			sh.mu.RLock()
			for k, e := range sh.m {
				entries++
				if e.key != k {
					sh.mu.RUnlock()
					return fmt.Errorf("tenant %q key %q: entry has key %q", t.name, k, e.key)
				}
				if e.Life() != Active {
					sh.mu.RUnlock()
					return fmt.Errorf("tenant %q key %q: route entry is %s", t.name, k, e.Life())
				}
				st := e.State()
				if err := validTask(st); err != nil {
					sh.mu.RUnlock()
					return fmt.Errorf("tenant %q key %q: %w", t.name, k, err)
				}
				tally.change(nil, st)
				charged += st.MemoryBytes()
				for _, r := range st.Replicas {
					extents[r.Extent.Segment] = append(extents[r.Extent.Segment], ext{r.Extent.Offset, r.Extent.Size, t, k})
				}
				if e.group != nil {
					members[e.group]++
				}
			}
			sh.mu.RUnlock()
		}
		if n := d.objects.Load(); n != entries {
			return fmt.Errorf("tenant %q: object count %d, route entries %d", t.name, n, entries)
		}
		if c := t.quota.Charged(); c != charged {
			return fmt.Errorf("tenant %q: quota charged %d, objects hold %d", t.name, c, charged)
		}
		d.catalogMu.Lock()
		groups := make(map[string]*GroupEntry, len(d.groups))
		for k, g := range d.groups {
			groups[k] = g
		}
		d.catalogMu.Unlock()
		for g, n := range members {
			if groups[g.name] != g {
				return fmt.Errorf("tenant %q group %q: a member's group is not in the catalog", t.name, g.name)
			}
			g.mu.Lock()
			ok := g.life == groupActive && len(g.members) == n
			g.mu.Unlock()
			if !ok {
				return fmt.Errorf("tenant %q group %q: %d routed members, member list %d or removed", t.name, g.name, n, len(g.members))
			}
		}
		for name, g := range groups {
			if members[g] == 0 {
				return fmt.Errorf("tenant %q group %q: empty group in the catalog", t.name, name)
			}
			g.mu.Lock()
			for _, m := range g.members {
				if d.lookup(m.key) != m {
					g.mu.Unlock()
					return fmt.Errorf("tenant %q group %q: member %q does not route to itself", t.name, name, m.key)
				}
			}
			g.mu.Unlock()
		}
	}
	for _, a := range s.arenas.List() {
		for _, sp := range a.Free {
			if sp.Offset < a.Offset || sp.Offset+sp.Size > a.Offset+a.Size {
				return fmt.Errorf("arena %d: free span [%d,+%d) outside its span [%d,+%d)", a.ID, sp.Offset, sp.Size, a.Offset, a.Size)
			}
			extents[a.Segment] = append(extents[a.Segment], ext{sp.Offset, sp.Size, nil, fmt.Sprintf("arena %d", a.ID)})
		}
	}
	for _, info := range s.segs.List() {
		es := extents[info.ID]
		delete(extents, info.ID)
		slices.SortFunc(es, func(a, b ext) int { return cmp.Compare(a.off, b.off) })
		var used uint64
		for i, e := range es {
			used += e.size
			if e.off+e.size > info.Size {
				return fmt.Errorf("segment %s: extent [%d,+%d) of %s past its size %d", info.ID, e.off, e.size, who(e), info.Size)
			}
			if i > 0 && es[i-1].off+es[i-1].size > e.off {
				return fmt.Errorf("segment %s: extents of %s and %s overlap", info.ID, who(es[i-1]), who(e))
			}
		}
		if used != info.Used {
			return fmt.Errorf("segment %s: replicas hold %d bytes, allocator says %d used", info.ID, used, info.Used)
		}
	}
	for id, es := range extents {
		return fmt.Errorf("segment %s: not mounted, but %s has a replica there", id, who(es[0]))
	}
	if got, want := s.TierObjects(), tally.load(); got != want {
		return fmt.Errorf("objects by tier %+v, the states count %+v", got, want)
	}
	return nil
}
