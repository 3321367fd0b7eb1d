package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	metadv1 "metad/proto/metadv1"
)

// The fake's copy and move: the source is the object's first replica when its segment is the one
// named, and each target a PROCESSING replica on the segment named (or "placed" when none is);
// End and Revoke answer OBJECT_NO_REPLICATION_TASK unless a task of the key is open.

func (c *fakeCluster) taskStartLocked(tenant string, key, source []byte, targets [][]byte) (*metadv1.Replica, []*metadv1.Replica, error) {
	o, err := c.getLocked(tenant, key)
	if err != nil {
		return nil, nil, err
	}
	if len(o.replicas) == 0 || string(o.replicas[0].GetSegmentId()) != string(source) {
		return nil, nil, reject(codes.NotFound, metadv1.Reason_REASON_REPLICA_NOT_FOUND, "tenant %q key %q: no COMPLETE replica on the source segment", tname(tenant), key)
	}
	if len(targets) == 0 {
		targets = [][]byte{[]byte("placed-segment--")}
	}
	var out []*metadv1.Replica
	for _, t := range targets {
		c.nextRep++
		out = append(out, &metadv1.Replica{ReplicaId: c.nextRep, Tier: metadv1.Tier_TIER_MEMORY, SegmentId: t,
			SegmentEndpoint: "sim://test", Size: o.size, Status: metadv1.ReplicaStatus_REPLICA_STATUS_PROCESSING})
	}
	o.group = "task" // marks the open task (the fake keeps no other use of it in these tests)
	return o.replicas[0], out, nil
}

func (c *fakeCluster) CopyStart(_ context.Context, r *metadv1.CopyStartRequest) (*metadv1.CopyStartResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	src, targets, err := c.taskStartLocked(r.GetTenant(), r.GetKey(), r.GetSourceSegmentId(), r.GetTargetSegmentIds())
	if err != nil {
		return nil, err
	}
	return &metadv1.CopyStartResponse{Source: src, Targets: targets}, nil
}

func (c *fakeCluster) MoveStart(_ context.Context, r *metadv1.MoveStartRequest) (*metadv1.MoveStartResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var targets [][]byte
	if len(r.GetTargetSegmentId()) > 0 {
		targets = [][]byte{r.GetTargetSegmentId()}
	}
	src, tgts, err := c.taskStartLocked(r.GetTenant(), r.GetKey(), r.GetSourceSegmentId(), targets)
	if err != nil {
		return nil, err
	}
	return &metadv1.MoveStartResponse{Source: src, Target: tgts[0]}, nil
}

func (c *fakeCluster) taskEnd(tenant string, key []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, err := c.getLocked(tenant, key)
	if err != nil {
		return err
	}
	if o.group != "task" {
		return reject(codes.FailedPrecondition, metadv1.Reason_REASON_OBJECT_NO_REPLICATION_TASK, "tenant %q key %q: no copy or move in progress", tname(tenant), key)
	}
	o.group = ""
	return nil
}

func (c *fakeCluster) CopyEnd(_ context.Context, r *metadv1.CopyEndRequest) (*metadv1.CopyEndResponse, error) {
	return &metadv1.CopyEndResponse{}, c.taskEnd(r.GetTenant(), r.GetKey())
}

func (c *fakeCluster) CopyRevoke(_ context.Context, r *metadv1.CopyRevokeRequest) (*metadv1.CopyRevokeResponse, error) {
	return &metadv1.CopyRevokeResponse{}, c.taskEnd(r.GetTenant(), r.GetKey())
}

func (c *fakeCluster) MoveEnd(_ context.Context, r *metadv1.MoveEndRequest) (*metadv1.MoveEndResponse, error) {
	return &metadv1.MoveEndResponse{}, c.taskEnd(r.GetTenant(), r.GetKey())
}

func (c *fakeCluster) MoveRevoke(_ context.Context, r *metadv1.MoveRevokeRequest) (*metadv1.MoveRevokeResponse, error) {
	return &metadv1.MoveRevokeResponse{}, c.taskEnd(r.GetTenant(), r.GetKey())
}

// TestCopyAndMoveVerbs: copy start/end/revoke and move start/end/revoke, in table and JSON form,
// with a usage error and a server refusal.
func TestCopyAndMoveVerbs(t *testing.T) {
	c := startCluster(t)
	mountFor(t, c)
	metactl(t, c.addr, "put", "k1", "--size", "4KiB").ok(t)
	var got getView
	metactl(t, c.addr, "get", "k1", "-o", "json").ok(t).json(t, &got)
	src := got.Replicas[0].SegmentID
	tgt := "11111111-2222-4333-8444-555555555555"

	var view taskView
	metactl(t, c.addr, "copy", "start", "k1", "--source", src, "--to", tgt, "-o", "json").ok(t).json(t, &view)
	if view.Kind != "copy" || view.Key != "k1" || len(view.Source) != 1 || len(view.Targets) != 1 ||
		view.Targets[0].Status != "PROCESSING" || view.Targets[0].SegmentID != tgt {
		t.Fatalf("copy start: %+v", view)
	}
	r := metactl(t, c.addr, "copy", "end", "k1").ok(t)
	if !strings.Contains(r.stdout, "copy of k1 ended") {
		t.Fatalf("copy end output:\n%s", r.stdout)
	}
	r = metactl(t, c.addr, "copy", "revoke", "k1")
	if r.code != exitError || !strings.HasPrefix(r.stderr, "error: OBJECT_NO_REPLICATION_TASK") {
		t.Fatalf("copy revoke without a task: %+v", r)
	}
	r = metactl(t, c.addr, "move", "start", "k1", "--source", src).ok(t)
	if !strings.Contains(r.stdout, "move start k1 in tenant default: 1 target PROCESSING") {
		t.Fatalf("move start output:\n%s", r.stdout)
	}
	var end map[string]any
	metactl(t, c.addr, "move", "end", "k1", "-o", "json").ok(t).json(t, &end)
	if end["kind"] != "move" || end["ended"] != true {
		t.Fatalf("move end: %v", end)
	}
	metactl(t, c.addr, "move", "start", "k1", "--source", src, "--to", tgt).ok(t)
	metactl(t, c.addr, "move", "revoke", "k1").ok(t)
	if r := metactl(t, c.addr, "move", "start", "k1"); r.code != exitUsage || !strings.Contains(r.stderr, "--source") {
		t.Fatalf("move start without --source: %+v", r)
	}
	if r := metactl(t, c.addr, "copy", "start", "k1", "--source", tgt); r.code != exitError || !strings.Contains(r.stderr, "REPLICA_NOT_FOUND") {
		t.Fatalf("copy from a segment without a replica: %+v", r)
	}
}

// The fake's scheduled tasks: CreateCopyTask and CreateMoveTask record a PENDING task of a key
// that exists; QueryTask returns it.
func (c *fakeCluster) createTask(tenant string, key []byte, kind metadv1.TaskKind) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, err := c.getLocked(tenant, key)
	if err != nil {
		return 0, err
	}
	c.nextRep++
	if c.tasks == nil {
		c.tasks = map[uint64]*metadv1.ScheduledTask{}
	}
	c.tasks[c.nextRep] = &metadv1.ScheduledTask{TaskId: c.nextRep, Kind: kind, Tenant: tname(tenant), Key: key,
		SourceSegmentId: o.replicas[0].GetSegmentId(), ClientId: o.writer, State: metadv1.TaskState_TASK_STATE_PENDING}
	return c.nextRep, nil
}

func (c *fakeCluster) CreateCopyTask(_ context.Context, r *metadv1.CreateCopyTaskRequest) (*metadv1.CreateCopyTaskResponse, error) {
	id, err := c.createTask(r.GetTenant(), r.GetKey(), metadv1.TaskKind_TASK_KIND_COPY)
	return &metadv1.CreateCopyTaskResponse{TaskId: id}, err
}

func (c *fakeCluster) CreateMoveTask(_ context.Context, r *metadv1.CreateMoveTaskRequest) (*metadv1.CreateMoveTaskResponse, error) {
	id, err := c.createTask(r.GetTenant(), r.GetKey(), metadv1.TaskKind_TASK_KIND_MOVE)
	return &metadv1.CreateMoveTaskResponse{TaskId: id}, err
}

func (c *fakeCluster) QueryTask(_ context.Context, r *metadv1.QueryTaskRequest) (*metadv1.QueryTaskResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tasks[r.GetTaskId()]
	if t == nil || t.GetTenant() != tname(r.GetTenant()) {
		return nil, reject(codes.NotFound, metadv1.Reason_REASON_TASK_NOT_FOUND, "task %d: not found", r.GetTaskId())
	}
	return &metadv1.QueryTaskResponse{Task: t}, nil
}

func (c *fakeCluster) ListTasks(_ context.Context, r *metadv1.ListTasksRequest) (*metadv1.ListTasksResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &metadv1.ListTasksResponse{}
	for id := uint64(1); id <= c.nextRep; id++ {
		if t := c.tasks[id]; t != nil && t.GetTenant() == tname(r.GetTenant()) &&
			(r.GetState() == 0 || r.GetState() == t.GetState()) {
			out.Tasks = append(out.Tasks, t)
		}
	}
	return out, nil
}

// TestTaskVerbs: task create-copy, create-move, ls and show, in table and JSON form.
func TestTaskVerbs(t *testing.T) {
	c := startCluster(t)
	mountFor(t, c)
	metactl(t, c.addr, "put", "k1", "--size", "4KiB").ok(t)
	var created map[string]any
	metactl(t, c.addr, "task", "create-copy", "k1", "-o", "json").ok(t).json(t, &created)
	id, ok := created["task_id"].(float64)
	if !ok || created["kind"] != "copy" {
		t.Fatalf("create-copy: %v", created)
	}
	r := metactl(t, c.addr, "task", "create-move", "k1").ok(t)
	if !strings.Contains(r.stdout, "move task") || !strings.Contains(r.stdout, "scheduled for k1") {
		t.Fatalf("create-move output:\n%s", r.stdout)
	}
	var show scheduledView
	metactl(t, c.addr, "task", "show", strconv.FormatUint(uint64(id), 10), "-o", "json").ok(t).json(t, &show)
	if show.ID != uint64(id) || show.Kind != "copy" || show.State != "PENDING" || show.Key != "k1" || show.Source == "" {
		t.Fatalf("task show: %+v", show)
	}
	r = metactl(t, c.addr, "task", "show", "12345")
	if r.code != exitError || !strings.HasPrefix(r.stderr, "error: TASK_NOT_FOUND") {
		t.Fatalf("show of an unknown task: %+v", r)
	}
	var ls taskListView
	metactl(t, c.addr, "task", "ls", "--state", "pending", "-o", "json").ok(t).json(t, &ls)
	if len(ls.Tasks) != 2 || ls.Tasks[0].ID != uint64(id) || ls.Tasks[1].Kind != "move" || ls.Truncated {
		t.Fatalf("task ls: %+v", ls)
	}
	if r := metactl(t, c.addr, "task", "ls").ok(t); !strings.Contains(r.stdout, "TASK") || !strings.Contains(r.stdout, "PENDING") {
		t.Fatalf("task ls output:\n%s", r.stdout)
	}
	if r := metactl(t, c.addr, "task", "ls", "--state", "DONE"); r.code != exitUsage {
		t.Fatalf("ls with a bad state: %+v", r)
	}
	if r := metactl(t, c.addr, "task", "show", "x"); r.code != exitUsage {
		t.Fatalf("show of a bad id: %+v", r)
	}
}
