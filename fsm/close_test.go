package fsm

import (
	"bytes"
	"io"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
	"metad/wire"
)

// TestCloseSegmentApplyAndSnapshot: CloseSegment and UnmountClosed through apply. The closing state
// and its deadline, and the result a session keeps for a CloseSegment, survive a snapshot and a
// restore; a retry of the CloseSegment after the restore gets the first answer; UnmountClosed for
// another deadline or before it changes nothing, and at the deadline (the entry's leader time)
// unmounts the segment.
func TestCloseSegmentApplyAndSnapshot(t *testing.T) {
	const now = int64(1_700_000_000) * int64(time.Second)
	at := now + int64(time.Minute)
	seg := uuid(0x5e, 1)
	f := newFSM(t)
	res := applyCmds(t, f, 1, now, mountCmd(seg, "s", "e", 1<<20, 1<<20),
		&metadv1.Command{Op: &metadv1.Command_OpenSession{OpenSession: &metadv1.OpenSession{TtlMs: 3_600_000, Window: 16}}},
		putCmd(0, 0, "k"))
	for i, r := range res {
		if r.Reason != store.OK {
			t.Fatalf("setup command %d: %+v", i, r)
		}
	}
	closeCmd := &metadv1.Command{Op: &metadv1.Command_CloseSegment{CloseSegment: &metadv1.CloseSegment{
		ClientId: genClients[0], SegmentId: seg, UnmountAtUnixNano: at}}, Session: &metadv1.SessionHeader{SessionId: 1, Seq: 1, FirstUnackedSeq: 1}}
	if r := applyCmds(t, f, 2, now, closeCmd)[0]; r.Reason != store.OK || r.Unmount.UnmountAt != at || r.Unmount.Segments != 0 {
		t.Fatalf("CloseSegment = %+v", r)
	}
	if r := applyCmds(t, f, 3, now, &metadv1.Command{Op: &metadv1.Command_CloseSegment{CloseSegment: &metadv1.CloseSegment{
		ClientId: genClients[1], SegmentId: seg, UnmountAtUnixNano: at}}})[0]; r.Reason != store.SegmentOwnedByOtherClient {
		t.Fatalf("CloseSegment by another client = %+v", r)
	}

	saved := snapshotBytes(t, f)
	info0, err := snapshot.Inspect(bytes.NewReader(saved))
	if err != nil || info0.FormatVersion < 4 || len(info0.Segments) != 1 ||
		!info0.Segments[0].Closing || info0.Segments[0].UnmountAtUnixNano != at {
		t.Fatalf("inspect: %+v %v; want the segment closing until %d", info0, err, at)
	}
	g := newFSM(t)
	if err := g.Restore(io.NopCloser(bytes.NewReader(saved))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, g), snapshotBytes(t, f)) {
		t.Fatal("restored state encodes differently")
	}
	info, ok := g.Store().Segments().Get(wire.ID16(seg))
	if !ok || !info.Closing || info.UnmountAt != at {
		t.Fatalf("restored segment %+v", info)
	}
	retry := closeCmd
	retry.GetCloseSegment().UnmountAtUnixNano = at - 1
	if r := applyCmds(t, g, 4, now, retry)[0]; r.Reason != store.OK || r.Unmount.UnmountAt != at {
		t.Fatalf("retried CloseSegment after restore = %+v; want the kept answer (deadline %d)", r, at)
	}
	if info, _ := g.Store().Segments().Get(wire.ID16(seg)); info.UnmountAt != at {
		t.Fatalf("a retry moved the deadline to %d", info.UnmountAt)
	}

	unmount := func(index uint64, when, deadline int64) store.Result {
		return applyCmds(t, g, index, when, &metadv1.Command{Op: &metadv1.Command_UnmountClosed{UnmountClosed: &metadv1.UnmountClosed{
			SegmentId: seg, UnmountAtUnixNano: deadline}}})[0]
	}
	if r := unmount(5, at-1, at); r.Unmount.Segments != 0 {
		t.Fatalf("UnmountClosed before the deadline = %+v", r)
	}
	if r := unmount(6, at+1, at+1); r.Unmount.Segments != 0 {
		t.Fatalf("UnmountClosed for another deadline = %+v", r)
	}
	if r := unmount(7, at, at); r.Reason != store.OK || r.Unmount.Segments != 1 || r.Unmount.Erased != 1 {
		t.Fatalf("UnmountClosed at the deadline = %+v", r)
	}
	if _, ok := g.Store().Segments().Get(wire.ID16(seg)); ok {
		t.Fatal("segment still mounted")
	}
}
