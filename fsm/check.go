package fsm

import (
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// Check is the leader's precheck of a command it is about to propose: refused is true when
// applying c to s's state now would be refused (so a refusal is linearizable at the moment the
// caller read a current state; a command that commits later might meet another state), and r is
// then the
// result to answer with, so that a request the applied state refuses costs no log entry
// (SEMANTICS section 8). It converts c as its apply handler does and runs the store's Check*
// method, the predicate apply itself runs, so the two cannot disagree; it changes nothing. A batch
// is refused only when every item is (r.Items, one per item), or whole when its tenant is not
// registered and open (r.Reason TENANT_NOT_REGISTERED, where apply would refuse every item with
// it). Commands with no check here (removals, which the leader prepares; eviction; members) are
// never refused. PutCommit has none either: the leader ends a reserved write from its reservation
// (service/reserve.go), and apply takes a PutCommit's tier as given, so an item whose ranges hold
// no replica of that tier is created with every replica PROCESSING and answered OK; the leader
// must refuse such a PutEnd itself (INVALID_WRITE, as CheckPutEnd refuses the NOF tier of a
// memory-only write that went through the log) before it proposes one.
//
// Check reads the state with no barrier of its own: the caller makes sure the state is current
// (the leader's term-start barrier applied) and that a refusal is a linearizable read (leadership
// confirmed) before answering it.
func Check(s *store.Store, c *metadv1.Command) (r store.Result, refused bool) {
	var err error
	switch op := c.GetOp().(type) {
	case *metadv1.Command_PutStart:
		m := op.PutStart
		err = s.CheckPutStart(wire.PutStartFrom(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetGroup(), m.GetSize(),
			m.GetConfig(), m.GetPlacement(), m.GetPutDiscardTimeoutMs()))
	case *metadv1.Command_UpsertStart:
		m := op.UpsertStart
		err = s.CheckUpsertStart(wire.PutStartFrom(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetGroup(), m.GetSize(),
			m.GetConfig(), m.GetPlacement(), m.GetPutDiscardTimeoutMs()))
	case *metadv1.Command_PutEnd:
		m := op.PutEnd
		err = s.CheckPutEnd(endReq(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetTier()))
	case *metadv1.Command_UpsertEnd:
		m := op.UpsertEnd
		err = s.CheckPutEnd(endReq(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetTier()))
	case *metadv1.Command_PutRevoke:
		m := op.PutRevoke
		err = s.CheckPutRevoke(endReq(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetTier()))
	case *metadv1.Command_UpsertRevoke:
		m := op.UpsertRevoke
		err = s.CheckPutRevoke(endReq(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetTier()))
	case *metadv1.Command_BatchPutStart:
		m := op.BatchPutStart
		return checkBatch(s, m.GetTenant(), "items", len(m.GetItems()), func(i int) []byte { return m.GetItems()[i].GetKey() }, func(i int) error {
			it := m.GetItems()[i]
			return s.CheckPutStart(wire.PutStartFrom(m.GetTenant(), m.GetClientId(), it.GetKey(), it.GetGroup(), it.GetSize(),
				m.GetConfig(), m.GetPlacement(), m.GetPutDiscardTimeoutMs()))
		})
	case *metadv1.Command_BatchPutEnd:
		m := op.BatchPutEnd
		return checkBatch(s, m.GetTenant(), "keys", len(m.GetKeys()), func(i int) []byte { return m.GetKeys()[i] }, func(i int) error {
			return s.CheckPutEnd(endReq(m.GetTenant(), m.GetClientId(), m.GetKeys()[i], m.GetTier()))
		})
	case *metadv1.Command_BatchPutRevoke:
		m := op.BatchPutRevoke
		return checkBatch(s, m.GetTenant(), "keys", len(m.GetKeys()), func(i int) []byte { return m.GetKeys()[i] }, func(i int) error {
			return s.CheckPutRevoke(endReq(m.GetTenant(), m.GetClientId(), m.GetKeys()[i], m.GetTier()))
		})
	case *metadv1.Command_ReplicaTaskStart:
		err = s.CheckStartReplicaTask(wire.ReplicaTaskFrom(op.ReplicaTaskStart))
	case *metadv1.Command_ReplicaTaskEnd:
		m := op.ReplicaTaskEnd
		err = s.CheckEndReplicaTask(wire.ReplicaTaskEndFrom(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetKind()))
	case *metadv1.Command_ReplicaTaskRevoke:
		m := op.ReplicaTaskRevoke
		err = s.CheckEndReplicaTask(wire.ReplicaTaskEndFrom(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetKind()))
	case *metadv1.Command_CreateTask:
		err = s.CheckCreateTask(wire.TaskSpecFrom(op.CreateTask))
	case *metadv1.Command_StartDrain:
		err = s.CheckStartDrain(wire.DrainSpecFrom(op.StartDrain))
	case *metadv1.Command_CancelDrain:
		err = s.CheckCancelDrain(op.CancelDrain.GetDrainId())
	case *metadv1.Command_FinishDrain:
		err = s.CheckFinishDrain(op.FinishDrain.GetDrainId())
	case *metadv1.Command_CompleteTask:
		m := op.CompleteTask
		err = s.CheckCompleteTask(wire.ID16(m.GetClientId()), m.GetTaskId())
	case *metadv1.Command_RegisterTenant:
		err = s.CheckRegisterTenant(op.RegisterTenant.GetName())
	case *metadv1.Command_UnregisterTenant:
		err = s.CheckUnregisterTenant(op.UnregisterTenant.GetName(), op.UnregisterTenant.GetForce())
	case *metadv1.Command_SetQuota:
		err = s.CheckSetQuota(op.SetQuota.GetTenant())
	case *metadv1.Command_MountSegment:
		err = s.CheckMountSegment(wire.SegmentFrom(op.MountSegment.GetSegment()))
	case *metadv1.Command_UnmountSegment:
		m := op.UnmountSegment
		err = s.CheckUnmount(wire.ID16(m.GetClientId()), segmentIDs(m.GetSegmentIds()))
	case *metadv1.Command_CloseSegment:
		m := op.CloseSegment
		err = s.CheckUnmount(wire.ID16(m.GetClientId()), []alloc.ID{wire.ID16(m.GetSegmentId())})
	}
	if err == nil {
		return store.Result{}, false
	}
	return fromErr(err), true
}

// checkBatch checks a batch of n items of one tenant, as apply decides it under the rules the
// leader stamps now (metadv1.RulesVersion): refused whole when its keys repeat (field names them,
// key gives item i's) or the tenant takes no writes, per item when item refuses every one of them.
func checkBatch(s *store.Store, tenant, field string, n int, key func(i int) []byte, item func(i int) error) (store.Result, bool) {
	if r, ok := distinct(env{rules: metadv1.RulesVersion}, field, n, key); !ok {
		return r, true
	}
	if err := s.CheckWritable(tenant); err != nil {
		return fromErr(err), true
	}
	out := store.Result{Items: make([]store.Result, n)}
	for i := range n {
		err := item(i)
		if err == nil {
			return store.Result{}, false
		}
		out.Items[i] = fromErr(err)
	}
	return out, n > 0
}

func segmentIDs(raw [][]byte) []alloc.ID {
	ids := make([]alloc.ID, len(raw))
	for i, b := range raw {
		ids[i] = wire.ID16(b)
	}
	return ids
}
