package client

import (
	"context"
	"time"

	"metad/proto/metadv1"
)

// Drain jobs. An operator drains segments to take a cache node out of service without losing
// its blocks: the segments take no new allocation from the start, and the cluster schedules a
// move of every object on them to the worker that owns each (FetchTasks, MoveStart, MoveEnd,
// MarkTaskToComplete), at most maxConcurrency at a time, until they hold no replica. The job is
// replicated, so it survives a leader change.

// StartDrain starts a drain of segments (16-byte ids) to targets (none: placed by each move),
// with at most maxConcurrency moves in flight (0 means 16), and returns the job.
func (c *Client) StartDrain(ctx context.Context, segments, targets [][]byte, maxConcurrency uint32) (*metadv1.DrainJob, error) {
	resp, err := callAdmin(ctx, c, metadv1.AdminClient.StartDrain, &metadv1.StartDrainRequest{
		SegmentIds: segments, TargetSegmentIds: targets, MaxConcurrency: maxConcurrency})
	return resp.GetDrain(), err
}

// DrainStatus returns drain job id with its progress, or every job kept when id is 0.
func (c *Client) DrainStatus(ctx context.Context, id uint64) ([]*metadv1.DrainJob, error) {
	resp, err := callAdmin(ctx, c, metadv1.AdminClient.DrainStatus, &metadv1.DrainStatusRequest{DrainId: id})
	return resp.GetDrains(), err
}

// CancelDrain cancels a running drain job (its segments take allocations again) and returns it;
// a finished job is returned as it is.
func (c *Client) CancelDrain(ctx context.Context, id uint64) (*metadv1.DrainJob, error) {
	resp, err := callAdmin(ctx, c, metadv1.AdminClient.CancelDrain, &metadv1.CancelDrainRequest{DrainId: id})
	return resp.GetDrain(), err
}

// RunTasks runs the move and copy tasks the cluster assigned to this client once: it fetches up
// to batch of them and, for each, starts the move or copy, calls copyBytes (nil: nothing to
// copy, as for a simulated worker) with the source and the targets, ends it (or revokes it when
// copyBytes fails) and reports the outcome. It returns the tasks it ran and the first error of a
// call (a task whose call failed is reported FAILED when the report can be made).
func (c *Client) RunTasks(ctx context.Context, batch uint32, copyBytes func(src *metadv1.Replica, targets []*metadv1.Replica) error) (int, error) {
	tasks, err := c.FetchTasks(ctx, batch)
	if err != nil {
		return 0, err
	}
	var first error
	for _, t := range tasks {
		err := c.runTask(ctx, t, copyBytes)
		msg := ""
		if err != nil {
			msg = err.Error()
			if first == nil {
				first = err
			}
		}
		if rerr := c.MarkTaskToComplete(ctx, t.GetTaskId(), err == nil, msg); rerr != nil && first == nil {
			first = rerr
		}
	}
	return len(tasks), first
}

func (c *Client) runTask(ctx context.Context, t *metadv1.ScheduledTask, copyBytes func(*metadv1.Replica, []*metadv1.Replica) error) error {
	tenant, key := t.GetTenant(), string(t.GetKey())
	move := t.GetKind() == metadv1.TaskKind_TASK_KIND_MOVE
	var src *metadv1.Replica
	var targets []*metadv1.Replica
	var err error
	if move {
		var target []byte
		if ts := t.GetTargetSegmentIds(); len(ts) > 0 {
			target = ts[0]
		}
		var tg *metadv1.Replica
		src, tg, err = c.MoveStart(ctx, tenant, key, t.GetSourceSegmentId(), target)
		targets = []*metadv1.Replica{tg}
	} else {
		src, targets, err = c.CopyStart(ctx, tenant, key, t.GetSourceSegmentId(), t.GetTargetSegmentIds(), t.GetReplicas())
	}
	if err != nil {
		return err
	}
	if copyBytes != nil {
		if err := copyBytes(src, targets); err != nil {
			if move {
				_ = c.MoveRevoke(ctx, tenant, key)
			} else {
				_ = c.CopyRevoke(ctx, tenant, key)
			}
			return err
		}
	}
	if move {
		return c.endMove(ctx, tenant, key)
	}
	return c.CopyEnd(ctx, tenant, key)
}

// moveLeaseWait bounds one wait between MoveEnd attempts refused for a read lease;
// moveRevokeTimeout bounds the revoke of a move given up.
const (
	moveLeaseWait     = time.Second
	moveRevokeTimeout = 10 * time.Second
)

// endMove ends a move whose bytes are copied. While a reader holds a lease on the object the
// cluster refuses MoveEnd (OBJECT_HAS_LEASE: the reader may still read the source), so endMove asks
// again, waiting a little longer each time (at most moveLeaseWait), until the lease has ended or
// ctx does; then it revokes the move, and the task fails.
func (c *Client) endMove(ctx context.Context, tenant, key string) error {
	wait := 50 * time.Millisecond
	for {
		err := c.MoveEnd(ctx, tenant, key)
		if !IsReason(err, metadv1.Reason_REASON_OBJECT_HAS_LEASE) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), moveRevokeTimeout)
			_ = c.MoveRevoke(rctx, tenant, key)
			cancel()
			return err
		case <-t.C:
		}
		wait = min(2*wait, moveLeaseWait)
	}
}
