package fsm

import (
	"bytes"
	"io"
	"maps"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
)

// The commands the leader prepares by checking its own state carry the state epoch they were
// checked against; TestFencedCommandsAreTheLeaderPrepared keeps that list explicit.
func TestFencedCommandsAreTheLeaderPrepared(t *testing.T) {
	od := (&metadv1.Command{}).ProtoReflect().Descriptor().Oneofs().ByName("op")
	var got []string
	for i := range od.Fields().Len() {
		fd := od.Fields().Get(i)
		if fd.Message().Fields().ByName("state_epoch") != nil {
			got = append(got, string(fd.Name()))
		}
	}
	slices.Sort(got)
	want := []string{"batch_remove", "batch_replica_clear", "evict", "queue_offload", "queue_promotion", "remove", "remove_all", "remove_group", "revoke_expired"}
	if !slices.Equal(got, want) {
		t.Fatalf("commands with state_epoch: %v, want %v", got, want)
	}
}

// restoredAt returns an FSM restored from f's state written with the given state epoch, as an online
// restore installs it.
func restoredAt(t *testing.T, f *FSM, epoch uint64) *FSM {
	t.Helper()
	c := f.Store().CaptureInto(nil)
	c.Epoch = epoch
	var buf bytes.Buffer
	idx, term := f.Applied()
	if _, err := WriteCapture(&buf, c, nil, idx, term, 1); err != nil {
		t.Fatal(err)
	}
	g := newFSM(t)
	if err := g.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	return g
}

// A removal, eviction or reaping prepared against one state epoch is refused whole on a state of
// another (STATE_REPLACED, nothing changed), and applies on its own epoch; the epoch survives a
// snapshot round trip.
func TestStateEpochFencesPreparedCommands(t *testing.T) {
	a := newFSM(t)
	c1, seg := uuid(0xc1, 1), uuid(0x5e, 1)
	applyCmds(t, a, 1, 1e9,
		&metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: &metadv1.SegmentDesc{
			Id: seg, Name: "s", Base: 1 << 32, Size: 1 << 20, Endpoint: "e", Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: c1}}}},
		&metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: c1, Key: []byte("k"), Size: 100,
			Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}},
		&metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{ClientId: c1, Key: []byte("k")}}},
	)
	if a.Store().Epoch() != 0 {
		t.Fatalf("new store at epoch %d", a.Store().Epoch())
	}
	b := restoredAt(t, a, 1)
	if b.Store().Epoch() != 1 {
		t.Fatalf("restored store at epoch %d, want 1", b.Store().Epoch())
	}
	data := snapshotBytes(t, b)
	r, err := snapshot.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if e := r.Header().GetStateEpoch(); e != 1 {
		t.Fatalf("re-snapshot header state_epoch %d, want 1", e)
	}

	ref := []*metadv1.ObjectRef{{Key: []byte("k"), ObjectId: 1}}
	tok := []*metadv1.ObjectToken{{Tenant: "default", TenantInstanceId: 1, Key: []byte("k"), ObjectId: 1, Version: 1}}
	stale := map[string]*metadv1.Command{
		"remove":         {Op: &metadv1.Command_Remove{Remove: &metadv1.Remove{Key: []byte("k"), TenantInstanceId: 1, ObjectId: 1}}},
		"batch_remove":   {Op: &metadv1.Command_BatchRemove{BatchRemove: &metadv1.BatchRemove{TenantInstanceId: 1, Items: ref}}},
		"remove_all":     {Op: &metadv1.Command_RemoveAll{RemoveAll: &metadv1.RemoveAll{TenantInstanceId: 1, Targets: ref}}},
		"remove_group":   {Op: &metadv1.Command_RemoveGroup{RemoveGroup: &metadv1.RemoveGroup{Group: []byte("g"), TenantInstanceId: 1}}},
		"evict":          {Op: &metadv1.Command_Evict{Evict: &metadv1.Evict{Tokens: tok, Tier: metadv1.Tier_TIER_MEMORY, UnitSizes: []uint32{1}}}},
		"revoke_expired": {Op: &metadv1.Command_RevokeExpired{RevokeExpired: &metadv1.RevokeExpired{Tokens: tok}}},
		"batch_replica_clear": {Op: &metadv1.Command_BatchReplicaClear{BatchReplicaClear: &metadv1.BatchReplicaClear{
			TenantInstanceId: 1, ClientId: c1, Items: ref}}},
	}
	idx, _ := b.Applied()
	for _, name := range slices.Sorted(maps.Keys(stale)) {
		idx++
		res := applyCmds(t, b, idx, 2e9, stale[name])[0]
		if res.Reason != store.StateReplaced || res.Count != 0 || len(res.Items) != 0 {
			t.Fatalf("%s at epoch 0 on a state of epoch 1: %+v, want STATE_REPLACED and nothing else", name, res)
		}
		if after := snapshotBytes(t, b); !bytes.Equal(stateOnly(t, after), stateOnly(t, data)) {
			t.Fatalf("%s: refused command changed the state", name)
		}
	}

	// The same removal prepared against epoch 1 applies.
	idx++
	res := applyCmds(t, b, idx, 3e9, &metadv1.Command{Op: &metadv1.Command_Remove{Remove: &metadv1.Remove{
		Key: []byte("k"), TenantInstanceId: 1, ObjectId: 1, StateEpoch: 1}}})[0]
	if res.Reason != store.OK {
		t.Fatalf("remove at the state's epoch: %s %s", res.Reason, res.Message)
	}
	if b.Store().Tenants().Lookup("default").Directory().Objects() != 0 {
		t.Fatal("object still there")
	}
}

// stateOnly drops a snapshot file's header position (index, term, time) by re-reading its records.
func stateOnly(t *testing.T, data []byte) []byte {
	t.Helper()
	return recordsWithout(t, data, nil)
}

// recordsWithout is the deterministic encodings of data's records, but those skip reports.
func recordsWithout(t *testing.T, data []byte, skip func(*metadv1.Record) bool) []byte {
	t.Helper()
	r, err := snapshot.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	rec := &metadv1.Record{}
	for {
		err := r.Next(rec)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if skip != nil && skip(rec) {
			continue
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
}
