package service

import (
	"context"
	"fmt"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
)

// BatchReplicaClear drops the COMPLETE replicas of the tenant's objects that live on the calling
// client's segments (the one named, or every one it owns), for the keys given, in one command; an
// object left with no replica is erased. It runs as a removal does (remove.go): the leader prepares
// each key (store.PrepareClear: no lease, no PROCESSING replica, a COMPLETE replica there) and
// marks it, so that no read leases replicas the command may drop, then proposes the command fenced
// by what it checked, through ha.ProposeMarked. Keys it refuses travel in the command with their
// refusal, so the command's result answers every key and a session can keep it. A segment that is
// not mounted or is another client's refuses the whole request, without a log entry.
func (s *Service) BatchReplicaClear(ctx context.Context, req *metadv1.BatchReplicaClearRequest) (*metadv1.BatchReplicaClearResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	tenant, keys, err := tenantKeysOf(req.GetTenant(), req.GetKeys())
	if err != nil {
		return nil, err
	}
	client, err := clientOf("client_id", req.GetClientId())
	if err != nil {
		return nil, fail(err, tenant, nil)
	}
	var seg alloc.ID
	if len(req.GetSegmentId()) > 0 {
		if seg, err = segmentIDOf("segment_id", req.GetSegmentId()); err != nil {
			return nil, fail(err, tenant, nil)
		}
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	var res store.Result
	err = againOnReplaced(func() (again bool, err error) {
		res, again, err = s.replicaClear(ctx, tenant, keys, client, seg)
		return again, err
	})
	if err != nil {
		return nil, err
	}
	sts, err := statusesOf(&res, len(keys), tenant)
	if err != nil {
		return nil, err
	}
	return &metadv1.BatchReplicaClearResponse{Results: sts}, nil
}

// replicaClear is one attempt of BatchReplicaClear against the current state: the command's
// result, the one this session kept, or the refusals when every key was refused (nothing
// proposed). replaced reports a command refused whole because a snapshot restore replaced the
// state it was prepared against.
func (s *Service) replicaClear(ctx context.Context, tenant string, keys []string, client, seg alloc.ID) (res store.Result, replaced bool, _ error) {
	var (
		st   *store.Store
		toks []store.ObjectToken
		refs []*metadv1.ObjectRef
		kres *store.Result
	)
	propose, err := s.fromState(ctx, func(cur *store.Store) (bool, error) {
		st, toks, refs, kres = cur, nil, make([]*metadv1.ObjectRef, len(keys)), nil
		res = store.Result{Items: make([]store.Result, len(keys))}
		if r, ok := s.answered(ctx); ok { // this session's retry of a clear that applied
			kres = &r
			return false, nil
		}
		if err := cur.CheckWritable(tenant); err != nil {
			return false, err
		}
		on, err := cur.ClearScope(client, seg)
		if err != nil {
			return false, err
		}
		now := s.cfg.nowNano()
		for i, k := range keys {
			tok, err := settled(ctx, func() (store.ObjectToken, error) { return cur.PrepareClear(now, tenant, k, on) })
			if err == nil && len(toks) > 0 && tok.Instance != toks[0].Instance {
				cur.ClearMarks([]store.ObjectToken{tok})
				err = &store.Error{Reason: store.ObjectNotFound, Msg: fmt.Sprintf("tenant %q key %q: tenant instance changed", tenant, k)}
			}
			if err != nil {
				res.Items[i] = refusedItem(err)
				refs[i] = refusedRef(k, err)
				continue
			}
			toks = append(toks, tok)
			refs[i] = &metadv1.ObjectRef{Key: []byte(k), ObjectId: tok.ObjectID}
		}
		return len(toks) > 0, nil
	})
	if err != nil {
		return store.Result{}, false, fail(err, tenant, nil)
	}
	if kres != nil {
		return *kres, false, nil
	}
	if !propose {
		return res, false, nil
	}
	m := &metadv1.BatchReplicaClear{Tenant: tenant, TenantInstanceId: toks[0].Instance, ClientId: client[:], Items: refs,
		StateEpoch: st.Epoch()}
	if !seg.IsZero() {
		m.SegmentId = seg[:]
	}
	res, err = s.proposeMarked(ctx, st, &metadv1.Command{Op: &metadv1.Command_BatchReplicaClear{BatchReplicaClear: m}}, toks)
	if err != nil {
		return store.Result{}, false, fail(err, tenant, nil)
	}
	return res, res.Reason == store.StateReplaced, nil
}
