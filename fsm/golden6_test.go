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

// goldenV6Source is the state of golden-v6.snap: golden-v5's state, then what format version 6
// added: sessions with their owners, session 2 alice's with a kept answer and session 3 of the
// empty principal (a cluster that authenticates nothing). Session 1 (of no known owner) expired
// by then and goes with the first OpenSession.
func goldenV6Source(t *testing.T) *FSM {
	f := goldenV5Source(t)
	const now = int64(1_770_000_000) * int64(time.Second)
	open := func(p string) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_OpenSession{OpenSession: &metadv1.OpenSession{TtlMs: 300_000, Window: 8}}, Principal: p}
	}
	put := putStartCmd("golden4", "owned")
	put.Principal, put.Session = "alice", hdr(2, 1, 1)
	cmds := []*metadv1.Command{open("alice"), open(""), put}
	for i, r := range applyCmds(t, f, 600, now, cmds...) {
		if r.Reason != store.OK {
			t.Fatalf("golden-v6 command %d (%T): %s %s", i, cmds[i].GetOp(), r.Reason, r.Message)
		}
	}
	return f
}

// TestGoldenSnapshotV6: a file of format version 6 (frozen) reads, with its sessions' owners, as
// the state it was written from: both encode to the same bytes in the current format.
func TestGoldenSnapshotV6(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "golden-v6.snap"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := snapshot.Inspect(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if info.FormatVersion != 6 || info.Index != 600 || info.Sessions != 2 {
		t.Fatalf("golden snapshot reads as %+v", info)
	}
	f := newFSM(t)
	if err := f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, f), snapshotBytes(t, goldenV6Source(t))) {
		t.Fatal("the version 6 file reads as another state than the one it was written from")
	}
	for _, c := range []struct {
		id        uint64
		principal string
		open      bool
	}{{1, "", false}, {2, "alice", true}, {2, "", false}, {2, "bob", false}, {3, "", true}, {3, "alice", false}} {
		if got := f.SessionOpen(c.id, c.principal); got != c.open {
			t.Errorf("session %d open to %q: %v, want %v", c.id, c.principal, got, c.open)
		}
	}
	if r, ok := f.Replay(hdr(2, 1, 1), "alice"); !ok || r.Reason != store.OK || len(r.Replicas) != 1 {
		t.Fatalf("alice's kept answer after the restore: %+v %v", r, ok)
	}
	if _, ok := f.Replay(hdr(2, 1, 1), "bob"); ok {
		t.Fatal("bob replays alice's kept answer after the restore")
	}
}
