package chaos

import (
	"context"
	"fmt"
	"strings"
	"time"

	"metad/client"
	metadv1 "metad/proto/metadv1"
)

// putPlacements bounds how many times one put places its object: a PutEnd that answers
// RESERVATION_LOST (a leader change lost the reservation its PutStart got from the leader's
// arenas; nothing was created) places it again, as a client must.
const putPlacements = 3

// put: PutStart then PutEnd (one in ten: PutRevoke) of a singleton key, placed again after
// RESERVATION_LOST.
func (w *wclient) put() {
	t := w.tenant()
	k := w.singleton(t)
	size := w.size()
	for n := 1; ; n++ {
		ts := w.attempt(func(ctx context.Context, cl *client.Client) error {
			_, err := cl.PutStart(ctx, t, k, size, nil)
			return err
		})
		w.recordAll(w.wl.ks.ref(t, k), input{Kind: opPutStart, Size: size, Label: t + "/" + k}, ts, nil)
		switch cls := last(ts).cls; {
		case cls == clsUnknown:
			w.dirty[dkey(t, k)] = 0
			return
		case cls != clsOK:
			return
		case w.rng.IntN(10) == 0:
			if !w.revoke(t, k) {
				w.dirty[dkey(t, k)] = 0
			}
			return
		}
		if w.end(t, k) != rLost || n == putPlacements || w.stopped() {
			return
		}
	}
}

// batchPut: BatchPutStart then BatchPutEnd of the items that started.
func (w *wclient) batchPut() {
	t := w.tenant()
	keys := w.someKeys(t, false)
	items := make([]client.BatchPutItem, len(keys))
	for i, k := range keys {
		items[i] = client.BatchPutItem{Key: k, Size: w.size()}
	}
	w.batchPutItems(t, items)
}

// groupPut: put the members of a group (all, or some) in one batch.
func (w *wclient) groupPut() {
	t := w.tenant()
	g := w.groupOf(t)
	var items []client.BatchPutItem
	for m := range groupMembers {
		if w.rng.IntN(4) != 0 {
			items = append(items, client.BatchPutItem{Key: fmt.Sprintf("%s-m%d", g, m), Group: g, Size: w.size()})
		}
	}
	if len(items) == 0 {
		return
	}
	w.batchPutItems(t, items)
}

func (w *wclient) batchPutItems(t string, items []client.BatchPutItem) {
	var res []*metadv1.BatchPutStartResponse_Result
	ts := w.attempt(func(ctx context.Context, cl *client.Client) error {
		var err error
		res, err = cl.BatchPutStart(ctx, t, items, nil)
		if err == nil && len(res) != len(items) {
			err = fmt.Errorf("chaos: %d results for %d items", len(res), len(items))
		}
		return err
	})
	var started []string
	for i, it := range items {
		in := input{Kind: opPutStart, Size: it.Size, Label: t + "/" + it.Key}
		icls := w.recordItem(w.wl.ks.ref(t, it.Key), in, ts, func() *metadv1.Status { return res[i].GetStatus() })
		switch icls {
		case clsOK:
			started = append(started, it.Key)
		case clsUnknown:
			w.dirty[dkey(t, it.Key)] = 0
		}
	}
	if len(started) == 0 {
		return
	}
	for try := 0; try < 3 && len(started) > 0; try++ {
		var st []*metadv1.Status
		ts := w.attempt(func(ctx context.Context, cl *client.Client) error {
			var err error
			st, err = cl.BatchPutEnd(ctx, t, started, metadv1.Tier_TIER_UNSPECIFIED)
			if err == nil && len(st) != len(started) {
				err = fmt.Errorf("chaos: %d results for %d items", len(st), len(started))
			}
			return err
		})
		var again []string
		for i, k := range started {
			icls := w.recordItem(w.wl.ks.ref(t, k), input{Kind: opPutEnd, Label: t + "/" + k}, ts, func() *metadv1.Status { return st[i] })
			if icls == clsUnknown || icls == clsNoop {
				again = append(again, k)
			}
		}
		started = again
	}
	for _, k := range started {
		w.dirty[dkey(t, k)] = 0
	}
}

// recordItem records one item's view of every try of a batch call: the tries before the last as
// they were (the whole request failed), the last with the item's own status when the request
// succeeded. It returns the item's final class.
func (w *wclient) recordItem(ref keyRef, in input, ts []try, status func() *metadv1.Status) errClass {
	for i, t := range ts {
		if i == len(ts)-1 && t.cls == clsOK {
			t.cls, t.reason = itemClass(status())
		}
		w.record(ref, in, t, nil)
		if i == len(ts)-1 {
			return t.cls
		}
	}
	return clsNoop
}

// itemClass is classify for one item of a batch answer.
func itemClass(s *metadv1.Status) (errClass, string) {
	if s.GetReason() == metadv1.Reason_REASON_UNSPECIFIED {
		return clsOK, ""
	}
	return clsReason, client.ReasonName(s.GetReason())
}

func (w *wclient) remove() {
	t := w.tenant()
	k := w.singleton(t)
	if w.rng.IntN(4) == 0 {
		k = fmt.Sprintf("%s-m%d", w.groupOf(t), w.rng.IntN(groupMembers))
	}
	force := w.rng.IntN(10) < 7
	ts := w.attempt(func(ctx context.Context, cl *client.Client) error {
		return cl.Remove(ctx, t, k, force)
	})
	w.recordAll(w.wl.ks.ref(t, k), input{Kind: opRemove, Force: force, Label: t + "/" + k}, ts, nil)
}

func (w *wclient) batchRemove() {
	t := w.tenant()
	keys := w.someKeys(t, true)
	force := w.rng.IntN(10) < 7
	var st []*metadv1.Status
	ts := w.attempt(func(ctx context.Context, cl *client.Client) error {
		var err error
		st, err = cl.BatchRemove(ctx, t, keys, force)
		if err == nil && len(st) != len(keys) {
			err = fmt.Errorf("chaos: %d results for %d items", len(st), len(keys))
		}
		return err
	})
	for i, k := range keys {
		w.recordItem(w.wl.ks.ref(t, k), input{Kind: opRemove, Force: force, Label: t + "/" + k}, ts, func() *metadv1.Status { return st[i] })
	}
}

func (w *wclient) removeGroup() {
	t := w.tenant()
	g := w.groupOf(t)
	force := w.rng.IntN(10) < 7
	var n uint64
	ts := w.attempt(func(ctx context.Context, cl *client.Client) error {
		var err error
		n, err = cl.RemoveGroup(ctx, t, g, force)
		return err
	})
	ref := keyRef{Part: w.wl.ks.groupPart(t, g)}
	w.recordAll(ref, input{Kind: opRemoveGroup, Force: force, Label: t + "/" + g}, ts, func(o *output) { o.Count = n })
}

// read runs a read with the Go client (its retries are harmless: a read changes nothing) and
// returns the call and return times and the read's error; ok is false when the read failed without
// an answer (it is then left out of the history).
func (w *wclient) read(fn func(ctx context.Context) error) (call, ret time.Duration, ok bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), w.wl.cfg.ReadLimit)
	defer cancel()
	call = w.wl.hist.since()
	err = fn(ctx)
	ret = w.wl.hist.since()
	if cls, _ := classify(err); cls == clsOK || cls == clsReason {
		return call, ret, true, err
	}
	w.wl.dropped.Add(1)
	return call, ret, false, err
}

func readOp(client int, ref keyRef, kind opKind, label string, err error, call, ret time.Duration) *Op {
	op := &Op{Client: client, Part: ref.Part, In: input{Kind: kind, Member: ref.Member, Writer: int32(client), Label: label},
		Call: call, Return: ret}
	if cls, reason := classify(err); cls == clsReason {
		op.Out = output{Res: resReason, Reason: reason}
	}
	return op
}

func (w *wclient) get() {
	t := w.tenant()
	k := w.singleton(t)
	if w.rng.IntN(4) == 0 {
		k = fmt.Sprintf("%s-m%d", w.groupOf(t), w.rng.IntN(groupMembers))
	}
	w.getKey(t, k)
}

// getKey reads t/k into the history and returns the answer (nil when it was not found or failed).
func (w *wclient) getKey(t, k string) *metadv1.GetResponse {
	var resp *metadv1.GetResponse
	call, ret, ok, err := w.read(func(ctx context.Context) error {
		var err error
		resp, err = w.rd.Get(ctx, t, k)
		return err
	})
	if !ok {
		return nil
	}
	op := readOp(int(w.id), w.wl.ks.ref(t, k), opGet, t+"/"+k, err, call, ret)
	if err != nil {
		w.wl.hist.add(op)
		return nil
	}
	op.Out.Size = resp.GetSize()
	op.Out.Replicas, op.Out.Disk = countReplicas(resp.GetReplicas())
	w.wl.hist.add(op)
	return resp
}

// replicate copies or moves a replica of a key (a singleton, one time in four a group member): a
// Get finds a source segment (a stale one for a move, below), then CopyStart (MoveStart) with the target placed by the leader,
// then, after the time a copy of the bytes would take, CopyEnd (MoveEnd), one time in eight
// CopyRevoke (MoveRevoke) instead. Every client sends these through its session client with its
// retries, so a call whose answer was lost is applied once; a task whose outcome stays unknown is
// revoked by cleanup.
func (w *wclient) replicate() {
	t := w.tenant()
	k := w.singleton(t)
	if w.rng.IntN(4) == 0 {
		k = fmt.Sprintf("%s-m%d", w.groupOf(t), w.rng.IntN(groupMembers))
	}
	start, end, revoke := opCopyStart, opCopyEnd, opCopyRevoke
	move := w.rng.IntN(2) == 0
	if move {
		start, end, revoke = opMoveStart, opMoveEnd, opMoveRevoke
	}
	// A copy finds its source with a recorded Get, which leases the object. A MoveEnd waits for
	// a lease to end (a reader may still read the source), so a move finds its source with a
	// stale Get instead, which leases nothing and is not recorded (it is not linearizable): a
	// source that moved meanwhile is refused with REPLICA_NOT_FOUND, nothing changed.
	var resp *metadv1.GetResponse
	if move {
		ctx, cancel := context.WithTimeout(context.Background(), w.wl.cfg.AttemptLimit)
		resp, _ = w.rd.Get(ctx, t, k, client.Stale())
		cancel()
	} else {
		resp = w.getKey(t, k)
	}
	if len(resp.GetReplicas()) == 0 || w.stopped() {
		return
	}
	src := resp.GetReplicas()[w.rng.IntN(len(resp.GetReplicas()))].GetSegmentId()
	switch cls, _ := w.taskCall(t, k, start, src); cls {
	case clsOK:
	case clsUnknown:
		w.tasks[dkey(t, k)] = &openTask{revoke: revoke}
		return
	default:
		return
	}
	if w.rng.IntN(8) == 0 {
		end = revoke
	}
	// The worker's copy of the bytes: 0-300 ms, so that some tasks span a fault and a leader
	// change, which must keep them.
	tm := time.NewTimer(time.Duration(w.rng.Int64N(int64(300 * time.Millisecond))))
	select {
	case <-tm.C:
	case <-w.wl.stop:
		tm.Stop()
	}
	leaseWaits := 0
	for n := 0; n < 3; { // an End or Revoke in the session is safe to repeat
		cls, reason := w.taskCall(t, k, end, nil)
		switch {
		case end == opMoveEnd && reason == rHasLease && leaseWaits < moveLeaseWaits && !w.stopped():
			// A reader leased the object (the Get above did): MoveEnd waits for the lease to end,
			// as a worker does (client.RunTasks).
			leaseWaits++
			tm := time.NewTimer(moveLeaseWait)
			select {
			case <-tm.C:
			case <-w.wl.stop:
				tm.Stop()
			}
			continue
		case reason == rHasLease:
			end = revoke
			continue
		case cls != clsUnknown:
			return
		}
		n++
	}
	w.tasks[dkey(t, k)] = &openTask{revoke: revoke}
}

// A MoveEnd refused for a read lease is asked again every moveLeaseWait, at most moveLeaseWaits
// times (about half the drills' leaseTTL: a busy key is revoked rather than waited on for long),
// then the move is revoked.
const (
	moveLeaseWait  = 250 * time.Millisecond
	moveLeaseWaits = 4
)

// taskCall sends one task call of kind on t/k through the session client and records it; src is
// the source segment of a Start. It returns the call's class (never clsNoop: see inSession) and
// its refusal's reason name ("" when none).
func (w *wclient) taskCall(t, k string, kind opKind, src []byte) (errClass, string) {
	tr := w.inSession(w.rd, func(ctx context.Context, cl *client.Client) error {
		var err error
		switch kind {
		case opCopyStart:
			_, _, err = cl.CopyStart(ctx, t, k, src, nil, 1)
		case opMoveStart:
			_, _, err = cl.MoveStart(ctx, t, k, src, nil)
		case opCopyEnd:
			err = cl.CopyEnd(ctx, t, k)
		case opMoveEnd:
			err = cl.MoveEnd(ctx, t, k)
		case opCopyRevoke:
			err = cl.CopyRevoke(ctx, t, k)
		case opMoveRevoke:
			err = cl.MoveRevoke(ctx, t, k)
		default:
			panic("chaos: taskCall of " + kind.String())
		}
		return err
	})
	w.record(w.wl.ks.ref(t, k), input{Kind: kind, Label: t + "/" + k}, tr, nil)
	return tr.cls, tr.reason
}

func (w *wclient) exist() {
	t := w.tenant()
	k := w.singleton(t)
	var ex bool
	call, ret, ok, err := w.read(func(ctx context.Context) error {
		var err error
		ex, err = w.rd.Exist(ctx, t, k)
		return err
	})
	if !ok {
		return
	}
	op := readOp(int(w.id), w.wl.ks.ref(t, k), opExist, t+"/"+k, err, call, ret)
	op.Out.Exists = ex
	w.wl.hist.add(op)
}

func (w *wclient) batchGet() {
	t := w.tenant()
	keys := w.someKeys(t, true)
	var resp *metadv1.BatchGetResponse
	call, ret, ok, err := w.read(func(ctx context.Context) error {
		var err error
		resp, err = w.rd.BatchGet(ctx, t, keys)
		if err == nil && len(resp.GetResults()) != len(keys) {
			err = fmt.Errorf("chaos: %d results for %d keys", len(resp.GetResults()), len(keys))
		}
		return err
	})
	if !ok {
		return
	}
	if err != nil {
		w.wl.fail(fmt.Errorf("BatchGet %s %v: %v", t, keys, err))
		return
	}
	for i, k := range keys {
		w.wl.hist.add(batchGetOp(int(w.id), w.wl.ks.ref(t, k), t+"/"+k, resp.GetResults()[i], call, ret))
	}
}

func batchGetOp(cl int, ref keyRef, label string, r *metadv1.BatchGetResponse_Result, call, ret time.Duration) *Op {
	op := &Op{Client: cl, Part: ref.Part, In: input{Kind: opGet, Member: ref.Member, Writer: int32(cl), Label: label},
		Call: call, Return: ret}
	if cls, reason := itemClass(r.GetStatus()); cls == clsReason {
		op.Out = output{Res: resReason, Reason: reason}
	} else {
		op.Out.Size = r.GetSize()
		op.Out.Replicas, op.Out.Disk = countReplicas(r.GetReplicas())
	}
	return op
}

// countReplicas counts a read's replicas (COMPLETE ones: reads answer no other): LOCAL_DISK ones
// in disk, the others in rest.
func countReplicas(reps []*metadv1.Replica) (rest, disk uint8) {
	for _, r := range reps {
		if r.GetTier() == metadv1.Tier_TIER_LOCAL_DISK {
			disk++
		} else {
			rest++
		}
	}
	return rest, disk
}

func (w *wclient) batchExist() {
	t := w.tenant()
	keys := w.someKeys(t, true)
	var resp *metadv1.BatchExistResponse
	call, ret, ok, err := w.read(func(ctx context.Context) error {
		var err error
		resp, err = w.rd.BatchExist(ctx, t, keys)
		if err == nil && len(resp.GetExists()) != len(keys) {
			err = fmt.Errorf("chaos: %d results for %d keys", len(resp.GetExists()), len(keys))
		}
		return err
	})
	if !ok {
		return
	}
	if err != nil {
		w.wl.fail(fmt.Errorf("BatchExist %s %v: %v", t, keys, err))
		return
	}
	for i, k := range keys {
		op := readOp(int(w.id), w.wl.ks.ref(t, k), opExist, t+"/"+k, nil, call, ret)
		op.Out.Exists = resp.GetExists()[i]
		w.wl.hist.add(op)
	}
}

func (w *wclient) listGroup() {
	t := w.tenant()
	g := w.groupOf(t)
	var keys []string
	call, ret, ok, err := w.read(func(ctx context.Context) error {
		var err error
		keys, err = w.rd.ListGroup(ctx, t, g)
		return err
	})
	if !ok {
		return
	}
	w.wl.hist.add(listGroupOp(int(w.id), w.wl.ks.groupPart(t, g), t, g, keys, err, call, ret))
}

func listGroupOp(cl, part int, t, g string, keys []string, err error, call, ret time.Duration) *Op {
	op := readOp(cl, keyRef{Part: part}, opListGroup, t+"/"+g, err, call, ret)
	if err == nil {
		for _, k := range keys {
			var m int
			if _, err := fmt.Sscanf(strings.TrimPrefix(k, g+"-"), "m%d", &m); err == nil && m < maxMembers {
				op.Out.Listed |= 1 << m
			} else {
				op.Out.Listed |= 1 << (maxMembers - 1) // a stranger: never matches the model
			}
		}
	}
	return op
}
