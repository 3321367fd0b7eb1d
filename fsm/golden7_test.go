package fsm

import (
	"bytes"
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

// TestGoldenSnapshotV7: a file of format version 7 (frozen) reads, with its limits, as the state
// it was written from: both encode to the same bytes in the current format.
func TestGoldenSnapshotV7(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "golden-v7.snap"))
	if err != nil {
		t.Fatal(err)
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
	if !bytes.Equal(snapshotBytes(t, f), snapshotBytes(t, goldenV7Source(t))) {
		t.Fatal("the version 7 file reads as another state than the one it was written from")
	}
	a := f.State().Auth()
	if got := a.LimitOf("alice"); got != (auth.Limit{CallsPerSec: 100, KeysPerSec: 1000, Streams: 8}) {
		t.Fatalf("alice's limits after the restore: %+v", got)
	}
	if got := len(a.Limits()); got != 3 {
		t.Fatalf("%d limit records after the restore, want 3", got)
	}
}
