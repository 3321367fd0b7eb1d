package fsm

import (
	"bytes"
	"slices"
	"testing"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/wire"
)

// An Evict in columns evicts what the same Evict as token messages does; malformed columns, or
// both forms at once, reject the command whole with the state unchanged.
func TestEvictColumns(t *testing.T) {
	c1, seg := uuid(0xc1, 1), uuid(0x5e, 1)
	setup := []*metadv1.Command{{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: &metadv1.SegmentDesc{
		Id: seg, Name: "s", Base: 1 << 32, Size: 1 << 20, Endpoint: "e", Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: c1}}}}}
	var toks []store.ObjectToken
	for i, k := range []string{"a", "bb", "ccc", "dddd"} {
		setup = append(setup,
			&metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: c1, Key: []byte(k), Size: 100,
				Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}},
			&metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{ClientId: c1, Key: []byte(k)}}})
		toks = append(toks, store.ObjectToken{Tenant: "default", Instance: 1, Key: k, ObjectID: uint64(i + 1), Version: 2})
	}
	toks[2].Version = 7 // moved since "selection": skipped in both forms
	fresh := func() *FSM {
		f := newFSM(t)
		applyCmds(t, f, 1, 1e9, setup...)
		for _, tok := range toks {
			if err := f.Store().WithObject("", tok.Key, func(o *store.LockedObject) error {
				if got := o.Token(); got != tok && tok.Version != 7 {
					t.Fatalf("object %q is %+v, the test expects %+v", tok.Key, got, tok)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		return f
	}
	evict := func(m *metadv1.Evict) *metadv1.Command {
		m.Tier, m.UnitSizes = metadv1.Tier_TIER_MEMORY, []uint32{1, 1, 1, 1}
		return &metadv1.Command{Op: &metadv1.Command_Evict{Evict: m}}
	}
	var msgs []*metadv1.ObjectToken
	for _, tok := range toks {
		msgs = append(msgs, wire.TokenTo(tok))
	}
	a, b := fresh(), fresh()
	ra := applyCmds(t, a, 2, 2e9, evict(&metadv1.Evict{Tokens: msgs}))[0]
	rb := applyCmds(t, b, 2, 2e9, evict(&metadv1.Evict{Columns: wire.ColumnsTo(toks)}))[0]
	want := []store.Reason{store.OK, store.OK, store.ObjectNotFound, store.OK}
	if ra.Count != 3 || !slices.Equal(ra.Units, want) {
		t.Fatalf("token messages: %+v", ra)
	}
	if rb.Count != ra.Count || rb.Bytes != ra.Bytes || !slices.Equal(rb.Units, ra.Units) {
		t.Fatalf("columns: %+v, token messages: %+v", rb, ra)
	}
	if !bytes.Equal(stateOnly(t, snapshotBytes(t, a)), stateOnly(t, snapshotBytes(t, b))) {
		t.Fatal("the two forms left different states")
	}

	before := stateOnly(t, snapshotBytes(t, fresh()))
	bad := map[string]func(c *metadv1.TokenColumns){
		"short versions":        func(c *metadv1.TokenColumns) { c.Versions = c.Versions[1:] },
		"tenant index too high": func(c *metadv1.TokenColumns) { c.TenantIndex[3] = 1 },
		"instances missing":     func(c *metadv1.TokenColumns) { c.TenantInstanceIds = nil },
		"key past the end":      func(c *metadv1.TokenColumns) { c.KeyLengths[3]++ },
		"keys left over":        func(c *metadv1.TokenColumns) { c.Keys = append(c.Keys, 'x') },
	}
	for name, spoil := range bad {
		c := wire.ColumnsTo(toks)
		spoil(c)
		f := fresh()
		if r := applyCmds(t, f, 2, 2e9, evict(&metadv1.Evict{Columns: c}))[0]; r.Reason != store.InvalidParams || r.Count != 0 {
			t.Fatalf("%s: %+v, want INVALID_PARAMS", name, r)
		}
		if !bytes.Equal(stateOnly(t, snapshotBytes(t, f)), before) {
			t.Fatalf("%s: a rejected command changed the state", name)
		}
	}
	f := fresh()
	if r := applyCmds(t, f, 2, 2e9, evict(&metadv1.Evict{Tokens: msgs, Columns: wire.ColumnsTo(toks)}))[0]; r.Reason != store.InvalidParams {
		t.Fatalf("both forms: %+v, want INVALID_PARAMS", r)
	}
	if !bytes.Equal(stateOnly(t, snapshotBytes(t, f)), before) {
		t.Fatal("both forms: the state changed")
	}
	// The redundant-replica form is of the memory tier, one token per unit, with unit sizes.
	for name, m := range map[string]*metadv1.Evict{
		"another tier":     {Columns: wire.ColumnsTo(toks), Tier: metadv1.Tier_TIER_NOF, UnitSizes: []uint32{1, 1, 1, 1}, Redundant: true},
		"a unit of two":    {Columns: wire.ColumnsTo(toks), Tier: metadv1.Tier_TIER_MEMORY, UnitSizes: []uint32{2, 1, 1}, Redundant: true},
		"no unit sizes":    {Columns: wire.ColumnsTo(toks), Tier: metadv1.Tier_TIER_MEMORY, Redundant: true},
		"no offload (all)": {Columns: wire.ColumnsTo(toks), Tier: metadv1.Tier_TIER_MEMORY, UnitSizes: []uint32{1, 1, 1, 1}, Redundant: true},
	} {
		f := fresh()
		r := applyCmds(t, f, 2, 2e9, &metadv1.Command{Op: &metadv1.Command_Evict{Evict: m}})[0]
		if name == "no offload (all)" {
			// Well-formed: every token is refused on its own (no owner offloads), nothing evicted.
			if r.Reason != store.OK || r.Count != 0 || slices.ContainsFunc(r.Units, func(x store.Reason) bool { return x == store.OK }) {
				t.Fatalf("%s: %+v, want every unit refused", name, r)
			}
		} else if r.Reason != store.InvalidParams || r.Count != 0 {
			t.Fatalf("%s: %+v, want INVALID_PARAMS", name, r)
		}
		if !bytes.Equal(stateOnly(t, snapshotBytes(t, f)), before) {
			t.Fatalf("%s: the state changed", name)
		}
	}
}
