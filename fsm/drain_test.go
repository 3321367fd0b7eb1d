package fsm

import (
	"bytes"
	"io"
	"testing"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
)

// TestDrainSnapshotRoundTrip: a running drain job with a move in flight survives a snapshot and
// a restore (record format 4): the restored state re-encodes to the same bytes, the drained
// segment stays closing, and the move's report counts for the job on the restored node as on the
// original.
func TestDrainSnapshotRoundTrip(t *testing.T) {
	f := newFSM(t)
	g := newGen(9)
	idx := uint64(1)
	applyCmds(t, f, idx, g.now, g.setup()...)
	cl := genClients[0] // owns segment 1
	seg := uuid(0x5e, 1)
	var cmds []*metadv1.Command
	for _, k := range []string{"a", "b"} {
		cmds = append(cmds,
			&metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{Tenant: "default", ClientId: cl, Key: []byte(k), Size: 100,
				Config: &metadv1.ReplicaConfig{MemoryReplicas: 1, PreferredSegmentIds: [][]byte{seg}}}}},
			&metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{Tenant: "default", ClientId: cl, Key: []byte(k)}}})
	}
	idx++
	for i, r := range applyCmds(t, f, idx, g.now, cmds...) {
		if r.Reason != store.OK {
			t.Fatalf("put %d: %s %s", i, r.Reason, r.Message)
		}
	}
	idx++
	res := applyCmds(t, f, idx, g.now+1e9,
		&metadv1.Command{Op: &metadv1.Command_StartDrain{StartDrain: &metadv1.StartDrain{SegmentIds: [][]byte{seg}, MaxConcurrency: 1}}},
		&metadv1.Command{Op: &metadv1.Command_ScheduleDrainMoves{ScheduleDrainMoves: &metadv1.ScheduleDrainMoves{DrainId: 1,
			Moves: []*metadv1.DrainMove{{Tenant: "default", Key: []byte("a"), SourceSegmentId: seg}, {Tenant: "default", Key: []byte("b"), SourceSegmentId: seg}}}}},
		&metadv1.Command{Op: &metadv1.Command_FetchTasks{FetchTasks: &metadv1.FetchTasks{ClientId: cl, Batch: 8}}},
		&metadv1.Command{Op: &metadv1.Command_StartDrain{StartDrain: &metadv1.StartDrain{SegmentIds: [][]byte{seg}, MaxConcurrency: 1}}},
		&metadv1.Command{Op: &metadv1.Command_CancelDrain{CancelDrain: &metadv1.CancelDrain{DrainId: 7}}},
		&metadv1.Command{Op: &metadv1.Command_FinishDrain{FinishDrain: &metadv1.FinishDrain{DrainId: 1}}})
	if res[0].Reason != store.OK || res[0].Drain == nil || res[0].Drain.ID != 1 || res[0].Drain.State != store.DrainRunning {
		t.Fatalf("StartDrain: %+v", res[0])
	}
	if r := res[1]; r.Reason != store.OK || r.Count != 1 || r.Items[1].Reason != store.InvalidParams {
		t.Fatalf("ScheduleDrainMoves past max_concurrency: %+v", r)
	}
	if len(res[2].Tasks) != 1 || res[2].Tasks[0].Spec.Drain != 1 {
		t.Fatalf("fetched %+v", res[2].Tasks)
	}
	for i, want := range []store.Reason{store.SegmentDraining, store.DrainNotFound, store.InvalidParams} {
		if got := res[3+i].Reason; got != want {
			t.Fatalf("command %d: %s (%s), want %s", 3+i, got, res[3+i].Message, want)
		}
	}
	data := snapshotBytes(t, f)
	info, err := snapshot.Inspect(bytes.NewReader(data))
	if err != nil || info.Drains != 1 || info.Tasks != 1 {
		t.Fatalf("inspect: %+v, %v", info, err)
	}
	g2 := newFSM(t)
	if err := g2.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, g2), data) {
		t.Fatal("a state with a drain job does not re-encode to the same bytes")
	}
	for _, fs := range []*FSM{f, g2} {
		r := applyCmds(t, fs, idx+1, g.now+2e9,
			&metadv1.Command{Op: &metadv1.Command_CompleteTask{CompleteTask: &metadv1.CompleteTask{ClientId: cl, TaskId: 1, Success: false}}},
			&metadv1.Command{Op: &metadv1.Command_CancelDrain{CancelDrain: &metadv1.CancelDrain{DrainId: 1}}})
		if r[0].Reason != store.OK || r[1].Drain == nil || r[1].Drain.Failed != 1 || r[1].Drain.State != store.DrainCancelled || len(r[1].Drain.InFlight) != 0 {
			t.Fatalf("after restore: %+v", r)
		}
	}
	if !bytes.Equal(stateOnly(t, snapshotBytes(t, f)), stateOnly(t, snapshotBytes(t, g2))) {
		t.Fatal("the restored node's drain jobs diverged")
	}
}
