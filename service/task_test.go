package service_test

import (
	"strings"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/service/servicetest"
	"metad/store"
)

// TestCopyAndMove: the six calls, with their refusals: a copy and a
// move complete, a refused Remove and Upsert while one runs, and the named errors of Start and
// End; a refusal the leader's state decides takes no log entry; a session retry of CopyStart gets
// the first answer.
func TestCopyAndMove(t *testing.T) {
	clk := servicetest.NewClock()
	h := newHarness(t, clk)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.mount(t, clientB, segB)
	if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k"), Size: 100,
		Config: &metadv1.ReplicaConfig{PreferredSegmentIds: [][]byte{idb(segA)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}

	before := h.b.Proposals.Load()
	_, err := h.svc.CopyStart(ctx, &metadv1.CopyStartRequest{ClientId: idb(clientB), Key: []byte("k"), SourceSegmentId: idb(segB)})
	wantReason(t, err, store.ReplicaNotFound)
	_, err = h.svc.CopyStart(ctx, &metadv1.CopyStartRequest{ClientId: idb(clientB), Key: []byte("nope"), SourceSegmentId: idb(segA)})
	wantReason(t, err, store.ObjectNotFound)
	_, err = h.svc.CopyEnd(ctx, &metadv1.CopyEndRequest{ClientId: idb(clientB), Key: []byte("k")})
	wantReason(t, err, store.ObjectNoReplicationTask)
	if n := h.b.Proposals.Load(); n != before {
		t.Fatalf("refusals from the state took %d log entries", n-before)
	}
	_, err = h.svc.CopyStart(ctx, &metadv1.CopyStartRequest{ClientId: idb(clientB), Key: []byte("k"), SourceSegmentId: idb(segA),
		TargetSegmentIds: [][]byte{idb(segA)}})
	wantReason(t, err, store.InvalidParams)
	_, err = h.svc.CopyStart(ctx, &metadv1.CopyStartRequest{ClientId: idb(clientB), Key: []byte("k"), SourceSegmentId: []byte("short")})
	if wantReason(t, err, store.InvalidParams); !strings.Contains(err.Error(), "source_segment_id") {
		t.Fatalf("%v does not name source_segment_id", err)
	}

	open, err := h.svc.OpenSession(ctx, &metadv1.OpenSessionRequest{ClientId: idb(clientB)})
	if err != nil {
		t.Fatal(err)
	}
	hdr := &metadv1.SessionHeader{SessionId: open.GetSessionId(), Seq: 1, FirstUnackedSeq: 1}
	req := &metadv1.CopyStartRequest{ClientId: idb(clientB), Key: []byte("k"), SourceSegmentId: idb(segA),
		TargetSegmentIds: [][]byte{idb(segB)}, Session: hdr}
	resp, err := h.svc.CopyStart(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetSource().GetStatus() != metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE || len(resp.GetTargets()) != 1 ||
		resp.GetTargets()[0].GetStatus() != metadv1.ReplicaStatus_REPLICA_STATUS_PROCESSING ||
		resp.GetTargets()[0].GetSize() != 100 || resp.GetTargets()[0].GetSegmentEndpoint() == "" {
		t.Fatalf("CopyStart answered %v", resp)
	}
	again, err := h.svc.CopyStart(ctx, req) // a retry of the same seq: the first answer
	if err != nil || again.GetTargets()[0].GetReplicaId() != resp.GetTargets()[0].GetReplicaId() {
		t.Fatalf("retried CopyStart: %v, %v", again, err)
	}
	_, err = h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("k"), Force: true})
	wantReason(t, err, store.ObjectHasReplicationTask)
	_, err = h.svc.UpsertStart(ctx, &metadv1.UpsertStartRequest{ClientId: idb(clientA), Key: []byte("k"), Size: 100})
	wantReason(t, err, store.ObjectHasReplicationTask)
	got, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("k")})
	if err != nil || len(got.GetReplicas()) != 1 {
		t.Fatalf("Get during a copy: %v, %v", got, err)
	}
	_, err = h.svc.CopyEnd(ctx, &metadv1.CopyEndRequest{ClientId: idb(clientA), Key: []byte("k")})
	wantReason(t, err, store.IllegalClient)
	_, err = h.svc.MoveEnd(ctx, &metadv1.MoveEndRequest{ClientId: idb(clientB), Key: []byte("k")})
	wantReason(t, err, store.InvalidParams)
	if _, err := h.svc.CopyEnd(ctx, &metadv1.CopyEndRequest{ClientId: idb(clientB), Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	if got, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("k")}); err != nil || len(got.GetReplicas()) != 2 {
		t.Fatalf("Get after CopyEnd: %v, %v", got, err)
	}

	// Move A's replica: placed on the one segment that holds none, then named.
	segC := segA
	segC[15] = 0xcc
	h.mount(t, clientB, segC)
	mv, err := h.svc.MoveStart(ctx, &metadv1.MoveStartRequest{ClientId: idb(clientB), Key: []byte("k"), SourceSegmentId: idb(segA)})
	if err != nil || mv.GetTarget().GetStatus() != metadv1.ReplicaStatus_REPLICA_STATUS_PROCESSING {
		t.Fatalf("MoveStart: %v, %v", mv, err)
	}
	if seg := mv.GetTarget().GetSegmentId(); string(seg) != string(idb(segC)) {
		t.Fatalf("move placed on %x, want the one segment without a replica", seg)
	}
	_, err = h.svc.CopyStart(ctx, &metadv1.CopyStartRequest{ClientId: idb(clientB), Key: []byte("k"), SourceSegmentId: idb(segB)})
	wantReason(t, err, store.ObjectHasReplicationTask)
	if _, err := h.svc.MoveRevoke(ctx, &metadv1.MoveRevokeRequest{ClientId: idb(clientB), Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.MoveStart(ctx, &metadv1.MoveStartRequest{ClientId: idb(clientB), Key: []byte("k"), SourceSegmentId: idb(segA),
		TargetSegmentId: idb(segC)}); err != nil {
		t.Fatal(err)
	}
	// The Gets above leased the object: a reader may still read the source, so MoveEnd waits
	// for the lease to end (nothing changes meanwhile), then frees the source.
	_, err = h.svc.MoveEnd(ctx, &metadv1.MoveEndRequest{ClientId: idb(clientB), Key: []byte("k")})
	wantReason(t, err, store.ObjectHasLease)
	if got, err := h.b.Store().Peek("default", "k"); err != nil || len(got.Replicas) != 2 {
		t.Fatalf("a MoveEnd refused for a lease changed the object: %+v, %v", got, err)
	}
	clk.Advance(service.DefaultConfig().LeaseTTL + time.Millisecond)
	if _, err := h.svc.MoveEnd(ctx, &metadv1.MoveEndRequest{ClientId: idb(clientB), Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	got, err = h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("k")})
	if err != nil || len(got.GetReplicas()) != 2 {
		t.Fatalf("Get after MoveEnd: %v, %v", got, err)
	}
	for _, r := range got.GetReplicas() {
		if string(r.GetSegmentId()) == string(idb(segA)) {
			t.Fatal("the moved replica is still on its source segment")
		}
	}
	if err := h.b.Store().CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestScheduledTasks: a copy task goes to the owner of its source segment, which fetches
// it (once) and reports it; QueryTask shows each state, and a task of another tenant is not found.
func TestScheduledTasks(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.put(t, "", "k", 100)
	created, err := h.svc.CreateCopyTask(ctx, &metadv1.CreateCopyTaskRequest{Key: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	q, err := h.svc.QueryTask(ctx, &metadv1.QueryTaskRequest{TaskId: created.GetTaskId()})
	if err != nil || q.GetTask().GetState() != metadv1.TaskState_TASK_STATE_PENDING ||
		string(q.GetTask().GetClientId()) != string(idb(clientA)) || string(q.GetTask().GetSourceSegmentId()) != string(idb(segA)) {
		t.Fatalf("QueryTask: %v, %v", q, err)
	}
	if _, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "other"}); err != nil {
		t.Fatal(err)
	}
	_, err = h.svc.QueryTask(ctx, &metadv1.QueryTaskRequest{Tenant: "other", TaskId: created.GetTaskId()})
	wantReason(t, err, store.TaskNotFound)
	_, err = h.svc.CreateMoveTask(ctx, &metadv1.CreateMoveTaskRequest{Key: []byte("nope")})
	wantReason(t, err, store.ObjectNotFound)

	before := h.b.Proposals.Load()
	none, err := h.svc.FetchTasks(ctx, &metadv1.FetchTasksRequest{ClientId: idb(clientB), Batch: 8})
	if err != nil || len(none.GetTasks()) != 0 {
		t.Fatalf("another worker fetched %v, %v", none, err)
	}
	if n := h.b.Proposals.Load(); n != before {
		t.Fatalf("an empty fetch took %d log entries", n-before)
	}
	got, err := h.svc.FetchTasks(ctx, &metadv1.FetchTasksRequest{ClientId: idb(clientA), Batch: 8})
	if err != nil || len(got.GetTasks()) != 1 || got.GetTasks()[0].GetState() != metadv1.TaskState_TASK_STATE_PROCESSING {
		t.Fatalf("FetchTasks: %v, %v", got, err)
	}
	again, err := h.svc.FetchTasks(ctx, &metadv1.FetchTasksRequest{ClientId: idb(clientA), Batch: 8})
	if err != nil || len(again.GetTasks()) != 0 {
		t.Fatalf("a task was handed out twice: %v, %v", again, err)
	}
	_, err = h.svc.MarkTaskToComplete(ctx, &metadv1.MarkTaskToCompleteRequest{ClientId: idb(clientB), TaskId: created.GetTaskId(), Success: true})
	wantReason(t, err, store.IllegalClient)
	if _, err := h.svc.MarkTaskToComplete(ctx, &metadv1.MarkTaskToCompleteRequest{ClientId: idb(clientA), TaskId: created.GetTaskId(),
		Success: true, Message: "copied"}); err != nil {
		t.Fatal(err)
	}
	q, err = h.svc.QueryTask(ctx, &metadv1.QueryTaskRequest{TaskId: created.GetTaskId()})
	if err != nil || q.GetTask().GetState() != metadv1.TaskState_TASK_STATE_SUCCESS || q.GetTask().GetMessage() != "copied" {
		t.Fatalf("QueryTask after completion: %v, %v", q, err)
	}
	_, err = h.svc.MarkTaskToComplete(ctx, &metadv1.MarkTaskToCompleteRequest{ClientId: idb(clientA), TaskId: 77, Success: true})
	wantReason(t, err, store.TaskNotFound)

	// ListTasks pages by id, filters by state, and shows only the tenant's tasks.
	for range 2 {
		if _, err := h.svc.CreateMoveTask(ctx, &metadv1.CreateMoveTaskRequest{Key: []byte("k")}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := h.svc.ListTasks(ctx, &metadv1.ListTasksRequest{Limit: 2})
	if err != nil || len(page.GetTasks()) != 2 || !page.GetTruncated() || page.GetTasks()[0].GetTaskId() != created.GetTaskId() {
		t.Fatalf("first page: %v, %v", page, err)
	}
	page, err = h.svc.ListTasks(ctx, &metadv1.ListTasksRequest{StartAfter: page.GetTasks()[1].GetTaskId()})
	if err != nil || len(page.GetTasks()) != 1 || page.GetTruncated() {
		t.Fatalf("second page: %v, %v", page, err)
	}
	pending, err := h.svc.ListTasks(ctx, &metadv1.ListTasksRequest{State: metadv1.TaskState_TASK_STATE_PENDING})
	if err != nil || len(pending.GetTasks()) != 2 {
		t.Fatalf("pending: %v, %v", pending, err)
	}
	if other, err := h.svc.ListTasks(ctx, &metadv1.ListTasksRequest{Tenant: "other"}); err != nil || len(other.GetTasks()) != 0 {
		t.Fatalf("another tenant's list: %v, %v", other, err)
	}
}
