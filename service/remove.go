package service

import (
	"context"
	"errors"
	"fmt"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/wire"
)

// Removal runs in two steps on the leader (see store/ops_remove.go): the leader prepares (checks
// leases unless force and PROCESSING replicas, marks the objects so its reads find them gone), then
// proposes a command fenced by what it checked (state epoch, tenant instance, object id). The
// prepare step reads the leader's state, so it runs through fromState: not before the leader is
// ready, and a request it refuses whole is answered only after leadership is confirmed (state.go).
// Items of a batch it refuses while others are proposed are answered with the command's commit,
// which confirms that this node still led when it prepared them.
//
// Every command that removes marked objects (the four removal kinds here, and eviction's Evict)
// is proposed through ha.ProposeMarked, which settles the marks by the command's outcome (here with
// noEntry, which also counts an auth refusal at apply as leaving no entry). A command
// refused with STATE_REPLACED was checked against a state that a snapshot restore replaced before
// it committed: nothing changed, and the request is prepared again against the restored state
// (againOnReplaced, at most MaxReplaced times).

// MaxReplaced bounds how often one request is prepared again after a snapshot restore replaced the
// state it was checked against (restores are rare and serialized; two in one request's life are
// already unusual).
const MaxReplaced = 3

// noEntry reports whether a failed proposal of the service certainly left no entry that could
// still commit: ha.NoEntry (this node did not lead, it is shutting down, Raft did not take the entry
// within the apply timeout, the command needs a feature level a member lacks), or apply refused the
// entry as checked against an older auth state and the call, checked again, is no longer allowed
// (proposeAuthed).
func noEntry(err error) bool {
	return ha.NoEntry(err) || errors.Is(err, ErrUnauthenticated) || errors.Is(err, ErrPermissionDenied)
}

// proposeMarked is ha.ProposeMarked of cmd through the Backend, clearing marks in st.
func (s *Service) proposeMarked(ctx context.Context, st *store.Store, cmd *metadv1.Command, marks []store.ObjectToken) (store.Result, error) {
	cmd = stamped(ctx, cmd)
	return ha.ProposeMarked(ctx, func(ctx context.Context) (store.Result, error) { return s.proposeAuthed(ctx, cmd) },
		noEntry, func() { st.ClearMarks(marks) })
}

// prepareOne prepares one object for a command that removes or frees what a reader may lease
// (Remove, MoveEnd), following fromState's rules: prepare marks it against the leader's state,
// waiting out another removal's mark (settled). It returns the state prepared against and the
// object's token, or kept: this session's answer to a retry of the request, when its first attempt
// applied (then nothing is marked and nothing is to be proposed).
func (s *Service) prepareOne(ctx context.Context, prepare func(cur *store.Store) (store.ObjectToken, error)) (
	st *store.Store, tok store.ObjectToken, kept *store.Result, err error) {
	_, err = s.fromState(ctx, func(cur *store.Store) (bool, error) {
		kept = nil
		if r, ok := s.answered(ctx); ok { // this session's retry of a request that applied
			kept = &r
			return false, nil
		}
		st = cur
		var err error
		tok, err = settled(ctx, func() (store.ObjectToken, error) { return prepare(cur) })
		if r, ok := s.answered(ctx); err != nil && ok { // its first attempt applied meanwhile
			kept = &r
			return false, nil
		}
		return err == nil, err
	})
	return st, tok, kept, err
}

// againOnReplaced runs attempt until it does not ask to run again, at most MaxReplaced+1 times;
// the last run's error stands.
func againOnReplaced(attempt func() (again bool, err error)) error {
	for n := 0; ; n++ {
		again, err := attempt()
		if !again || n == MaxReplaced {
			return err
		}
	}
}

// Remove erases one object.
func (s *Service) Remove(ctx context.Context, req *metadv1.RemoveRequest) (*metadv1.RemoveResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	tenant, key, err := readKeyOf(req.GetTenant(), req.GetKey())
	if err != nil {
		return nil, fail(err, req.GetTenant(), req.GetKey())
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	err = againOnReplaced(func() (bool, error) {
		st, tok, kept, err := s.prepareOne(ctx, func(cur *store.Store) (store.ObjectToken, error) {
			// A write reserved in the arenas is in progress, as a PROCESSING one is.
			return readThrough(s, true, tenant, key, func() (store.ObjectToken, error) {
				return cur.PrepareRemove(s.cfg.nowNano(), tenant, key, req.GetForce())
			})
		})
		if err != nil {
			return false, fail(err, tenant, req.GetKey())
		}
		if kept != nil {
			return false, rejected(kept, tenant, req.GetKey())
		}
		cmd := &metadv1.Command{Op: &metadv1.Command_Remove{Remove: &metadv1.Remove{
			Tenant: tenant, Key: req.GetKey(), Force: req.GetForce(), TenantInstanceId: tok.Instance, ObjectId: tok.ObjectID,
			StateEpoch: st.Epoch()}}}
		res, err := s.proposeMarked(ctx, st, cmd, []store.ObjectToken{tok})
		if err != nil {
			return false, fail(err, tenant, req.GetKey())
		}
		return res.Reason == store.StateReplaced, rejected(&res, tenant, req.GetKey())
	})
	if err != nil {
		return nil, err
	}
	return &metadv1.RemoveResponse{}, nil
}

// BatchRemove is Remove for many keys in one command; one status per key in request order. The
// command carries every key: those the leader refuses when it prepares them are carried with the
// refusal (ObjectRef.refused), so the command's result answers each key and a session can keep it.
func (s *Service) BatchRemove(ctx context.Context, req *metadv1.BatchRemoveRequest) (*metadv1.BatchRemoveResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	tenant, keys, err := tenantKeysOf(req.GetTenant(), req.GetKeys())
	if err != nil {
		return nil, err
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	var res store.Result
	err = againOnReplaced(func() (again bool, err error) {
		res, _, again, err = s.batchRemove(ctx, tenant, keys, req.GetForce(), false)
		return again, err
	})
	if err != nil {
		return nil, err
	}
	sts, err := statusesOf(&res, len(keys), tenant)
	if err != nil {
		return nil, err
	}
	return &metadv1.BatchRemoveResponse{Results: sts}, nil
}

// refusedID is the object id of a BatchRemove item the leader refused: no object has it, so a
// binary that does not know ObjectRef.refused changes nothing for the item.
const refusedID = ^uint64(0)

// refusedRef is the ObjectRef of an item the leader refused with err when it prepared it.
func refusedRef(key string, err error) *metadv1.ObjectRef {
	st := wire.ErrItem(err)
	return &metadv1.ObjectRef{Key: []byte(key), ObjectId: refusedID, Refused: st.GetReason(), RefusedMessage: msgOf(err)}
}

// refusedItem is the result of an item the leader refused with err, as apply answers it.
func refusedItem(err error) store.Result {
	return store.Result{Reason: store.ReasonOf(err), Message: msgOf(err)}
}

// batchRemove is one attempt of a removal of keys (distinct) in one BatchRemove command against
// the current state. res has one item per key, in order: the command's result; or, with kept, the
// result this session kept for the request (a retry of one that applied); or, when the leader
// refused every key, those refusals (nothing proposed). With keyed each item of the command's
// result carries its key (RemoveByRegex). replaced reports that the command was refused whole
// because a snapshot restore replaced that state (nothing removed).
func (s *Service) batchRemove(ctx context.Context, tenant string, keys []string, force, keyed bool) (res store.Result, kept, replaced bool, _ error) {
	var (
		st   *store.Store
		toks []store.ObjectToken
		refs []*metadv1.ObjectRef // one per key, in request order
		kres *store.Result
	)
	propose, err := s.fromState(ctx, func(cur *store.Store) (bool, error) {
		st, toks, refs, kres = cur, nil, make([]*metadv1.ObjectRef, len(keys)), nil
		res = store.Result{Items: make([]store.Result, len(keys))}
		if r, ok := s.answered(ctx); ok { // this session's retry of a batch that applied
			kres = &r
			return false, nil
		}
		if err := cur.CheckWritable(tenant); err != nil { // the whole request's check
			return false, err
		}
		now := s.cfg.nowNano()
		for i, k := range keys {
			tok, err := readThrough(s, true, tenant, k, func() (store.ObjectToken, error) {
				return settled(ctx, func() (store.ObjectToken, error) { return cur.PrepareRemove(now, tenant, k, force) })
			})
			if err == nil && len(toks) > 0 && tok.Instance != toks[0].Instance {
				// The tenant was registered again during the loop: this key belongs to another instance.
				cur.ClearMarks([]store.ObjectToken{tok})
				err = &store.Error{Reason: store.ObjectNotFound, Msg: fmt.Sprintf("tenant %q key %q: tenant instance changed", tenant, k)}
			}
			if err != nil {
				res.Items[i] = refusedItem(err)
				res.Items[i].Key = k
				refs[i] = refusedRef(k, err)
				continue
			}
			toks = append(toks, tok)
			refs[i] = &metadv1.ObjectRef{Key: []byte(k), ObjectId: tok.ObjectID}
		}
		return len(toks) > 0, nil
	})
	if err != nil {
		return store.Result{}, false, false, fail(err, tenant, nil)
	}
	if kres != nil {
		return *kres, true, false, nil
	}
	if !propose {
		return res, false, false, nil
	}
	cmd := &metadv1.Command{Op: &metadv1.Command_BatchRemove{BatchRemove: &metadv1.BatchRemove{
		Tenant: tenant, Force: force, TenantInstanceId: toks[0].Instance, Items: refs, StateEpoch: st.Epoch(), Keyed: keyed}}}
	res, err = s.proposeMarked(ctx, st, cmd, toks)
	if err != nil {
		return store.Result{}, false, false, fail(err, tenant, nil)
	}
	if err := rejected(&res, tenant, nil); err != nil {
		return store.Result{}, false, res.Reason == store.StateReplaced, err
	}
	return res, false, false, nil
}

// statusesOf is a batch's answer from its result: one status per key.
func statusesOf(res *store.Result, n int, tenant string) ([]*metadv1.Status, error) {
	if err := rejected(res, tenant, nil); err != nil {
		return nil, err
	}
	if len(res.Items) != n {
		return nil, internalf("%d results for %d items", len(res.Items), n)
	}
	out := make([]*metadv1.Status, n)
	for i, r := range res.Items {
		out[i] = wire.ItemStatus(r.Reason, r.Message)
	}
	return out, nil
}

// RemoveAll erases every removable object of a tenant: the leader prepares them all and proposes
// them in commands of at most store.MaxBatch targets.
func (s *Service) RemoveAll(ctx context.Context, req *metadv1.RemoveAllRequest) (*metadv1.RemoveAllResponse, error) {
	tenant, err := tenantOf(req.GetTenant())
	if err != nil {
		return nil, fail(err, req.GetTenant(), nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	var removed, skipped uint64
	err = againOnReplaced(func() (bool, error) {
		var (
			st     *store.Store
			before int64
			toks   []store.ObjectToken
		)
		propose, err := s.fromState(ctx, func(cur *store.Store) (bool, error) {
			st, before = cur, 0
			if t, ok := cur.Tenant(tenant); ok {
				before = t.Objects
			}
			var err error
			toks, err = cur.PrepareRemoveAll(s.cfg.nowNano(), tenant, req.GetForce())
			return len(toks) > 0, err
		})
		if err != nil {
			return false, fail(err, tenant, nil)
		}
		var n uint64
		var replaced bool
		if propose {
			n, replaced, err = s.removeAllOf(ctx, st, tenant, req.GetForce(), toks)
		}
		removed += n
		// Skipped: what this last pass saw and left (leased, PROCESSING, or erased meanwhile),
		// and the writes in progress that reservations hold (never removable, as PROCESSING
		// objects are not).
		skipped = uint64(max(before-int64(n), 0))
		if !s.cfg.NoArenas {
			skipped += uint64(s.res.countOf(tenant))
		}
		return replaced, err
	})
	if err != nil {
		return nil, err
	}
	return &metadv1.RemoveAllResponse{Removed: removed, Skipped: skipped}, nil
}

// removeAllOf proposes the objects of the tenant prepared in st (toks, from PrepareRemoveAll) in
// chunks. It returns how many were removed; replaced reports that a chunk was refused because a
// snapshot restore replaced st (the chunks before it stand, the rest is to be prepared again).
func (s *Service) removeAllOf(ctx context.Context, st *store.Store, tenant string, force bool, toks []store.ObjectToken) (removed uint64, replaced bool, _ error) {
	for off := 0; off < len(toks); off += store.MaxBatch {
		chunk := toks[off:min(off+store.MaxBatch, len(toks))]
		refs := make([]*metadv1.ObjectRef, len(chunk))
		for i, tok := range chunk {
			refs[i] = &metadv1.ObjectRef{Key: []byte(tok.Key), ObjectId: tok.ObjectID}
		}
		cmd := &metadv1.Command{Op: &metadv1.Command_RemoveAll{RemoveAll: &metadv1.RemoveAll{
			Tenant: tenant, Force: force, TenantInstanceId: chunk[0].Instance, Targets: refs, StateEpoch: st.Epoch()}}}
		res, err := s.proposeMarked(ctx, st, cmd, chunk)
		if err == nil {
			err = rejected(&res, tenant, nil)
		}
		if err != nil {
			st.ClearMarks(toks[off+len(chunk):]) // the chunks not proposed
			return removed, res.Reason == store.StateReplaced, fail(err, tenant, nil)
		}
		removed += uint64(res.Count)
	}
	return removed, false, nil
}

// RemoveGroup erases an explicit group and all its members in one command.
func (s *Service) RemoveGroup(ctx context.Context, req *metadv1.RemoveGroupRequest) (*metadv1.RemoveGroupResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	tenant, err := tenantOf(req.GetTenant())
	if err != nil {
		return nil, fail(err, req.GetTenant(), nil)
	}
	group, err := namedGroupOf(req.GetGroup())
	if err != nil {
		return nil, fail(err, tenant, nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	var removed uint64
	// A member that joins between the leader's check and the commit makes the replicated step
	// refuse (OBJECT_ALREADY_EXISTS, nothing erased), and so does a snapshot restore in between
	// (STATE_REPLACED): check the group again, a few times.
	err = againOnReplaced(func() (bool, error) {
		var (
			st   *store.Store
			gt   store.GroupToken
			toks []store.ObjectToken
			kept *store.Result
		)
		if _, err := s.fromState(ctx, func(cur *store.Store) (bool, error) {
			kept = nil
			if r, ok := s.answered(ctx); ok { // this session's retry of a removal that applied
				kept = &r
				return false, nil
			}
			var err error
			st = cur
			if !s.cfg.NoArenas && s.res.holdsGroup(tenant, req.GetGroup()) {
				// A member's write is reserved in the arenas: in progress, as a PROCESSING
				// member's is (force does not bypass it).
				err = &store.Error{Reason: store.ReplicaIsNotReady,
					Msg: fmt.Sprintf("group %q has a member whose write is in progress", req.GetGroup())}
			} else {
				gt, toks, err = cur.PrepareRemoveGroup(s.cfg.nowNano(), tenant, group, req.GetForce())
			}
			if r, ok := s.answered(ctx); err != nil && ok { // its first attempt applied meanwhile
				kept = &r
				return false, nil
			}
			return err == nil, err
		}); err != nil {
			return false, fail(err, tenant, nil)
		}
		if kept != nil {
			removed = uint64(kept.Count)
			return false, rejected(kept, tenant, nil)
		}
		cmd := &metadv1.Command{Op: &metadv1.Command_RemoveGroup{RemoveGroup: &metadv1.RemoveGroup{
			Tenant: tenant, Group: req.GetGroup(), Force: req.GetForce(),
			TenantInstanceId: gt.Instance, GroupId: gt.GroupID, MaxObjectId: gt.MaxObjectID, StateEpoch: st.Epoch()}}}
		res, err := s.proposeMarked(ctx, st, cmd, toks)
		if err != nil {
			return false, fail(err, tenant, nil)
		}
		removed = uint64(res.Count)
		return res.Reason == store.ObjectAlreadyExists || res.Reason == store.StateReplaced, rejected(&res, tenant, nil)
	})
	if err != nil {
		return nil, err
	}
	return &metadv1.RemoveGroupResponse{Removed: removed}, nil
}
