package fsm

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
)

// update rewrites testdata/golden-v7.snap (go test ./fsm -run GoldenSnapshotV7 -update); the files
// of older formats are frozen.
var update = flag.Bool("update", false, "rewrite testdata/golden-v7.snap")

// goldenV7Source is the state of golden-v7.snap: golden-v6's state, then what format version 7
// added: rate limits of a principal, of a role and of every principal.
func goldenV7Source(t *testing.T) *FSM {
	f := goldenV6Source(t)
	const now = int64(1_780_000_000) * int64(time.Second)
	set := func(principal, role string, calls, keys, streams uint32) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_SetLimit{SetLimit: &metadv1.SetLimit{Principal: principal, Role: role,
			CallsPerSec: calls, KeysPerSec: keys, Streams: streams}}}
	}
	cmds := []*metadv1.Command{set("alice", "", 100, 0, 8), set("", "tenant:golden4", 50, 5000, 0), set("", auth.AnyRole, 10, 1000, 4)}
	for i, r := range applyCmds(t, f, 700, now, cmds...) {
		if r.Reason != store.OK {
			t.Fatalf("golden-v7 command %d (%T): %s %s", i, cmds[i].GetOp(), r.Reason, r.Message)
		}
	}
	return f
}

// TestGoldenSnapshotV7: a file of format version 7 reads, with its limits, and re-encodes to the
// same bytes, as its source state does. Run with -update to write it again; a later format must
// keep reading this file.
func TestGoldenSnapshotV7(t *testing.T) {
	path := filepath.Join("testdata", "golden-v7.snap")
	if *update {
		if err := os.WriteFile(path, snapshotBytes(t, goldenV7Source(t)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./fsm -run GoldenSnapshotV7 -update to create it)", err)
	}
	info, err := snapshot.Inspect(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if info.FormatVersion != 7 || info.Index != 700 || info.Limits != 3 {
		t.Fatalf("golden snapshot reads as %+v", info)
	}
	f := newFSM(t)
	if err := f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, f), data) {
		t.Fatal("a version 7 file re-encodes to other bytes")
	}
	if !bytes.Equal(snapshotBytes(t, goldenV7Source(t)), data) {
		t.Fatal("the golden file's source state encodes to other bytes than the file")
	}
	a := f.State().Auth()
	if got := a.LimitOf("alice"); got != (auth.Limit{CallsPerSec: 100, KeysPerSec: 1000, Streams: 8}) {
		t.Fatalf("alice's limits after the restore: %+v", got)
	}
	if got := len(a.Limits()); got != 3 {
		t.Fatalf("%d limit records after the restore, want 3", got)
	}
}

// TestSnapshotFormatIsTheLowestThatHoldsTheState: a state with no rate limit is written in format
// 6, which the release before reads (a lagging follower of it installs the leader's snapshot in a
// rolling upgrade); a state with limits needs 7.
func TestSnapshotFormatIsTheLowestThatHoldsTheState(t *testing.T) {
	for _, tc := range []struct {
		f    *FSM
		want uint32
	}{{goldenV6Source(t), 6}, {goldenV7Source(t), 7}} {
		info, err := snapshot.Inspect(bytes.NewReader(snapshotBytes(t, tc.f)))
		if err != nil || info.FormatVersion != tc.want {
			t.Fatalf("format %d (%v), want %d", info.FormatVersion, err, tc.want)
		}
	}
}
