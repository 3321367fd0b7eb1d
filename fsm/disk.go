package fsm

import (
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/wire"
)

// contentLevel is the feature level that field values of older commands need: a DISK or DFS tier
// (a segment mounted, a write's tier, an eviction's tier), DFS replicas asked for and a
// redundant-replica eviction (offload on evict) are level levelLocalDisk. A member below it would
// refuse the tier, or ignore the unknown field (place no DFS replica, evict every memory replica),
// where the others apply it: a divergence. 0 when no field needs more than the
// command's own level.
func contentLevel(c *metadv1.Command) uint32 {
	newTier := func(t metadv1.Tier) bool { return t == metadv1.Tier_TIER_DISK || t == metadv1.Tier_TIER_DFS }
	dfs := func(cfg *metadv1.ReplicaConfig) bool { return cfg.GetDfsReplicas() > 0 }
	var needs bool
	switch op := c.GetOp().(type) {
	case *metadv1.Command_MountSegment:
		needs = newTier(op.MountSegment.GetSegment().GetTier())
	case *metadv1.Command_PutStart:
		needs = dfs(op.PutStart.GetConfig())
	case *metadv1.Command_UpsertStart:
		needs = dfs(op.UpsertStart.GetConfig())
	case *metadv1.Command_BatchPutStart:
		needs = dfs(op.BatchPutStart.GetConfig())
	case *metadv1.Command_PutEnd:
		needs = newTier(op.PutEnd.GetTier())
	case *metadv1.Command_UpsertEnd:
		needs = newTier(op.UpsertEnd.GetTier())
	case *metadv1.Command_PutRevoke:
		needs = newTier(op.PutRevoke.GetTier())
	case *metadv1.Command_UpsertRevoke:
		needs = newTier(op.UpsertRevoke.GetTier())
	case *metadv1.Command_BatchPutEnd:
		needs = newTier(op.BatchPutEnd.GetTier())
	case *metadv1.Command_BatchPutRevoke:
		needs = newTier(op.BatchPutRevoke.GetTier())
	case *metadv1.Command_PutCommit:
		needs = newTier(op.PutCommit.GetTier())
	case *metadv1.Command_Evict:
		needs = newTier(op.Evict.GetTier()) || op.Evict.GetRedundant()
	}
	if needs {
		return levelLocalDisk
	}
	return 0
}

// The handlers of the LOCAL_DISK tier's commands (store/ops_disk.go). Their unmount is an
// unmount_segment of the registration's segment, and a client's expiry drops it with the rest.

// applyMountLocalDisk registers a client's SSD (store.Store.MountLocalDisk).
func applyMountLocalDisk(st *State, _ env, m *metadv1.MountLocalDisk) store.Result {
	_, created, err := st.store.MountLocalDisk(wire.ID16(m.GetClientId()), m.GetCapacityBytes(), m.GetEndpoint(), m.GetOffload())
	r := fromErr(err)
	r.Created = created
	return r
}

// applyNotifyOffload records a worker's offload reports, one result per report
// (store.Store.OffloadDone); keys repeated refuse the whole command.
func applyNotifyOffload(st *State, e env, m *metadv1.NotifyOffload) store.Result {
	res := m.GetResults()
	if r, ok := distinct(e, "results", len(res), func(i int) []byte { return res[i].GetKey() }); !ok {
		return r
	}
	reports := make([]store.OffloadResult, len(res))
	for i, x := range res {
		reports[i] = store.OffloadResult{Key: string(x.GetKey()), Size: x.GetSize(), Success: x.GetSuccess()}
	}
	errs, err := st.store.OffloadDone(e.now, m.GetTenant(), wire.ID16(m.GetClientId()), reports)
	if err != nil {
		return fromErr(err)
	}
	rs := items(errs)
	return store.Result{Count: countOK(rs), Items: rs}
}

// applyEvictDiskReplica drops an owner's LOCAL_DISK replicas, or a shared root's DISK replicas
// (store.Store.DropDiskReplicas); keys repeated, or another tier, refuse the whole command.
func applyEvictDiskReplica(st *State, e env, m *metadv1.EvictDiskReplica) store.Result {
	keys := m.GetKeys()
	if r, ok := distinct(e, "keys", len(keys), func(i int) []byte { return keys[i] }); !ok {
		return r
	}
	ks := make([]string, len(keys))
	for i, k := range keys {
		ks[i] = string(k)
	}
	errs, err := st.store.DropDiskReplicas(m.GetTenant(), wire.ID16(m.GetClientId()), wire.TierFrom(m.GetTier()), ks)
	if err != nil {
		return fromErr(err)
	}
	rs := items(errs)
	return store.Result{Count: countOK(rs), Items: rs}
}

// applyQueueOffload queues the offload tasks of objects memory eviction waits for
// (store.Store.QueueOffloads); its count is the tokens whose object has a live offload task.
func applyQueueOffload(st *State, e env, m *metadv1.QueueOffload) store.Result {
	n := st.store.QueueOffloads(e.now, tokens(m.GetTokens()))
	return store.Result{Count: n}
}

// applyQueuePromotion queues promotions of disk-only objects reads hit (store.Store.QueuePromotions);
// its count is the tasks queued.
func applyQueuePromotion(st *State, e env, m *metadv1.QueuePromotion) store.Result {
	return store.Result{Count: st.store.QueuePromotions(e.now, tokens(m.GetTokens()))}
}

func promotionReq(m *metadv1.PromotionStart) store.PromotionRequest {
	return store.PromotionRequest{Tenant: m.GetTenant(), Client: wire.ID16(m.GetClientId()), Key: string(m.GetKey()),
		Preferred: segmentIDs(m.GetPreferredSegmentIds()), Strategy: wire.StrategyFrom(m.GetPlacement())}
}

// applyPromotionStart places a promotion's memory replica (store.Store.StartPromotion); its result's
// Replicas hold it and its Bytes the object's size.
func applyPromotionStart(st *State, e env, m *metadv1.PromotionStart) store.Result {
	rep, size, err := st.store.StartPromotion(e.now, e.seed, promotionReq(m))
	r := fromErr(err)
	if err == nil {
		r.Replicas, r.Bytes = []store.Replica{rep}, size
	}
	return r
}

// applyPromotionEnd ends a promotion (store.Store.EndPromotion).
func applyPromotionEnd(st *State, e env, m *metadv1.PromotionEnd) store.Result {
	return fromErr(st.store.EndPromotion(e.now, m.GetTenant(), string(m.GetKey()), wire.ID16(m.GetClientId()), m.GetSuccess()))
}
