package fsm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/watch"
)

// allEvents reads every event w retains from start, without waiting.
func allEvents(t *testing.T, w *watch.Window, start watch.Rev) []watch.Event {
	t.Helper()
	c, err := w.Subscribe(start, watch.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan struct{})
	close(done)
	var out []watch.Event
	for {
		n := len(out)
		out, err = c.Next(context.Background(), out, 1000, done)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) == n {
			return out
		}
	}
}

// readable is a state as a reader sees it: for each object with a COMPLETE replica, its COMPLETE
// replicas' ids and places; each explicit group ("group tenant/name"); each mounted segment
// ("segment id").
type readable map[string]string

func replicasOf(rs []store.Replica) string {
	var ids []string
	for _, r := range rs {
		if r.Status == store.Complete {
			ids = append(ids, fmt.Sprintf("%d@%x+%d/%v", r.ID, r.Extent.Segment[:2], r.Extent.Offset, r.Tier))
		}
	}
	slices.Sort(ids)
	return fmt.Sprint(ids)
}

// fold replays events from an empty state.
func fold(evs []watch.Event) readable {
	out := readable{}
	for i := range evs {
		e := &evs[i]
		k := e.Change.Tenant + "/" + e.Change.Key
		switch e.Kind {
		case watch.Stored, watch.Changed:
			out[k] = replicasOf(e.Replicas())
		case watch.Removed, watch.Evicted:
			delete(out, k)
		case watch.GroupCreated:
			out["group "+e.Change.Tenant+"/"+e.Change.Group] = ""
		case watch.GroupRemoved:
			delete(out, "group "+e.Change.Tenant+"/"+e.Change.Group)
		case watch.SegmentMounted:
			out[fmt.Sprintf("segment %x", e.Change.Segment.ID[:])] = e.Change.Segment.Name
		case watch.SegmentUnmounted:
			delete(out, fmt.Sprintf("segment %x", e.Change.Segment.ID[:]))
		}
	}
	return out
}

// readableState is what the FSM's store holds, as fold renders it.
func readableState(f *FSM) readable {
	out := readable{}
	f.Store().VisitHandles(256, func(hs []store.ObjectHandle) bool {
		for _, h := range hs {
			if st := h.Entry.State(); st != nil && st.HasComplete() {
				out[h.Tenant.Name()+"/"+h.Entry.Key()] = replicasOf(st.Replicas)
			}
			if g := h.Entry.Group(); g != nil {
				out["group "+h.Tenant.Name()+"/"+g.Name()] = ""
			}
		}
		return true
	})
	for _, s := range f.Store().Segments().List() {
		out[fmt.Sprintf("segment %x", s.ID[:])] = s.Name
	}
	return out
}

// TestEventsReplayToTheState: over random commands of every kind, the events replayed from an
// empty state give the readable state, and two members applying the same entries make the same
// events at the same revisions.
func TestEventsReplayToTheState(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		logs := genLogs(t, seed, 600)
		a, b := newFSM(t), newFSM(t)
		for _, l := range logs {
			a.Apply(l)
			b.Apply(l)
		}
		ea, eb := allEvents(t, a.Window(), watch.Rev{Index: 1}), allEvents(t, b.Window(), watch.Rev{Index: 1})
		if len(ea) == 0 {
			t.Fatalf("seed %d: no events", seed)
		}
		kinds := map[watch.Kind]int{}
		for i := range ea {
			kinds[ea[i].Kind]++
			x, y := &ea[i], &eb[i]
			if x.Rev != y.Rev || x.Kind != y.Kind || x.Change.Tenant != y.Change.Tenant || x.Change.Key != y.Change.Key ||
				replicasOf(x.Replicas()) != replicasOf(y.Replicas()) {
				t.Fatalf("seed %d: event %d differs between members: %v %v %s/%s vs %v %v %s/%s", seed, i,
					x.Rev, x.Kind, x.Change.Tenant, x.Change.Key, y.Rev, y.Kind, y.Change.Tenant, y.Change.Key)
			}
			if i > 0 && !ea[i-1].Rev.Less(x.Rev) {
				t.Fatalf("seed %d: revisions out of order: %v then %v", seed, ea[i-1].Rev, x.Rev)
			}
		}
		got, want := fold(ea), readableState(a)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d: events replayed give\n%v\nthe state is\n%v", seed, got, want)
		}
		for _, k := range []watch.Kind{watch.Stored, watch.Removed, watch.GroupCreated, watch.GroupRemoved, watch.SegmentMounted, watch.SegmentUnmounted} {
			if kinds[k] == 0 {
				t.Errorf("seed %d: no %v event in %d events (%v)", seed, k, len(ea), kinds)
			}
		}
		t.Logf("seed %d: %d events %v", seed, len(ea), kinds)
	}
}

// TestEventsOfEachChange: a write makes no event until its PutEnd, then STORED with its
// replicas; a second replica's end is CHANGED; a removal REMOVED, an eviction EVICTED; revisions
// are the entry's index and the event's place in it.
func TestEventsOfEachChange(t *testing.T) {
	f := newFSM(t)
	g := newGen(1)
	applyCmds(t, f, 1, g.now, g.setup()...)
	cl := genClients[0]
	start := func(key string, mem, nof uint32) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{Tenant: "default", ClientId: cl,
			Key: []byte(key), Size: 100, Config: &metadv1.ReplicaConfig{MemoryReplicas: mem, NofReplicas: nof}}}}
	}
	end := func(key string, tier metadv1.Tier) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{Tenant: "default", ClientId: cl, Key: []byte(key), Tier: tier}}}
	}
	mustOK := func(rs []store.Result) {
		t.Helper()
		for _, r := range rs {
			if r.Reason != store.OK {
				t.Fatalf("refused: %v %s", r.Reason, r.Message)
			}
		}
	}
	mustOK(applyCmds(t, f, 2, g.now, start("a", 1, 1), start("b", 1, 0)))
	if evs := allEvents(t, f.Window(), watch.Rev{Index: 2}); len(evs) != 0 {
		t.Fatalf("PutStart made events: %v", evs)
	}
	mustOK(applyCmds(t, f, 3, g.now, end("a", metadv1.Tier_TIER_MEMORY), end("b", metadv1.Tier_TIER_UNSPECIFIED)))
	mustOK(applyCmds(t, f, 4, g.now, end("a", metadv1.Tier_TIER_NOF)))
	mustOK(applyCmds(t, f, 5, g.now, &metadv1.Command{Op: &metadv1.Command_Remove{Remove: &metadv1.Remove{Tenant: "default", Key: []byte("b")}}}))
	evict := func(index uint64, tier metadv1.Tier) {
		t.Helper()
		var tok *metadv1.ObjectToken
		f.Store().VisitHandles(16, func(hs []store.ObjectHandle) bool {
			for _, h := range hs {
				if h.Entry.Key() == "a" {
					st := h.Entry.State()
					tok = &metadv1.ObjectToken{Tenant: "default", TenantInstanceId: h.Tenant.Instance(), Key: []byte("a"), ObjectId: st.ID, Version: st.Version}
				}
			}
			return true
		})
		mustOK(applyCmds(t, f, index, g.now, &metadv1.Command{Op: &metadv1.Command_Evict{Evict: &metadv1.Evict{
			Tokens: []*metadv1.ObjectToken{tok}, Tier: tier, UnitSizes: []uint32{1}}}}))
	}
	evict(6, metadv1.Tier_TIER_MEMORY) // the NOF replica stays: the object is still readable
	evict(7, metadv1.Tier_TIER_NOF)

	type ev struct {
		rev      watch.Rev
		kind     watch.Kind
		key      string
		replicas int
	}
	var got []ev
	for _, e := range allEvents(t, f.Window(), watch.Rev{Index: 2}) {
		got = append(got, ev{e.Rev, e.Kind, e.Change.Key, len(e.Replicas())})
	}
	want := []ev{
		{watch.Rev{Index: 3, Pos: 0}, watch.Stored, "a", 1},
		{watch.Rev{Index: 3, Pos: 1}, watch.Stored, "b", 1},
		{watch.Rev{Index: 4, Pos: 0}, watch.Changed, "a", 2},
		{watch.Rev{Index: 5, Pos: 0}, watch.Removed, "b", 0},
		{watch.Rev{Index: 6, Pos: 0}, watch.Changed, "a", 1},
		{watch.Rev{Index: 7, Pos: 0}, watch.Evicted, "a", 0},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events\n%v\nwant\n%v", got, want)
	}
	// A restore empties the window: an older start is compacted, and the new floor follows the
	// snapshot's index.
	snap := snapshotBytes(t, f)
	if err := f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Window().Subscribe(watch.Rev{Index: 3}, watch.Filter{}); err == nil {
		t.Fatal("a start before the restore was served")
	}
	applied, oldest := f.Window().Applied()
	if applied != 7 || oldest != (watch.Rev{Index: 8}) {
		t.Fatalf("after restore: applied %d oldest %v, want 7 and 8.0", applied, oldest)
	}
}

// TestEventsOfGroupsAndSegments: a group's first object makes GROUP_CREATED (at its PutStart) and
// its last one's removal GROUP_REMOVED after the object's REMOVED; a mount SEGMENT_MOUNTED (a
// remount none); an unmount SEGMENT_UNMOUNTED, first in its entry, then its objects' losses.
func TestEventsOfGroupsAndSegments(t *testing.T) {
	f := newFSM(t)
	g := newGen(1)
	applyCmds(t, f, 1, g.now, g.setup()[:2]...) // the tenants, no segment
	cl := genClients[0]
	seg := &metadv1.SegmentDesc{Id: uuid(0x5e, 9), Name: "s9", Base: 1 << 32, Size: 1 << 20, Endpoint: "e9",
		Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: cl}
	mount := &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: seg}}}
	start := func(key, group string) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{Tenant: "alpha", ClientId: cl,
			Key: []byte(key), Group: []byte(group), Size: 100, Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}}
	}
	end := func(key string) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{Tenant: "alpha", ClientId: cl, Key: []byte(key)}}}
	}
	remove := func(key string) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_Remove{Remove: &metadv1.Remove{Tenant: "alpha", Key: []byte(key)}}}
	}
	unmount := &metadv1.Command{Op: &metadv1.Command_UnmountSegment{UnmountSegment: &metadv1.UnmountSegment{
		ClientId: cl, SegmentIds: [][]byte{seg.Id}}}}
	for i, cmds := range [][]*metadv1.Command{
		{mount},                              // 2: mounted
		{mount},                              // 3: a remount: nothing
		{start("x", "g"), start("y", "g")},   // 4: g created, once
		{end("x"), end("y"), start("z", "")}, // 5: x and y stored
		{remove("x")},                        // 6: x removed, g stays
		{remove("y"), end("z")},              // 7: y removed, then g; z stored
		{unmount},                            // 8: unmounted, then z removed
	} {
		for _, r := range applyCmds(t, f, uint64(i+2), g.now, cmds...) {
			if r.Reason != store.OK {
				t.Fatalf("entry %d refused: %v %s", i+2, r.Reason, r.Message)
			}
		}
	}
	var got []string
	for _, e := range allEvents(t, f.Window(), watch.Rev{Index: 2}) {
		got = append(got, fmt.Sprintf("%v %v %s/%s/%s", e.Rev, e.Kind, e.Change.Tenant, e.Change.Group, e.Change.Key))
	}
	want := []string{
		"2.0 SEGMENT_MOUNTED //",
		"4.0 GROUP_CREATED alpha/g/",
		"5.0 STORED alpha/g/x", "5.1 STORED alpha/g/y",
		"6.0 REMOVED alpha/g/x",
		"7.0 REMOVED alpha/g/y", "7.1 STORED alpha//z", "7.2 GROUP_REMOVED alpha/g/",
		"8.0 SEGMENT_UNMOUNTED //", "8.1 REMOVED alpha//z",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events\n%v\nwant\n%v", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	evs := allEvents(t, f.Window(), watch.Rev{Index: 8})
	if s := evs[0].Change.Segment; s == nil || s.Name != "s9" || s.Endpoint != "e9" {
		t.Fatalf("unmount event's segment: %+v", s)
	}
}
