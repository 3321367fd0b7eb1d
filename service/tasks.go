package service

import (
	"context"
	"fmt"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// ---- copy and move of replicas (store.ReplicaTask) ------------------------------------------

// taskStartOf validates a CopyStart or MoveStart and builds its command, stamped with this node's
// placement strategy (the leader's when it is proposed). targetField names the request's field of
// target segments in errors.
func (s *Service) taskStartOf(kind store.TaskKind, tenant string, client, key, source []byte, targets [][]byte, targetField string, replicas uint32) (*metadv1.ReplicaTaskStart, error) {
	t, err := tenantOf(tenant)
	if err != nil {
		return nil, err
	}
	c, err := clientOf("client_id", client)
	if err != nil {
		return nil, err
	}
	if _, err := keyOf(key); err != nil {
		return nil, err
	}
	src, err := segmentIDOf("source_segment_id", source)
	if err != nil {
		return nil, err
	}
	if len(targets) > store.MaxMemReplicas {
		return nil, badf(targetField, "%d segments, at most %d", len(targets), store.MaxMemReplicas)
	}
	seen := map[alloc.ID]bool{src: true}
	for i, raw := range targets {
		field := targetField
		if kind == store.TaskCopy {
			field = fmt.Sprintf("%s[%d]", targetField, i)
		}
		id, err := segmentIDOf(field, raw)
		if err != nil {
			return nil, err
		}
		if seen[id] {
			return nil, badf(field, "segment %s is the source or named twice", id)
		}
		seen[id] = true
	}
	if replicas > store.MaxMemReplicas {
		return nil, badf("replicas", "%d not in 0..%d", replicas, store.MaxMemReplicas)
	}
	if len(targets) > 0 && replicas != 0 && int(replicas) != len(targets) {
		return nil, badf("replicas", "%d, but %d target segments named", replicas, len(targets))
	}
	return &metadv1.ReplicaTaskStart{Tenant: t, ClientId: c[:], Key: key, Kind: wire.TaskKindTo(kind),
		SourceSegmentId: source, TargetSegmentIds: targets, Replicas: replicas,
		Placement: wire.StrategyTo(s.cfg.Strategy)}, nil
}

// taskStart is the path CopyStart and MoveStart share: validate, then propose on the leader (or
// forward); it returns the source and the targets as the client sees them.
func (s *Service) taskStart(ctx context.Context, h *metadv1.SessionHeader, build func() (*metadv1.ReplicaTaskStart, error), tenant string, key []byte) (*metadv1.Replica, []*metadv1.Replica, error) {
	ctx, err := withSession(ctx, h)
	if err != nil {
		return nil, nil, fail(err, "", nil)
	}
	m, err := build()
	if err != nil {
		return nil, nil, fail(err, tenant, key)
	}
	if err := s.here(); err != nil {
		return nil, nil, err
	}
	res, err := s.propose(ctx, &metadv1.Command{Op: &metadv1.Command_ReplicaTaskStart{ReplicaTaskStart: m}}, m.Tenant, m.Key)
	if err != nil {
		return nil, nil, err
	}
	if len(res.Replicas) < 2 {
		return nil, nil, internalf("replica task start on %q answered %d replicas", key, len(res.Replicas))
	}
	reps := wire.ReplicasTo(s.state().Segments(), res.Replicas, res.Bytes)
	return reps[0], reps[1:], nil
}

// taskEndRequest is what the End and Revoke requests of a copy or move share.
type taskEndRequest interface {
	GetSession() *metadv1.SessionHeader
	GetTenant() string
	GetClientId() []byte
	GetKey() []byte
}

// taskEnd is the path CopyEnd, CopyRevoke, MoveEnd and MoveRevoke share: validate, then propose
// on the leader (or forward) ReplicaTaskEnd, or ReplicaTaskRevoke when revoke, of kind.
func (s *Service) taskEnd(ctx context.Context, req taskEndRequest, kind store.TaskKind, revoke bool) error {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return fail(err, "", nil)
	}
	tenant, err := tenantOf(req.GetTenant())
	if err != nil {
		return fail(err, req.GetTenant(), req.GetKey())
	}
	c, err := clientOf("client_id", req.GetClientId())
	if err != nil {
		return fail(err, tenant, req.GetKey())
	}
	if _, err := keyOf(req.GetKey()); err != nil {
		return fail(err, tenant, req.GetKey())
	}
	if err := s.here(); err != nil {
		return err
	}
	k := wire.TaskKindTo(kind)
	cmd := &metadv1.Command{Op: &metadv1.Command_ReplicaTaskEnd{ReplicaTaskEnd: &metadv1.ReplicaTaskEnd{
		Tenant: tenant, ClientId: c[:], Key: req.GetKey(), Kind: k}}}
	if revoke {
		cmd = &metadv1.Command{Op: &metadv1.Command_ReplicaTaskRevoke{ReplicaTaskRevoke: &metadv1.ReplicaTaskRevoke{
			Tenant: tenant, ClientId: c[:], Key: req.GetKey(), Kind: k}}}
	}
	if kind == store.TaskMove && !revoke {
		return s.moveEnd(ctx, cmd, store.ReplicaTaskEndRequest{Tenant: tenant, Client: c, Key: string(req.GetKey()), Kind: kind}, req.GetKey())
	}
	_, err = s.propose(ctx, cmd, tenant, req.GetKey())
	return err
}

// moveEnd proposes cmd, the MoveEnd of req, as a removal is proposed (remove.go): MoveEnd frees the
// move's source, which a reader that leased the object may still be reading. So the leader prepares
// it from its state (store.PrepareMoveEnd: OBJECT_HAS_LEASE while a read lease lasts, and the
// caller asks again later) and marks the object, so that no read leases the source while the entry
// is in flight; ha.ProposeMarked clears the mark by the entry's outcome.
func (s *Service) moveEnd(ctx context.Context, cmd *metadv1.Command, req store.ReplicaTaskEndRequest, rawKey []byte) error {
	st, tok, kept, err := s.prepareOne(ctx, func(cur *store.Store) (store.ObjectToken, error) {
		return cur.PrepareMoveEnd(s.cfg.nowNano(), req)
	})
	if err != nil {
		return fail(err, req.Tenant, rawKey)
	}
	if kept != nil {
		return rejected(kept, req.Tenant, rawKey)
	}
	res, err := s.proposeMarked(ctx, st, cmd, []store.ObjectToken{tok})
	if err != nil {
		return fail(err, req.Tenant, rawKey)
	}
	return rejected(&res, req.Tenant, rawKey)
}

// CopyStart places new PROCESSING replicas of an object for the caller to fill from a COMPLETE one.
func (s *Service) CopyStart(ctx context.Context, req *metadv1.CopyStartRequest) (*metadv1.CopyStartResponse, error) {
	src, targets, err := s.taskStart(ctx, req.GetSession(), func() (*metadv1.ReplicaTaskStart, error) {
		return s.taskStartOf(store.TaskCopy, req.GetTenant(), req.GetClientId(), req.GetKey(), req.GetSourceSegmentId(),
			req.GetTargetSegmentIds(), "target_segment_ids", req.GetReplicas())
	}, req.GetTenant(), req.GetKey())
	if err != nil {
		return nil, err
	}
	return &metadv1.CopyStartResponse{Source: src, Targets: targets}, nil
}

// CopyEnd makes a copy's targets COMPLETE.
func (s *Service) CopyEnd(ctx context.Context, req *metadv1.CopyEndRequest) (*metadv1.CopyEndResponse, error) {
	if err := s.taskEnd(ctx, req, store.TaskCopy, false); err != nil {
		return nil, err
	}
	return &metadv1.CopyEndResponse{}, nil
}

// CopyRevoke drops a copy's targets.
func (s *Service) CopyRevoke(ctx context.Context, req *metadv1.CopyRevokeRequest) (*metadv1.CopyRevokeResponse, error) {
	if err := s.taskEnd(ctx, req, store.TaskCopy, true); err != nil {
		return nil, err
	}
	return &metadv1.CopyRevokeResponse{}, nil
}

// MoveStart places one PROCESSING replica for the caller to fill from a COMPLETE one.
func (s *Service) MoveStart(ctx context.Context, req *metadv1.MoveStartRequest) (*metadv1.MoveStartResponse, error) {
	var targets [][]byte
	if t := req.GetTargetSegmentId(); len(t) > 0 {
		targets = [][]byte{t}
	}
	src, tgts, err := s.taskStart(ctx, req.GetSession(), func() (*metadv1.ReplicaTaskStart, error) {
		return s.taskStartOf(store.TaskMove, req.GetTenant(), req.GetClientId(), req.GetKey(), req.GetSourceSegmentId(),
			targets, "target_segment_id", 0)
	}, req.GetTenant(), req.GetKey())
	if err != nil {
		return nil, err
	}
	return &metadv1.MoveStartResponse{Source: src, Target: tgts[0]}, nil
}

// MoveEnd makes a move's target COMPLETE and frees its source.
func (s *Service) MoveEnd(ctx context.Context, req *metadv1.MoveEndRequest) (*metadv1.MoveEndResponse, error) {
	if err := s.taskEnd(ctx, req, store.TaskMove, false); err != nil {
		return nil, err
	}
	return &metadv1.MoveEndResponse{}, nil
}

// MoveRevoke drops a move's target and keeps its source.
func (s *Service) MoveRevoke(ctx context.Context, req *metadv1.MoveRevokeRequest) (*metadv1.MoveRevokeResponse, error) {
	if err := s.taskEnd(ctx, req, store.TaskMove, true); err != nil {
		return nil, err
	}
	return &metadv1.MoveRevokeResponse{}, nil
}

// ---- master-scheduled tasks (store.TaskQueue) -----------------------------------------------

// createTask is the path CreateCopyTask and CreateMoveTask share: validate (as a Start of the
// kind would be, but with an optional source), then propose CreateTask on the leader (or
// forward); it returns the new task's id.
func (s *Service) createTask(ctx context.Context, h *metadv1.SessionHeader, kind store.TaskKind, rawTenant string, key, source []byte,
	targets [][]byte, targetField string, replicas uint32) (uint64, error) {
	ctx, err := withSession(ctx, h)
	if err != nil {
		return 0, fail(err, "", nil)
	}
	tenant, err := tenantOf(rawTenant)
	if err != nil {
		return 0, fail(err, rawTenant, key)
	}
	// taskStartOf checks the fields a Start of the kind has; a task has no client (apply assigns
	// the source segment's owner) and its source is optional (apply resolves it), so both are
	// given a placeholder id there.
	placeholder := make([]byte, 16)
	placeholder[15] = 1
	src := source
	if len(src) == 0 {
		src = placeholder
	}
	m, err := s.taskStartOf(kind, tenant, placeholder, key, src, targets, targetField, replicas)
	if err != nil {
		return 0, fail(err, tenant, key)
	}
	if err := s.here(); err != nil {
		return 0, err
	}
	cmd := &metadv1.Command{Op: &metadv1.Command_CreateTask{CreateTask: &metadv1.CreateTask{Kind: m.Kind, Tenant: tenant, Key: key,
		SourceSegmentId: source, TargetSegmentIds: targets, Replicas: replicas}}}
	res, err := s.propose(ctx, cmd, tenant, key)
	if err != nil {
		return 0, err
	}
	if len(res.Tasks) != 1 {
		return 0, internalf("CreateTask on %q answered %d tasks", key, len(res.Tasks))
	}
	return res.Tasks[0].ID, nil
}

// CreateCopyTask schedules a copy for the worker that owns the source segment.
func (s *Service) CreateCopyTask(ctx context.Context, req *metadv1.CreateCopyTaskRequest) (*metadv1.CreateCopyTaskResponse, error) {
	id, err := s.createTask(ctx, req.GetSession(), store.TaskCopy, req.GetTenant(), req.GetKey(), req.GetSourceSegmentId(),
		req.GetTargetSegmentIds(), "target_segment_ids", req.GetReplicas())
	if err != nil {
		return nil, err
	}
	return &metadv1.CreateCopyTaskResponse{TaskId: id}, nil
}

// CreateMoveTask schedules a move for the worker that owns the source segment.
func (s *Service) CreateMoveTask(ctx context.Context, req *metadv1.CreateMoveTaskRequest) (*metadv1.CreateMoveTaskResponse, error) {
	var targets [][]byte
	if t := req.GetTargetSegmentId(); len(t) > 0 {
		targets = [][]byte{t}
	}
	id, err := s.createTask(ctx, req.GetSession(), store.TaskMove, req.GetTenant(), req.GetKey(), req.GetSourceSegmentId(),
		targets, "target_segment_id", 0)
	if err != nil {
		return nil, err
	}
	return &metadv1.CreateMoveTaskResponse{TaskId: id}, nil
}

// QueryTask returns a task of the request's tenant (a linearizable read on the leader); a task of
// another tenant is TASK_NOT_FOUND, as one that does not exist.
func (s *Service) QueryTask(ctx context.Context, req *metadv1.QueryTaskRequest) (*metadv1.QueryTaskResponse, error) {
	tenant, err := tenantOf(req.GetTenant())
	if err != nil {
		return nil, fail(err, req.GetTenant(), nil)
	}
	st, _, err := s.readState(ctx, false)
	if err != nil {
		return nil, err
	}
	t, err := st.Tasks().Get(req.GetTaskId())
	if err == nil && t.Spec.Tenant != tenant {
		t, err = store.Task{}, &store.Error{Reason: store.TaskNotFound, Msg: fmt.Sprintf("task %d: not found", req.GetTaskId())}
	}
	if err != nil {
		return nil, fail(err, tenant, nil)
	}
	return &metadv1.QueryTaskResponse{Task: wire.TaskTo(&t)}, nil
}

// FetchTasks hands a worker its oldest pending tasks; they turn PROCESSING.
func (s *Service) FetchTasks(ctx context.Context, req *metadv1.FetchTasksRequest) (*metadv1.FetchTasksResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	c, err := clientOf("client_id", req.GetClientId())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	batch := req.GetBatch()
	if batch == 0 {
		batch = 1
	}
	if batch > store.MaxFetchTasks {
		return nil, fail(badf("batch", "%d not in 1..%d", batch, store.MaxFetchTasks), "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	// A worker polls: with nothing pending for it, the answer is an empty read of the state (after
	// the read barrier, like a refusal), not a log entry. A retry whose session kept an answer is
	// left to proposeChecked, which answers it.
	propose, err := s.fromState(ctx, func(st *store.Store) (bool, error) {
		if _, ok := s.answered(ctx); ok {
			return true, nil
		}
		return st.Tasks().Pending(c) > 0, nil
	})
	if err != nil {
		return nil, fail(err, "", nil)
	}
	if !propose {
		return &metadv1.FetchTasksResponse{}, nil
	}
	res, err := s.propose(ctx, &metadv1.Command{Op: &metadv1.Command_FetchTasks{FetchTasks: &metadv1.FetchTasks{ClientId: c[:], Batch: batch}}}, "", nil)
	if err != nil {
		return nil, err
	}
	out := &metadv1.FetchTasksResponse{Tasks: make([]*metadv1.ScheduledTask, len(res.Tasks))}
	for i := range res.Tasks {
		out.Tasks[i] = wire.TaskTo(&res.Tasks[i])
	}
	return out, nil
}

// MarkTaskToComplete records a worker's report of a task it fetched.
func (s *Service) MarkTaskToComplete(ctx context.Context, req *metadv1.MarkTaskToCompleteRequest) (*metadv1.MarkTaskToCompleteResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	c, err := clientOf("client_id", req.GetClientId())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	cmd := &metadv1.Command{Op: &metadv1.Command_CompleteTask{CompleteTask: &metadv1.CompleteTask{ClientId: c[:], TaskId: req.GetTaskId(),
		Success: req.GetSuccess(), Message: req.GetMessage()}}}
	if _, err := s.propose(ctx, cmd, "", nil); err != nil {
		return nil, err
	}
	return &metadv1.MarkTaskToCompleteResponse{}, nil
}

// ListTasks lists a page of the tenant's scheduled tasks, by id (a linearizable read on the
// leader).
func (s *Service) ListTasks(ctx context.Context, req *metadv1.ListTasksRequest) (*metadv1.ListTasksResponse, error) {
	tenant, err := tenantOf(req.GetTenant())
	if err != nil {
		return nil, fail(err, req.GetTenant(), nil)
	}
	limit := int(req.GetLimit())
	if limit == 0 {
		limit = defaultListPage
	}
	if limit > maxListPage {
		return nil, fail(badf("limit", "%d over %d", limit, maxListPage), tenant, nil)
	}
	st, _, err := s.readState(ctx, false)
	if err != nil {
		return nil, err
	}
	tasks, _ := st.Tasks().List()
	out := &metadv1.ListTasksResponse{}
	for i := range tasks {
		t := &tasks[i]
		if t.ID <= req.GetStartAfter() || t.Spec.Tenant != tenant ||
			(req.GetState() != metadv1.TaskState_TASK_STATE_UNSPECIFIED && wire.TaskStateTo(t.State) != req.GetState()) {
			continue
		}
		if len(out.Tasks) == limit {
			out.Truncated = true
			break
		}
		out.Tasks = append(out.Tasks, wire.TaskTo(t))
	}
	return out, nil
}
