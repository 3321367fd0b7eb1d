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

// goldenV4Source is the state of golden-v4.snap: golden-v3's state, then one of each record that
// format version 4 added: a copy in progress (ObjectRecord.task), a scheduled task, a segment
// closing until a deadline (it holds an object: an empty one unmounts at once), and a drain job (which closes its segment too).
func goldenV4Source(t *testing.T) *FSM {
	f := goldenV3Source(t)
	const now = int64(1_750_000_000) * int64(time.Second)
	owner := genClients[0]
	seg := func(b byte) []byte { return uuid(0x5e, b) }
	cmds := []*metadv1.Command{{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: "golden4"}}}}
	for i := byte(0x21); i <= 0x24; i++ {
		cmds = append(cmds, &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{
			Segment: &metadv1.SegmentDesc{Id: seg(i), Name: "g4-" + string('a'+rune(i-0x21)), Base: uint64(i) << 32, Size: 1 << 20,
				Endpoint: "127.0.0.1:7100", Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: owner}}}})
	}
	for _, o := range []struct {
		key string
		seg byte
	}{{"c", 0x21}, {"m", 0x22}, {"e", 0x23}, {"d", 0x24}} {
		cmds = append(cmds,
			&metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{Tenant: "golden4", ClientId: owner, Key: []byte(o.key),
				Size: 1000, Config: &metadv1.ReplicaConfig{MemoryReplicas: 1, PreferredSegmentIds: [][]byte{seg(o.seg)}}}}},
			&metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{Tenant: "golden4", ClientId: owner, Key: []byte(o.key)}}})
	}
	cmds = append(cmds,
		&metadv1.Command{Op: &metadv1.Command_ReplicaTaskStart{ReplicaTaskStart: &metadv1.ReplicaTaskStart{Tenant: "golden4", ClientId: owner,
			Key: []byte("c"), Kind: metadv1.TaskKind_TASK_KIND_COPY, SourceSegmentId: seg(0x21), TargetSegmentIds: [][]byte{seg(0x22)}}}},
		&metadv1.Command{Op: &metadv1.Command_CreateTask{CreateTask: &metadv1.CreateTask{Kind: metadv1.TaskKind_TASK_KIND_MOVE,
			Tenant: "golden4", Key: []byte("m"), SourceSegmentId: seg(0x22)}}},
		&metadv1.Command{Op: &metadv1.Command_CloseSegment{CloseSegment: &metadv1.CloseSegment{ClientId: owner, SegmentId: seg(0x23),
			UnmountAtUnixNano: now + int64(time.Hour)}}},
		&metadv1.Command{Op: &metadv1.Command_StartDrain{StartDrain: &metadv1.StartDrain{SegmentIds: [][]byte{seg(0x24)}, MaxConcurrency: 2}}})
	for i, r := range applyCmds(t, f, 400, now, cmds...) {
		if r.Reason != store.OK {
			t.Fatalf("golden-v4 command %d (%T): %s %s", i, cmds[i].GetOp(), r.Reason, r.Message)
		}
	}
	return f
}

// TestGoldenSnapshotV4: a file of format version 4 (frozen) reads, with its copy in progress,
// scheduled task, closing segment and drain job, as the state it was written from: both encode to
// the same bytes in the current format.
func TestGoldenSnapshotV4(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "golden-v4.snap"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := snapshot.Inspect(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	closing := 0
	for _, s := range info.Segments {
		if s.Closing {
			closing++
		}
	}
	if info.FormatVersion != 4 || info.Index != 400 || info.Tasks != 1 || info.Drains != 1 || closing != 2 || info.Keys != 2 {
		t.Fatalf("golden snapshot reads as %+v (%d closing segments)", info, closing)
	}
	f := newFSM(t)
	if err := f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, f), snapshotBytes(t, goldenV4Source(t))) {
		t.Fatal("the version 4 file reads as another state than the one it was written from")
	}
	if c, err := f.Store().Peek("golden4", "c"); err != nil || len(c.Replicas) != 1 {
		t.Fatalf("the restored object with a copy in progress: %+v, %v", c, err)
	}
}
