package fsm

import (
	"bytes"
	"io"
	"testing"

	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// TestArenasWithOverlappingSpansSnapshot: an object committed from an arena and removed gives its
// bytes back to the segment, so a later arena may be granted over them: arenas' spans overlap,
// their free spans do not. Such a state snapshots and restores to the same bytes, and a commit
// into the later arena's free bytes inside the earlier arena's span succeeds after the restore.
func TestArenasWithOverlappingSpansSnapshot(t *testing.T) {
	f := newFSM(t)
	owner := genClients[0]
	segB := uuid(0x5e, 0x41)
	mountCmd := &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{
		Segment: &metadv1.SegmentDesc{Id: segB, Name: "s", Base: 1 << 32, Size: 1 << 20, Endpoint: "127.0.0.1:7300",
			Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: owner}}}}
	grant := func(term uint64, size uint64) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_ArenaGrant{ArenaGrant: &metadv1.ArenaGrant{Term: term,
			Arenas: []*metadv1.ArenaSpec{{SegmentId: segB, Size: size}}}}}
	}
	commit := func(key string, off uint64) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_PutCommit{PutCommit: &metadv1.PutCommit{Tenant: "default", ClientId: owner,
			Items: []*metadv1.CommitItem{{Key: []byte(key), Size: 4096, Config: &metadv1.ReplicaConfig{MemoryReplicas: 1},
				Replicas: []*metadv1.CommitReplica{{Tier: metadv1.Tier_TIER_MEMORY, SegmentId: segB, Offset: off, Size: 4096}}}}}}}
	}
	const now = int64(1_770_000_000_000_000_000)
	for i, r := range applyCmds(t, f, 10, now, mountCmd, grant(1, 16384), commit("first", 0)) {
		if r.Reason != store.OK || len(r.Items) > 0 && r.Items[0].Reason != store.OK {
			t.Fatalf("command %d: %+v", i, r)
		}
	}
	st := f.Store()
	tok, err := st.PrepareRemove(now, "default", "first", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RemoveObject(tok); err != nil {
		t.Fatal(err)
	}
	// [0, 4096) is free in the segment again; the best fit for 4096 bytes is exactly that hole.
	for i, r := range applyCmds(t, f, 20, now, grant(2, 4096), commit("second", 0)) {
		if r.Reason != store.OK || len(r.Items) > 0 && r.Items[0].Reason != store.OK {
			t.Fatalf("command %d: %+v", i, r)
		}
	}
	as := st.Arenas().List()
	if len(as) != 2 || as[1].Offset != 0 || as[1].Offset+as[1].Size > as[0].Offset+as[0].Size {
		t.Fatalf("the second arena does not lie inside the first's span: %+v", as)
	}
	if err := st.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	data := snapshotBytes(t, f)
	g := newFSM(t)
	if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatalf("restore of a state whose arenas overlap: %v", err)
	}
	if !bytes.Equal(snapshotBytes(t, g), data) {
		t.Fatal("re-encodes to other bytes")
	}
	if err := g.Store().CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	// A commit in the first arena's free bytes still works after the restore.
	if r := applyCmds(t, g, 30, now, commit("third", 4096))[0]; r.Items[0].Reason != store.OK {
		t.Fatalf("commit after restore: %+v", r)
	}
}
