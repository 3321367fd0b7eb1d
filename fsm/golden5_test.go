package fsm

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
)

// update rewrites testdata/golden-v5.snap (go test ./fsm -run GoldenSnapshotV5 -update); the files
// of older formats are frozen.
var update = flag.Bool("update", false, "rewrite testdata/golden-v5.snap")

// goldenV5Source is the state of golden-v5.snap: golden-v4's state, then what format version 5
// added: allocation arenas, one of them partly taken by a committed object (free spans around it).
func goldenV5Source(t *testing.T) *FSM {
	f := goldenV4Source(t)
	const now = int64(1_760_000_000) * int64(time.Second)
	owner := genClients[0]
	seg := func(b byte) []byte { return uuid(0x5e, b) }
	cmds := []*metadv1.Command{}
	for i := byte(0x31); i <= 0x32; i++ {
		cmds = append(cmds, &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{
			Segment: &metadv1.SegmentDesc{Id: seg(i), Name: "g5-" + string('a'+rune(i-0x31)), Base: uint64(i) << 32, Size: 1 << 20,
				Endpoint: "127.0.0.1:7200", Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: owner}}}})
	}
	cmds = append(cmds,
		&metadv1.Command{Op: &metadv1.Command_ArenaGrant{ArenaGrant: &metadv1.ArenaGrant{Term: 7, Arenas: []*metadv1.ArenaSpec{
			{SegmentId: seg(0x31), Size: 64 << 10}, {SegmentId: seg(0x32), Size: 32 << 10}}}}},
		&metadv1.Command{Op: &metadv1.Command_PutCommit{PutCommit: &metadv1.PutCommit{Tenant: "golden4", ClientId: owner,
			Items: []*metadv1.CommitItem{{Key: []byte("arena-object"), Size: 1000, Config: &metadv1.ReplicaConfig{MemoryReplicas: 1},
				PutStartUnixNano: now - int64(time.Millisecond),
				Replicas:         []*metadv1.CommitReplica{{Tier: metadv1.Tier_TIER_MEMORY, SegmentId: seg(0x31), Offset: 4096, Size: 1024}}}}}}})
	for i, r := range applyCmds(t, f, 500, now, cmds...) {
		if r.Reason != store.OK || len(r.Items) > 0 && r.Items[0].Reason != store.OK {
			t.Fatalf("golden-v5 command %d (%T): %+v", i, cmds[i].GetOp(), r)
		}
	}
	return f
}

// TestGoldenSnapshotV5: a file of format version 5 reads, with its arenas, and re-encodes to the
// same bytes, as its source state does. Run with -update to write it again; a later format must
// keep reading this file.
func TestGoldenSnapshotV5(t *testing.T) {
	path := filepath.Join("testdata", "golden-v5.snap")
	if *update {
		if err := os.WriteFile(path, snapshotBytes(t, goldenV5Source(t)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./fsm -run GoldenSnapshotV5 -update to create it)", err)
	}
	info, err := snapshot.Inspect(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if info.FormatVersion != 5 || info.Index != 500 {
		t.Fatalf("golden snapshot reads as %+v", info)
	}
	f := newFSM(t)
	if err := f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, f), data) {
		t.Fatal("a version 5 file re-encodes to other bytes")
	}
	if !bytes.Equal(snapshotBytes(t, goldenV5Source(t)), data) {
		t.Fatal("the golden file's source state encodes to other bytes than the file")
	}
	arenas := f.Store().Arenas()
	if len(arenas) != 2 || len(arenas[0].Free) != 2 || arenas[0].FreeBytes() != 64<<10-1024 || arenas[0].Term != 7 {
		t.Fatalf("restored arenas: %+v", arenas)
	}
	if err := f.Store().CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if o, err := f.Store().Peek("golden4", "arena-object"); err != nil || len(o.Replicas) != 1 || o.Replicas[0].Extent.Offset != 4096 {
		t.Fatalf("the committed object: %+v, %v", o, err)
	}
}
