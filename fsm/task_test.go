package fsm

import (
	"bytes"
	"io"
	"testing"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
)

// TestReplicaTaskSnapshotRoundTrip: a state with a copy and a move in progress survives a snapshot
// and a restore (record format 4): the restored tasks re-encode to the same bytes, and End and
// Revoke work on the restored node as on the original.
func TestReplicaTaskSnapshotRoundTrip(t *testing.T) {
	f := newFSM(t)
	g := newGen(7)
	idx := uint64(1)
	applyCmds(t, f, idx, g.now, g.setup()...)
	cl := genClients[0]
	put := func(key string, seg byte) {
		idx++
		res := applyCmds(t, f, idx, g.now,
			&metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{Tenant: "default", ClientId: cl, Key: []byte(key), Size: 1000,
				Config: &metadv1.ReplicaConfig{MemoryReplicas: 1, PreferredSegmentIds: [][]byte{uuid(0x5e, seg)}}}}},
			&metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{Tenant: "default", ClientId: cl, Key: []byte(key)}}})
		for _, r := range res {
			if r.Reason != store.OK {
				t.Fatalf("put %s: %s %s", key, r.Reason, r.Message)
			}
		}
	}
	put("c", 1)
	put("m", 2)
	idx++
	res := applyCmds(t, f, idx, g.now+1e9,
		&metadv1.Command{Op: &metadv1.Command_ReplicaTaskStart{ReplicaTaskStart: &metadv1.ReplicaTaskStart{Tenant: "default", ClientId: cl,
			Key: []byte("c"), Kind: metadv1.TaskKind_TASK_KIND_COPY, SourceSegmentId: uuid(0x5e, 1),
			TargetSegmentIds: [][]byte{uuid(0x5e, 2), uuid(0x5e, 3)}}}},
		&metadv1.Command{Op: &metadv1.Command_ReplicaTaskStart{ReplicaTaskStart: &metadv1.ReplicaTaskStart{Tenant: "default", ClientId: cl,
			Key: []byte("m"), Kind: metadv1.TaskKind_TASK_KIND_MOVE, SourceSegmentId: uuid(0x5e, 2),
			Placement: metadv1.PlacementStrategy_PLACEMENT_STRATEGY_RANDOM}}})
	for i, r := range res {
		if r.Reason != store.OK || len(r.Replicas) < 2 || r.Bytes != 1000 {
			t.Fatalf("task start %d: %s %s, %d replicas, size %d", i, r.Reason, r.Message, len(r.Replicas), r.Bytes)
		}
	}
	data := snapshotBytes(t, f)
	info, err := snapshot.Inspect(bytes.NewReader(data))
	if err != nil || info.FormatVersion < 4 { // the first format with replica tasks
		t.Fatalf("inspect: %+v, %v", info, err)
	}
	g2 := newFSM(t)
	if err := g2.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, g2), data) {
		t.Fatal("a state with replica tasks does not re-encode to the same bytes")
	}
	for _, st := range []*FSM{f, g2} {
		for _, k := range []string{"c", "m"} {
			r, err := st.Store().Peek("default", k)
			if err != nil || len(r.Replicas) != 1 {
				t.Fatalf("%s during its task: %+v, %v", k, r, err)
			}
		}
	}
	end := func(fs *FSM, key string, kind metadv1.TaskKind) store.Result {
		return applyCmds(t, fs, idx+1, g.now+2e9, &metadv1.Command{Op: &metadv1.Command_ReplicaTaskEnd{ReplicaTaskEnd: &metadv1.ReplicaTaskEnd{
			Tenant: "default", ClientId: cl, Key: []byte(key), Kind: kind}}})[0]
	}
	for _, fs := range []*FSM{f, g2} {
		if r := end(fs, "c", metadv1.TaskKind_TASK_KIND_COPY); r.Reason != store.OK {
			t.Fatalf("CopyEnd: %s %s", r.Reason, r.Message)
		}
		if r := end(fs, "m", metadv1.TaskKind_TASK_KIND_MOVE); r.Reason != store.OK {
			t.Fatalf("MoveEnd: %s %s", r.Reason, r.Message)
		}
		if err := fs.Store().CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(stateOnly(t, snapshotBytes(t, f)), stateOnly(t, snapshotBytes(t, g2))) {
		t.Fatal("the restored node's state diverged after End")
	}
	if c, _ := g2.Store().Peek("default", "c"); len(c.Replicas) != 3 {
		t.Fatalf("copied object has %d replicas, want 3", len(c.Replicas))
	}
	if m, _ := g2.Store().Peek("default", "m"); len(m.Replicas) != 1 || m.Replicas[0].Extent.Segment == [16]byte(uuid(0x5e, 2)) {
		t.Fatalf("moved object: %+v", m.Replicas)
	}
}

// TestScheduledTaskSnapshotRoundTrip: the scheduled tasks (pending, processing, finished) and the
// task id counter survive a snapshot and a restore; the restored queue goes on as the original.
func TestScheduledTaskSnapshotRoundTrip(t *testing.T) {
	f := newFSM(t)
	g := newGen(9)
	idx := uint64(1)
	applyCmds(t, f, idx, g.now, g.setup()...)
	cl := genClients[0] // owns segment 1
	idx++
	res := applyCmds(t, f, idx, g.now,
		&metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{Tenant: "default", ClientId: cl, Key: []byte("k"), Size: 100,
			Config: &metadv1.ReplicaConfig{MemoryReplicas: 1, PreferredSegmentIds: [][]byte{uuid(0x5e, 1)}}}}},
		&metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{Tenant: "default", ClientId: cl, Key: []byte("k")}}})
	if res[0].Reason != store.OK || res[1].Reason != store.OK {
		t.Fatalf("put: %+v", res)
	}
	create := &metadv1.Command{Op: &metadv1.Command_CreateTask{CreateTask: &metadv1.CreateTask{Kind: metadv1.TaskKind_TASK_KIND_COPY,
		Tenant: "default", Key: []byte("k")}}}
	idx++
	res = applyCmds(t, f, idx, g.now+1e9, create, create, create,
		&metadv1.Command{Op: &metadv1.Command_FetchTasks{FetchTasks: &metadv1.FetchTasks{ClientId: cl, Batch: 2}}},
		&metadv1.Command{Op: &metadv1.Command_CompleteTask{CompleteTask: &metadv1.CompleteTask{ClientId: cl, TaskId: 1, Success: true}}})
	for i, r := range res {
		if r.Reason != store.OK {
			t.Fatalf("command %d: %s %s", i, r.Reason, r.Message)
		}
	}
	if len(res[0].Tasks) != 1 || res[0].Tasks[0].ID != 1 || len(res[3].Tasks) != 2 {
		t.Fatalf("results: %+v", res)
	}
	data := snapshotBytes(t, f)
	info, err := snapshot.Inspect(bytes.NewReader(data))
	if err != nil || info.Tasks != 3 {
		t.Fatalf("inspect: %+v, %v", info, err)
	}
	g2 := newFSM(t)
	if err := g2.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, g2), data) {
		t.Fatal("a state with scheduled tasks does not re-encode to the same bytes")
	}
	for _, fs := range []*FSM{f, g2} {
		r := applyCmds(t, fs, idx+1, g.now+2e9, create,
			&metadv1.Command{Op: &metadv1.Command_FetchTasks{FetchTasks: &metadv1.FetchTasks{ClientId: cl, Batch: 8}}})
		if r[0].Tasks[0].ID != 4 || len(r[1].Tasks) != 2 || r[1].Tasks[0].ID != 3 {
			t.Fatalf("after restore: created %+v, fetched %+v", r[0].Tasks, r[1].Tasks)
		}
	}
	if !bytes.Equal(stateOnly(t, snapshotBytes(t, f)), stateOnly(t, snapshotBytes(t, g2))) {
		t.Fatal("the restored node's queue diverged")
	}
}
