package client

import (
	"context"

	metadv1 "metad/proto/metadv1"
)

// Copy and move of replicas. The caller (usually a worker) copies the bytes of the COMPLETE source
// replica into the PROCESSING targets itself, then ends the task; until it does, the object is
// protected from eviction and removal and refuses UpsertStart, and a task older than the
// cluster's put_release_timeout is revoked by the leader. Only this client may end or revoke a
// task it started. Segment ids are 16-byte UUIDs (ParseUUID parses the string form).

// CopyStart places new PROCESSING replicas of key for this client to fill from the COMPLETE
// replica on segment source: on the target segments named (one that already holds a replica of
// the object is skipped), or, with none named, on replicas segments of the source's tier (0 means
// 1). It returns the source and the targets.
func (c *Client) CopyStart(ctx context.Context, tenant, key string, source []byte, targets [][]byte, replicas uint32) (*metadv1.Replica, []*metadv1.Replica, error) {
	resp, err := call(ctx, c, metadv1.MetadataClient.CopyStart, &metadv1.CopyStartRequest{
		Tenant: tenant, ClientId: c.idBytes, Key: []byte(key), SourceSegmentId: source,
		TargetSegmentIds: targets, Replicas: replicas,
	})
	return resp.GetSource(), resp.GetTargets(), err
}

// CopyEnd makes this client's copy of key COMPLETE.
func (c *Client) CopyEnd(ctx context.Context, tenant, key string) error {
	_, err := call(ctx, c, metadv1.MetadataClient.CopyEnd, &metadv1.CopyEndRequest{
		Tenant: tenant, ClientId: c.idBytes, Key: []byte(key)})
	return err
}

// CopyRevoke drops the targets of this client's copy of key.
func (c *Client) CopyRevoke(ctx context.Context, tenant, key string) error {
	_, err := call(ctx, c, metadv1.MetadataClient.CopyRevoke, &metadv1.CopyRevokeRequest{
		Tenant: tenant, ClientId: c.idBytes, Key: []byte(key)})
	return err
}

// MoveStart places one PROCESSING replica of key (on segment target, or with target nil on a
// segment of the source's tier placed as usual) for this client to fill from the COMPLETE replica
// on segment source. It returns the source and the target.
func (c *Client) MoveStart(ctx context.Context, tenant, key string, source, target []byte) (*metadv1.Replica, *metadv1.Replica, error) {
	resp, err := call(ctx, c, metadv1.MetadataClient.MoveStart, &metadv1.MoveStartRequest{
		Tenant: tenant, ClientId: c.idBytes, Key: []byte(key), SourceSegmentId: source, TargetSegmentId: target,
	})
	return resp.GetSource(), resp.GetTarget(), err
}

// MoveEnd makes the target of this client's move of key COMPLETE and frees its source.
func (c *Client) MoveEnd(ctx context.Context, tenant, key string) error {
	_, err := call(ctx, c, metadv1.MetadataClient.MoveEnd, &metadv1.MoveEndRequest{
		Tenant: tenant, ClientId: c.idBytes, Key: []byte(key)})
	return err
}

// MoveRevoke drops the target of this client's move of key; the source stays.
func (c *Client) MoveRevoke(ctx context.Context, tenant, key string) error {
	_, err := call(ctx, c, metadv1.MetadataClient.MoveRevoke, &metadv1.MoveRevokeRequest{
		Tenant: tenant, ClientId: c.idBytes, Key: []byte(key)})
	return err
}

// Master-scheduled tasks. An operator or router schedules a copy or move with CreateCopyTask or
// CreateMoveTask; the cluster assigns it to the worker that owns the source segment, which
// fetches it (FetchTasks), runs CopyStart/MoveStart, copies the bytes, ends the copy or move,
// and reports (MarkTaskToComplete). QueryTask shows a task's state, finished ones for an hour.

// CreateCopyTask schedules a copy of key's replica on source (nil: its first COMPLETE replica's
// segment) to targets (none: replicas placed by the worker's CopyStart) and returns the task id.
func (c *Client) CreateCopyTask(ctx context.Context, tenant, key string, source []byte, targets [][]byte, replicas uint32) (uint64, error) {
	resp, err := call(ctx, c, metadv1.MetadataClient.CreateCopyTask, &metadv1.CreateCopyTaskRequest{
		Tenant: tenant, Key: []byte(key), SourceSegmentId: source, TargetSegmentIds: targets, Replicas: replicas})
	return resp.GetTaskId(), err
}

// CreateMoveTask schedules a move of key's replica on source (nil: its first COMPLETE replica's
// segment) to target (nil: placed by the worker's MoveStart) and returns the task id.
func (c *Client) CreateMoveTask(ctx context.Context, tenant, key string, source, target []byte) (uint64, error) {
	resp, err := call(ctx, c, metadv1.MetadataClient.CreateMoveTask, &metadv1.CreateMoveTaskRequest{
		Tenant: tenant, Key: []byte(key), SourceSegmentId: source, TargetSegmentId: target})
	return resp.GetTaskId(), err
}

// QueryTask returns a task of the tenant.
func (c *Client) QueryTask(ctx context.Context, tenant string, id uint64) (*metadv1.ScheduledTask, error) {
	resp, err := call(ctx, c, metadv1.MetadataClient.QueryTask, &metadv1.QueryTaskRequest{Tenant: tenant, TaskId: id})
	return resp.GetTask(), err
}

// FetchTasks takes up to batch (0 means 1) of this client's oldest pending tasks; they turn
// PROCESSING. None is no error.
func (c *Client) FetchTasks(ctx context.Context, batch uint32) ([]*metadv1.ScheduledTask, error) {
	resp, err := call(ctx, c, metadv1.MetadataClient.FetchTasks, &metadv1.FetchTasksRequest{ClientId: c.idBytes, Batch: batch})
	return resp.GetTasks(), err
}

// MarkTaskToComplete reports the outcome of a task this client fetched.
func (c *Client) MarkTaskToComplete(ctx context.Context, id uint64, success bool, message string) error {
	_, err := call(ctx, c, metadv1.MetadataClient.MarkTaskToComplete, &metadv1.MarkTaskToCompleteRequest{
		ClientId: c.idBytes, TaskId: id, Success: success, Message: message})
	return err
}

// ListTasks returns a page of the tenant's scheduled tasks after id startAfter (0: from the
// first), at most limit (0 means 1024), only those in state (UNSPECIFIED: all), and whether more
// follow.
func (c *Client) ListTasks(ctx context.Context, tenant string, startAfter uint64, limit uint32, state metadv1.TaskState) ([]*metadv1.ScheduledTask, bool, error) {
	resp, err := call(ctx, c, metadv1.MetadataClient.ListTasks, &metadv1.ListTasksRequest{
		Tenant: tenant, StartAfter: startAfter, Limit: limit, State: state})
	return resp.GetTasks(), resp.GetTruncated(), err
}
