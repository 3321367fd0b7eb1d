package evict

import (
	"testing"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// The replicated half (store.EvictUnits through fsm's applyEvict): a unit goes all or nothing.

func (x *fixture) tokenOf(tenant, k string) store.ObjectToken {
	x.t.Helper()
	var tok store.ObjectToken
	if err := x.s.WithObject(tenant, k, func(o *store.LockedObject) error { tok = o.Token(); return nil }); err != nil {
		x.t.Fatalf("token of %q: %v", k, err)
	}
	return tok
}

func evictCmd(tier alloc.Tier, sizes []uint32, toks ...store.ObjectToken) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_Evict{Evict: &metadv1.Evict{Columns: wire.ColumnsTo(toks), Tier: wire.TierTo(tier),
		Kind: metadv1.EvictKind_EVICT_KIND_MEMORY, UnitSizes: sizes}}}
}

func TestApplyEvictUnits(t *testing.T) {
	x := newFixture(t, nil)
	x.mount(nofSeg, alloc.TierNOF, slots*slot)
	for _, k := range []string{"g1", "g2", "g3", "g4"} {
		x.put(k, inGroup("g"))
	}
	for _, k := range []string{"n1", "n2"} {
		x.put(k, inGroup("n"), withNOF)
	}
	x.put("s1")
	x.put("s2")
	g := []store.ObjectToken{x.tokenOf("", "g1"), x.tokenOf("", "g2"), x.tokenOf("", "g3"), x.tokenOf("", "g4")}
	wantAll := func(r store.Result, reason store.Reason) {
		t.Helper()
		if len(r.Units) == 0 {
			t.Fatalf("no unit outcomes: %+v", r)
		}
		for i, got := range r.Units {
			if got != reason {
				t.Fatalf("unit %d: %s, want %s", i, got, reason)
			}
		}
	}

	// Sizes that do not cover the tokens: the whole command is refused.
	for _, sizes := range [][]uint32{{3}, {5}, {2, 0, 2}, {4, 1}} {
		if r := x.node.apply(evictCmd(alloc.TierMemory, sizes, g...)); r.Reason != store.InvalidParams {
			t.Fatalf("sizes %v: %s", sizes, r.Reason)
		}
	}
	// Part of a group, a stale member, or a member that joined since: nothing of the group goes.
	stale := g[2]
	stale.Version++
	for name, toks := range map[string][]store.ObjectToken{
		"three of four": g[:3],
		"stale version": {g[0], g[1], stale, g[3]},
	} {
		r := x.node.apply(evictCmd(alloc.TierMemory, []uint32{uint32(len(toks))}, toks...))
		if r.Reason != store.OK || r.Count != 0 {
			t.Fatalf("%s: %s count %d", name, r.Reason, r.Count)
		}
		wantAll(r, store.ObjectNotFound)
	}
	x.put("g5", inGroup("g"))
	r := x.node.apply(evictCmd(alloc.TierMemory, []uint32{4}, g...))
	wantAll(r, store.ObjectNotFound)
	if ks, _ := x.s.ListGroup("", "g"); len(ks) != 5 {
		t.Fatalf("group g has %v", ks)
	}
	// Several singletons in one unit are refused; one unit each is fine.
	s1, s2 := x.tokenOf("", "s1"), x.tokenOf("", "s2")
	wantAll(x.node.apply(evictCmd(alloc.TierMemory, []uint32{2}, s1, s2)), store.InvalidParams)
	// The whole group (in any token order), a singleton, and a second group's memory tier: all go.
	g = append(g, x.tokenOf("", "g5"))
	n1, n2 := x.tokenOf("", "n1"), x.tokenOf("", "n2")
	r = x.node.apply(evictCmd(alloc.TierMemory, []uint32{5, 1, 2}, g[4], g[0], g[3], g[1], g[2], s1, n2, n1))
	if r.Reason != store.OK || r.Count != 8 || r.Bytes != 8*slot {
		t.Fatalf("whole units: %s count %d bytes %d", r.Reason, r.Count, r.Bytes)
	}
	wantAll(r, store.OK)
	if _, err := x.s.ListGroup("", "g"); store.ReasonOf(err) != store.ObjectNotFound {
		t.Fatalf("group g after eviction: %v", err)
	}
	// n kept its NOF replicas, so it is still a group; evicting NOF erases it.
	if ks, _ := x.s.ListGroup("", "n"); len(ks) != 2 {
		t.Fatalf("group n: %v", ks)
	}
	n1, n2 = x.tokenOf("", "n1"), x.tokenOf("", "n2")
	if r := x.node.apply(evictCmd(alloc.TierNOF, []uint32{2}, n1, n2)); r.Count != 2 {
		t.Fatalf("NOF eviction of n: %+v", r)
	}
	if _, err := x.s.ListGroup("", "n"); store.ReasonOf(err) != store.ObjectNotFound {
		t.Fatalf("group n after NOF eviction: %v", err)
	}
	// Without unit_sizes each token stands alone (the form written before units).
	if r := x.node.apply(evictCmd(alloc.TierMemory, nil, s2)); r.Count != 1 {
		t.Fatalf("legacy form: %+v", r)
	}
	if got := x.keys(""); len(got) != 0 {
		t.Fatalf("left: %v", got)
	}
	x.check()
}
