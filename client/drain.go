package client

import (
	"context"
	"errors"
	"fmt"
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
// call (a task whose call failed is reported FAILED when the report can be made). An offload task
// is reported failed (RunTasksWith runs them).
func (c *Client) RunTasks(ctx context.Context, batch uint32, copyBytes func(src *metadv1.Replica, targets []*metadv1.Replica) error) (int, error) {
	return c.RunTasksWith(ctx, batch, TaskRunner{CopyBytes: copyBytes})
}

// TaskRunner is how RunTasksWith does each kind of task.
type TaskRunner struct {
	// CopyBytes copies a move's or a copy's source into its targets; nil: nothing to copy.
	CopyBytes func(src *metadv1.Replica, targets []*metadv1.Replica) error
	// Offload writes an offload task's object (its tenant, key and size) to this worker's local
	// SSD; nil: every offload task is reported failed.
	Offload func(t *metadv1.ScheduledTask) error
	// Promote copies a promotion task's object from this worker's SSD into target, the memory
	// replica PromotionAllocStart placed; nil: every promotion is reported failed.
	Promote func(t *metadv1.ScheduledTask, target *metadv1.Replica) error
}

// errNoOffloader is the failure reported for an offload task with no TaskRunner.Offload.
var errNoOffloader = errors.New("metad client: this worker runs no offload")

// RunTasksWith is RunTasks with a handler per kind. Offload tasks are reported together, one
// NotifyOffload per tenant (a success records the object's LOCAL_DISK replica on this client's
// SSD), after the copies and moves.
func (c *Client) RunTasksWith(ctx context.Context, batch uint32, r TaskRunner) (int, error) {
	tasks, err := c.FetchTasks(ctx, batch)
	if err != nil {
		return 0, err
	}
	var first error
	offloads := map[string][]OffloadResult{} // by tenant; reported in the order tenants came
	var tenants []string
	for _, t := range tasks {
		if t.GetKind() == metadv1.TaskKind_TASK_KIND_PROMOTE {
			if err := c.runPromotion(ctx, t, r.Promote); err != nil && first == nil {
				first = err
			}
			continue
		}
		if t.GetKind() == metadv1.TaskKind_TASK_KIND_OFFLOAD {
			err := errNoOffloader
			if r.Offload != nil {
				err = r.Offload(t)
			}
			if err != nil && first == nil {
				first = err
			}
			if _, ok := offloads[t.GetTenant()]; !ok {
				tenants = append(tenants, t.GetTenant())
			}
			offloads[t.GetTenant()] = append(offloads[t.GetTenant()], OffloadResult{Key: string(t.GetKey()), Size: t.GetSize(), Success: err == nil})
			continue
		}
		err := c.runTask(ctx, t, r.CopyBytes)
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
	for _, tenant := range tenants {
		sts, err := c.NotifyOffload(ctx, tenant, offloads[tenant])
		if err == nil {
			err = firstItemError(offloads[tenant], sts)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return len(tasks), first
}

// runPromotion runs one promotion: its memory replica placed, promote called, the outcome
// reported (a failure whenever any step fails, so the task ends).
func (c *Client) runPromotion(ctx context.Context, t *metadv1.ScheduledTask, promote func(*metadv1.ScheduledTask, *metadv1.Replica) error) error {
	tenant, key := t.GetTenant(), string(t.GetKey())
	err := errNoPromoter
	if promote != nil {
		var target *metadv1.Replica
		if target, _, err = c.PromotionAllocStart(ctx, tenant, key, nil); err == nil {
			err = promote(t, target)
		}
	}
	if nerr := c.NotifyPromotion(ctx, tenant, key, err == nil); nerr != nil && err == nil {
		err = nerr
	}
	return err
}

// errNoPromoter is the failure reported for a promotion with no TaskRunner.Promote.
var errNoPromoter = errors.New("metad client: this worker runs no promotion")

// firstItemError is the first refused report of a NotifyOffload, as an error naming its key.
func firstItemError(rs []OffloadResult, sts []*metadv1.Status) error {
	for i, st := range sts {
		if st.GetReason() != metadv1.Reason_REASON_UNSPECIFIED && rs[i].Success {
			return fmt.Errorf("offload of %q not recorded: %s", rs[i].Key, st.GetMessage())
		}
	}
	return nil
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
