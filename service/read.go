package service

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/wire"
)

// Reads: Get, Exist, their batches and ListGroup, linearizable on the leader (a read barrier, then
// the state and the reservations as of one instant: readThrough) or stale from any node.

// getObject reads an object; with lease (linearizable reads on the leader) it grants a read lease,
// otherwise (stale reads) it only looks.
func getObject(ctx context.Context, st *store.Store, now int64, tenant, key string, lease bool) (store.GetResult, error) {
	if lease {
		return settled(ctx, func() (store.GetResult, error) { return st.Get(now, tenant, key) })
	}
	return st.Peek(tenant, key)
}

// settled runs fn again while the store answers store.ErrUnlinkPending: the object's removal or
// eviction has been proposed and its outcome is not known yet, so neither "found" nor "not found"
// would be linearizable. The mark goes when that proposal commits or fails, so the wait is short;
// it ends with the caller's context, and after maxSettle at the latest with UNAVAILABLE (a mark
// whose outcome stays unknown lasts until the next term; the client retries).
func settled[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	wait := 200 * time.Microsecond
	deadline := time.Now().Add(maxSettle)
	for {
		v, err := fn()
		if !errors.Is(err, store.ErrUnlinkPending) {
			return v, err
		}
		if time.Now().After(deadline) {
			return v, fmt.Errorf("%w: the object's removal has been pending for %s", ha.ErrTimeout, maxSettle)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
}

// readThrough runs read, a read of one key in the leader's state, and answers for a key that a
// reservation holds too (a write answered from the arenas and not committed yet): with linear,
// when the state does not hold the key and a reservation does, REPLICA_IS_NOT_READY, as for a
// write in progress through the log. The state and the reservations are looked at one after the
// other, and a PutCommit may apply and settle its reservation between the two looks. A
// reservation ends only after its commit applied (or its write was revoked or reaped), so when
// neither holds the key the state is read once more and its answer stands: each answer is one the
// key had at some instant within the call. Stale reads see the state alone.
func readThrough[T any](s *Service, linear bool, tenant, key string, read func() (T, error)) (T, error) {
	v, err := read()
	if !linear || s.cfg.NoArenas || !errors.Is(err, store.ErrObjectNotFound) {
		return v, err
	}
	if s.res.holds(tenant, key) {
		return v, errReservedNotReady
	}
	return read()
}

// errReservedNotReady answers a read of a key a live reservation holds.
var errReservedNotReady = &store.Error{Reason: store.ReplicaIsNotReady, Msg: "the object's write is in progress"}

// maxSettle bounds how long a read waits for an object's pending removal to resolve.
const maxSettle = 5 * time.Second

// readKeyOf validates the tenant and key of a read.
func readKeyOf(tenant string, key []byte) (string, string, error) {
	t, err := tenantOf(tenant)
	if err != nil {
		return "", "", err
	}
	k, err := keyOf(key)
	return t, k, err
}

// Get returns where to read an object and grants a read lease (not on a stale read).
func (s *Service) Get(ctx context.Context, req *metadv1.GetRequest) (*metadv1.GetResponse, error) {
	tenant, key, err := readKeyOf(req.GetTenant(), req.GetKey())
	if err != nil {
		return nil, fail(err, req.GetTenant(), req.GetKey())
	}
	st, linear, err := s.readState(ctx, req.GetStale())
	if err != nil {
		return nil, err
	}
	now := s.cfg.nowNano()
	v, err := readThrough(s, linear, tenant, key, func() (store.GetResult, error) { return getObject(ctx, st, now, tenant, key, linear) })
	if err != nil {
		return nil, fail(err, tenant, req.GetKey())
	}
	var hits tierHits
	hits.add(v.Replicas)
	s.m.hit(&hits)
	s.readHit(tenant, key, v.Replicas, linear)
	resp := &metadv1.GetResponse{Replicas: wire.ReplicasTo(st.Segments(), v.Replicas, v.Size), Size: v.Size, DataType: v.DataType}
	if linear {
		resp.LeaseTtlMs = ms(st.LeaseTTL())
	}
	return resp, nil
}

// Exist reports whether an object is readable, leasing it if so (not on a stale read).
func (s *Service) Exist(ctx context.Context, req *metadv1.ExistRequest) (*metadv1.ExistResponse, error) {
	tenant, key, err := readKeyOf(req.GetTenant(), req.GetKey())
	if err != nil {
		return nil, fail(err, req.GetTenant(), req.GetKey())
	}
	st, linear, err := s.readState(ctx, req.GetStale())
	if err != nil {
		return nil, err
	}
	var ok bool
	if linear {
		ex, err := settled(ctx, func() ([]bool, error) { return st.Exist(s.cfg.nowNano(), tenant, []string{key}) })
		if err != nil {
			return nil, fail(err, tenant, req.GetKey())
		}
		ok = ex[0]
	} else {
		_, err := st.Peek(tenant, key)
		ok = err == nil
	}
	resp := &metadv1.ExistResponse{Exists: ok}
	if ok && linear {
		resp.LeaseTtlMs = ms(st.LeaseTTL())
	}
	return resp, nil
}

// BatchGet is Get for many keys; one result per key in request order.
func (s *Service) BatchGet(ctx context.Context, req *metadv1.BatchGetRequest) (*metadv1.BatchGetResponse, error) {
	tenant, keys, err := tenantReadKeysOf(req.GetTenant(), req.GetKeys())
	if err != nil {
		return nil, err
	}
	st, linear, err := s.readState(ctx, req.GetStale())
	if err != nil {
		return nil, err
	}
	now := s.cfg.nowNano()
	out := &metadv1.BatchGetResponse{Results: make([]*metadv1.BatchGetResponse_Result, len(keys))}
	found := false
	size := 0
	var hits tierHits
	defer s.m.hit(&hits)
	for i, k := range keys {
		if size > MaxBatchGetResponseBytes {
			limitReached(out.Results[i:], MaxBatchGetResponseBytes)
			break
		}
		v, err := readThrough(s, linear, tenant, k, func() (store.GetResult, error) { return getObject(ctx, st, now, tenant, k, linear) })
		r := &metadv1.BatchGetResponse_Result{Status: wire.ErrItem(err)}
		if err == nil {
			found = true
			hits.add(v.Replicas)
			s.readHit(tenant, k, v.Replicas, linear)
			r.Replicas, r.Size, r.DataType = wire.ReplicasTo(st.Segments(), v.Replicas, v.Size), v.Size, v.DataType
		}
		out.Results[i] = r
		size += resultOverhead + proto.Size(r)
	}
	if found && linear {
		out.LeaseTtlMs = ms(st.LeaseTTL())
	}
	return out, nil
}

// MaxBatchGetResponseBytes bounds the results of one BatchGet response: once the results answered
// pass it, every later key is answered RESPONSE_LIMIT_REACHED without being looked up (no lease),
// and the client asks for those again. The first key is always answered, and one result is at
// most 16 replicas (under 20 KiB), so a response stays under 33 MiB, within the 64 MiB the clients
// and a forwarding follower accept. 65,536 keys of one replica each with a short endpoint take
// about 6 MiB and never reach it.
const MaxBatchGetResponseBytes = 32 << 20

// resultOverhead is what a result costs in its response beyond its own encoding: the field's tag
// and length prefix (at most 5 bytes: a result is far under 2^28 bytes).
const resultOverhead = 6

// limitReached answers every result of rest RESPONSE_LIMIT_REACHED.
func limitReached(rest []*metadv1.BatchGetResponse_Result, bound int) {
	st := &metadv1.Status{Reason: metadv1.Reason_REASON_RESPONSE_LIMIT_REACHED,
		Message: fmt.Sprintf("the response reached its bound of %d bytes before this key; ask for it again", bound)}
	for i := range rest {
		rest[i] = &metadv1.BatchGetResponse_Result{Status: st}
	}
}

// BatchExist is Exist for many keys (up to store.MaxReadBatch); one answer per key in request
// order, after one read barrier for the whole call.
func (s *Service) BatchExist(ctx context.Context, req *metadv1.BatchExistRequest) (*metadv1.BatchExistResponse, error) {
	tenant, keys, err := tenantReadKeysOf(req.GetTenant(), req.GetKeys())
	if err != nil {
		return nil, err
	}
	st, linear, err := s.readState(ctx, req.GetStale())
	if err != nil {
		return nil, err
	}
	if !linear {
		return &metadv1.BatchExistResponse{Exists: st.Contains(tenant, keys)}, nil
	}
	exists, err := settled(ctx, func() ([]bool, error) { return st.Exist(s.cfg.nowNano(), tenant, keys) })
	if err != nil {
		return nil, fail(err, tenant, nil)
	}
	out := &metadv1.BatchExistResponse{Exists: exists}
	for _, e := range exists {
		if e {
			out.LeaseTtlMs = ms(st.LeaseTTL())
			break
		}
	}
	return out, nil
}

// ListGroup returns one page of a group's member keys in byte order.
func (s *Service) ListGroup(ctx context.Context, req *metadv1.ListGroupRequest) (*metadv1.ListGroupResponse, error) {
	tenant, err := tenantOf(req.GetTenant())
	if err != nil {
		return nil, fail(err, req.GetTenant(), nil)
	}
	group, err := namedGroupOf(req.GetGroup())
	if err != nil {
		return nil, fail(err, tenant, nil)
	}
	if n := len(req.GetStartAfter()); n > store.MaxKeyLen {
		return nil, fail(badf("start_after", "length %d over %d", n, store.MaxKeyLen), tenant, nil)
	}
	limit := int(req.GetLimit())
	if limit == 0 {
		limit = defaultListPage
	}
	if limit > maxListPage {
		return nil, fail(badf("limit", "%d over %d", limit, maxListPage), tenant, nil)
	}
	after := string(req.GetStartAfter())
	st, _, err := s.readState(ctx, req.GetStale())
	if err != nil {
		return nil, err
	}
	keys, err := st.ListGroup(tenant, group)
	if err != nil {
		return nil, fail(err, tenant, nil)
	}
	i := 0
	if after != "" {
		i = sort.SearchStrings(keys, after)
		if i < len(keys) && keys[i] == after {
			i++
		}
	}
	page := keys[i:]
	out := &metadv1.ListGroupResponse{}
	if len(page) > limit {
		page, out.Truncated = page[:limit], true
	}
	out.Keys = make([][]byte, len(page))
	for j, k := range page {
		out.Keys[j] = []byte(k)
	}
	return out, nil
}
