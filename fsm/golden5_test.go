package fsm

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
)

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

// TestGoldenSnapshotV5: a file of format version 5 (frozen) reads, with its arenas, as the state
// it was written from: both encode to the same bytes in the current format (its session with no
// known owner, as the entry that opened it was written before the owner rule).
func TestGoldenSnapshotV5(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "golden-v5.snap"))
	if err != nil {
		t.Fatal(err)
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
	if !bytes.Equal(snapshotBytes(t, f), snapshotBytes(t, goldenV5Source(t))) {
		t.Fatal("the version 5 file reads as another state than the one it was written from")
	}
	arenas := f.Store().Arenas().List()
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
