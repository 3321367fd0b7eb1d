package fsm

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// TestShortPlacementsCounted: a put that succeeds with fewer replicas than asked is counted on
// metad_fsm_short_placements_total, once per put (each batch item is a put); full placements,
// failed puts and upserts that keep their extents are not.
func TestShortPlacementsCounted(t *testing.T) {
	f := newFSM(t)
	reg := prometheus.NewRegistry()
	if err := f.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	c1 := uuid(0xc1, 1)
	cfg := func(mem uint32) *metadv1.ReplicaConfig { return &metadv1.ReplicaConfig{MemoryReplicas: mem} }
	put := func(key string, size uint64, mem uint32) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: c1, Key: []byte(key),
			Size: size, Config: cfg(mem)}}}
	}
	upsert := func(key string, size uint64, mem uint32) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_UpsertStart{UpsertStart: &metadv1.UpsertStart{ClientId: c1, Key: []byte(key),
			Size: size, Config: cfg(mem)}}}
	}
	end := func(key string) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_UpsertEnd{UpsertEnd: &metadv1.UpsertEnd{ClientId: c1, Key: []byte(key)}}}
	}
	index := uint64(0)
	apply := func(cmd *metadv1.Command, want store.Reason) store.Result {
		t.Helper()
		index++
		r := applyCmds(t, f, index, int64(index)*1e9, cmd)[0]
		if r.Reason != want {
			t.Fatalf("command %d: %s %s, want %s", index, r.Reason, r.Message, want)
		}
		return r
	}
	counted := func(want float64) {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := -1.0
		for _, mf := range mfs {
			if mf.GetName() == "metad_fsm_short_placements_total" {
				got = mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		if got != want {
			t.Fatalf("metad_fsm_short_placements_total = %v, want %v", got, want)
		}
	}
	apply(put("none", 100, 2), store.NoAvailableHandle) // no segment: failed, not short
	apply(&metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: &metadv1.SegmentDesc{
		Id: uuid(0x5e, 1), Name: "s", Base: 1 << 32, Size: 1 << 20, Endpoint: "e", Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: c1}}}}, store.OK)
	counted(0)
	if r := apply(put("short", 100, 2), store.OK); len(r.Replicas) != 1 {
		t.Fatalf("two replicas on one segment: %d placed", len(r.Replicas))
	}
	counted(1)
	apply(put("full", 100, 1), store.OK)
	counted(1)
	r := apply(&metadv1.Command{Op: &metadv1.Command_BatchPutStart{BatchPutStart: &metadv1.BatchPutStart{ClientId: c1, Config: cfg(3),
		Items: []*metadv1.BatchPutStart_Item{{Key: []byte("b1"), Size: 10}, {Key: []byte("b2"), Size: 10}, {Key: []byte("short"), Size: 10}}}}}, store.OK)
	if r.Items[2].Reason != store.ObjectAlreadyExists {
		t.Fatalf("batch item 3: %s", r.Items[2].Reason)
	}
	counted(3) // two short items; the third failed
	apply(end("short"), store.OK)
	if r := apply(upsert("short", 100, 2), store.OK); !r.Reused {
		t.Fatal("a same-size upsert did not reuse its extents")
	}
	counted(3) // extents kept: nothing was placed
	apply(end("short"), store.OK)
	if r := apply(upsert("short", 200, 2), store.OK); r.Reused || len(r.Replicas) != 1 {
		t.Fatalf("resizing upsert: reused %v, %d replicas", r.Reused, len(r.Replicas))
	}
	counted(4)
	if f.ShortPlacements() != 4 {
		t.Fatalf("ShortPlacements() = %d", f.ShortPlacements())
	}
}
