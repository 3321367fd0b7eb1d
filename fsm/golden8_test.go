package fsm

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// update rewrites testdata/golden-v8.snap (go test ./fsm -run GoldenSnapshotV8 -update); the files
// of older formats are frozen.
var update = flag.Bool("update", false, "rewrite testdata/golden-v8.snap")

// goldenV8Source is the state of golden-v8.snap: golden-v7's state, then what format version 8
// added: a client's LOCAL_DISK registration (offload on) holding two objects' replicas, one of
// them the object's only replica once its memory one is evicted, offload tasks queued and taken,
// and a shared root (DISK) and a DFS pool holding the replicas of a put that asked for DFS.
func goldenV8Source(t *testing.T) *FSM {
	f := goldenV7Source(t)
	const now = int64(1_790_000_000) * int64(time.Second)
	owner := genClients[0]
	cmds := []*metadv1.Command{
		{Op: &metadv1.Command_MountLocalDisk{MountLocalDisk: &metadv1.MountLocalDisk{ClientId: owner, CapacityBytes: 1 << 30,
			Endpoint: "127.0.0.1:7200", Offload: true}}},
		{Op: &metadv1.Command_NotifyOffload{NotifyOffload: &metadv1.NotifyOffload{Tenant: "golden4", ClientId: owner,
			Results: []*metadv1.OffloadResult{{Key: []byte("e"), Size: 1000, Success: true}, {Key: []byte("m"), Size: 1000, Success: true}}}}},
	}
	for i, r := range applyCmds(t, f, 800, now, cmds...) {
		if r.Reason != store.OK || r.Count != len(r.Items) {
			t.Fatalf("golden-v8 command %d (%T): %s %s %+v", i, cmds[i].GetOp(), r.Reason, r.Message, r.Items)
		}
	}
	s := f.Store()
	var tok store.ObjectToken
	s.VisitTenantHandles("golden4", 0, func(hs []store.ObjectHandle) bool {
		for _, h := range hs {
			if h.Key() == "e" {
				tok, _ = h.Token()
			}
		}
		return true
	})
	ev := &metadv1.Command{Op: &metadv1.Command_Evict{Evict: &metadv1.Evict{Columns: wire.ColumnsTo([]store.ObjectToken{tok}),
		Tier: metadv1.Tier_TIER_MEMORY, Kind: metadv1.EvictKind_EVICT_KIND_MEMORY, UnitSizes: []uint32{1}, StateEpoch: s.Epoch()}}}
	if r := applyCmds(t, f, 802, now, ev)[0]; r.Reason != store.OK {
		t.Fatalf("golden-v8 eviction: %s %s", r.Reason, r.Message)
	}
	// Two puts on the owner's segments queue two offload tasks; the owner takes one (its object
	// pinned by an offload replica task) with the copy task queued before it, the other stays queued.
	var more []*metadv1.Command
	for _, k := range []string{"o1", "o2"} {
		more = append(more,
			&metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{Tenant: "golden4", ClientId: owner, Key: []byte(k),
				Size: 2000, Config: &metadv1.ReplicaConfig{MemoryReplicas: 1, PreferredSegmentIds: [][]byte{uuid(0x5e, 0x21)}}}}},
			&metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{Tenant: "golden4", ClientId: owner, Key: []byte(k)}}})
	}
	more = append(more, &metadv1.Command{Op: &metadv1.Command_FetchTasks{FetchTasks: &metadv1.FetchTasks{ClientId: owner, Batch: 2}}})
	for i, r := range applyCmds(t, f, 803, now, more...) {
		if r.Reason != store.OK {
			t.Fatalf("golden-v8 command %d (%T): %s %s", i, more[i].GetOp(), r.Reason, r.Message)
		}
	}
	files := func(id byte, tier metadv1.Tier, endpoint string) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: &metadv1.SegmentDesc{
			Id: uuid(0x5f, id), Name: "files", Size: 1 << 30, Endpoint: endpoint, Tier: tier, OwnerClientId: genClients[1]}}}}
	}
	shared := []*metadv1.Command{files(1, metadv1.Tier_TIER_DISK, "/mnt/shared/golden"), files(2, metadv1.Tier_TIER_DFS, "dfs://pool/golden"),
		{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{Tenant: "golden4", ClientId: owner, Key: []byte("f1"),
			Size: 3000, Config: &metadv1.ReplicaConfig{MemoryReplicas: 1, DfsReplicas: 1}}}},
		{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{Tenant: "golden4", ClientId: owner, Key: []byte("f1")}}},
	}
	for i, r := range applyCmds(t, f, 804, now, shared...) {
		if r.Reason != store.OK {
			t.Fatalf("golden-v8 shared-tier command %d (%T): %s %s", i, shared[i].GetOp(), r.Reason, r.Message)
		}
	}
	return f
}

// TestGoldenSnapshotV8: a file of format version 8 reads, with its LOCAL_DISK registration and
// replicas, and re-encodes to the same bytes, as its source state does. Run with -update to write
// it again; a later format must keep reading this file.
func TestGoldenSnapshotV8(t *testing.T) {
	path := filepath.Join("testdata", "golden-v8.snap")
	if *update {
		if err := os.WriteFile(path, snapshotBytes(t, goldenV8Source(t)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./fsm -run GoldenSnapshotV8 -update to create it)", err)
	}
	info, err := snapshot.Inspect(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if info.FormatVersion != 8 || info.Index != 804 {
		t.Fatalf("golden snapshot reads as %+v", info)
	}
	f := newFSM(t)
	if err := f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, f), data) {
		t.Fatal("a version 8 file re-encodes to other bytes")
	}
	if !bytes.Equal(snapshotBytes(t, goldenV8Source(t)), data) {
		t.Fatal("the golden file's source state encodes to other bytes than the file")
	}
	disk := alloc.LocalDiskID(wire.ID16(genClients[0]))
	if info, ok := f.Store().Segments().Get(disk); !ok || info.Tier != alloc.TierLocalDisk || !info.Offload || info.Used != 2048 {
		t.Fatalf("the LOCAL_DISK registration after the restore: %+v, %v", info, ok)
	}
	e, err := f.Store().Peek("golden4", "e")
	if err != nil || len(e.Replicas) != 1 || e.Replicas[0].Tier != alloc.TierLocalDisk || e.Replicas[0].Extent.Segment != disk {
		t.Fatalf("the disk-only object after the restore: %+v, %v", e, err)
	}
	if got, want := f.Store().TierObjects(), goldenV8Source(t).Store().TierObjects(); got != want || got.DiskOnly != 1 || got.LocalDisk != 2 {
		t.Fatalf("objects by tier after the restore: %+v, want %+v (one disk-only, two on disk)", got, want)
	}
	q := f.Store().Tasks()
	taken, ok1 := q.Offload("golden4", "o1")
	queued, ok2 := q.Offload("golden4", "o2")
	if !ok1 || taken.State != store.TaskProcessing || taken.Spec.Size != 2000 || !ok2 || queued.State != store.TaskPending {
		t.Fatalf("offload tasks after the restore: %+v %v, %+v %v", taken, ok1, queued, ok2)
	}
	pinned := false
	f.Store().VisitTenantHandles("golden4", 0, func(hs []store.ObjectHandle) bool {
		for _, h := range hs {
			if st := h.State(); h.Key() == "o1" && st.Task != nil && st.Task.Kind == store.TaskOffload {
				pinned = true
			}
		}
		return true
	})
	if !pinned {
		t.Fatal("the taken task's object is not pinned after the restore")
	}
	f1, err := f.Store().Peek("golden4", "f1")
	var tiers []alloc.Tier
	for _, r := range f1.Replicas {
		tiers = append(tiers, r.Tier)
	}
	if err != nil || !slices.Equal(tiers, []alloc.Tier{alloc.TierMemory, alloc.TierDisk, alloc.TierDFS}) {
		t.Fatalf("the object on the shared tiers after the restore: tiers %v, %v", tiers, err)
	}
	for _, tier := range []alloc.Tier{alloc.TierDisk, alloc.TierDFS} {
		if f.Store().Segments().Used(tier) != 3008 {
			t.Fatalf("%s bytes used after the restore: %d, want 3008", tier, f.Store().Segments().Used(tier))
		}
	}
}

// TestSnapshotFormatIsTheLowestThatHoldsTheState: a state with neither a rate limit nor a
// LOCAL_DISK segment is written in format 6, which the release before reads (a lagging follower
// of it installs the leader's snapshot in a rolling upgrade); a state with limits needs 7, and one
// with a local disk 8.
func TestSnapshotFormatIsTheLowestThatHoldsTheState(t *testing.T) {
	for _, tc := range []struct {
		f    *FSM
		want uint32
	}{{goldenV6Source(t), 6}, {goldenV7Source(t), 7}, {goldenV8Source(t), 8}} {
		info, err := snapshot.Inspect(bytes.NewReader(snapshotBytes(t, tc.f)))
		if err != nil || info.FormatVersion != tc.want {
			t.Fatalf("format %d (%v), want %d", info.FormatVersion, err, tc.want)
		}
	}
}

// TestSnapshotFileVersionFollowsTheMembers: a state is written in the whole-file form while a
// member records a feature level below levelLocalDisk (a rolling upgrade's older members read
// only that), and chunked once every member records it; both files hold the same records, a
// chunked file restores to a state that re-encodes to the same bytes, and Carried asks a restore
// for the same version.
func TestSnapshotFileVersionFollowsTheMembers(t *testing.T) {
	f := goldenV8Source(t)
	whole := snapshotBytes(t, f)
	members := f.state.Load().Members()
	var cmds []*metadv1.Command
	for _, m := range members {
		if m.Level >= levelLocalDisk {
			t.Fatalf("member %s of the golden state records level %d; the test wants older ones", m.Name, m.Level)
		}
		cmds = append(cmds, &metadv1.Command{Op: &metadv1.Command_SetMember{SetMember: &metadv1.SetMember{Name: m.Name,
			PeerAddress: m.PeerAddr, ClientAddress: m.ClientAddr, FeatureLevel: levelLocalDisk}}})
	}
	if len(cmds) == 0 {
		t.Fatal("the golden state has no members")
	}
	if got := f.Carried().FileVersion; got != snapshot.FileVersionWhole {
		t.Fatalf("Carried with older members asks for file version %d, want %d", got, snapshot.FileVersionWhole)
	}
	last := cmds[len(cmds)-1]
	applyCmds(t, f, 900, 1e9, cmds[:len(cmds)-1]...)
	if v := fileVersionOf(t, snapshotBytes(t, f)); v != snapshot.FileVersionWhole {
		t.Fatalf("with one member still older the file is version %d, want %d", v, snapshot.FileVersionWhole)
	}
	applyCmds(t, f, 910, 1e9, last)
	chunked := snapshotBytes(t, f)
	if v := fileVersionOf(t, chunked); v != snapshot.FileVersionChunked || f.Carried().FileVersion != snapshot.FileVersionChunked {
		t.Fatalf("with every member at level %d the file is version %d (Carried: %d), want %d", levelLocalDisk, v,
			f.Carried().FileVersion, snapshot.FileVersionChunked)
	}
	g := newFSM(t)
	if err := g.Restore(io.NopCloser(bytes.NewReader(chunked))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, g), chunked) {
		t.Fatal("a chunked file re-encodes to other bytes")
	}
	// The members' records differ (their levels); every other record is the same.
	withoutMembers := func(data []byte) []byte {
		return recordsWithout(t, data, func(rec *metadv1.Record) bool { return rec.GetMember() != nil })
	}
	if !bytes.Equal(withoutMembers(whole), withoutMembers(chunked)) {
		t.Fatal("the whole and the chunked file hold different records")
	}
}

func fileVersionOf(t *testing.T, data []byte) uint32 {
	t.Helper()
	r, err := snapshot.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return r.FileVersion()
}
