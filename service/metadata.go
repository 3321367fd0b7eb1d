package service

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// Page size of ListGroup: the default and the largest page a request may ask for.
const (
	defaultListPage = 1024
	maxListPage     = store.MaxBatch
)

// ms converts a duration to the wire's milliseconds.
func ms(d time.Duration) uint64 { return uint64(d / time.Millisecond) }

// ---- writes ---------------------------------------------------------------------------------

// putStartOf validates a PutStart (or UpsertStart) and builds its command, stamped with the
// cluster settings of this node (the leader's when it is proposed).
func (s *Service) putStartOf(tenant string, client, key, group []byte, size uint64, cfg *metadv1.ReplicaConfig) (*metadv1.PutStart, error) {
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
	if _, err := groupOf(group); err != nil {
		return nil, err
	}
	if err := sizeOf(size); err != nil {
		return nil, err
	}
	rc, err := configOf(cfg)
	if err != nil {
		return nil, err
	}
	return &metadv1.PutStart{Tenant: t, ClientId: c[:], Key: key, Group: group, Size: size, Config: rc,
		Placement: wire.StrategyTo(s.cfg.Strategy), PutDiscardTimeoutMs: ms(s.cfg.PutDiscardTimeout)}, nil
}

// localFirst resolves a request's preferred host (config.preferred_host, validated) on the leader:
// the MEMORY segments whose endpoint names that host (alloc.HostSegments, at most
// alloc.MaxHostSegments, in the placement strategy's order, shuffled with a seed drawn here) go
// into the command's preferred segments after the ones the request names, which still come first
// (a segment named both ways stays where the request put it). Apply then tries them before the
// usual order and needs no rule of its own: the command carries the decision, so every node
// places alike, and a full or unmounted host segment is passed over as any preferred one is, so a
// put whose host is full falls back to the usual placement. The host's segments are read from the
// leader's applied state; one mounted by an entry not yet applied is not preferred.
func (s *Service) localFirst(rc *metadv1.ReplicaConfig, host string) {
	if host == "" {
		return
	}
	ids := s.state().Segments().HostSegments(host, alloc.TierMemory, s.cfg.Strategy, rand.Uint64())
	if len(ids) == 0 {
		return
	}
	named := make(map[alloc.ID]struct{}, len(rc.PreferredSegmentIds))
	for _, raw := range rc.PreferredSegmentIds {
		named[alloc.ID(raw)] = struct{}{}
	}
	pref := slices.Clip(rc.PreferredSegmentIds) // never append into the request's array
	for _, id := range ids {
		if _, dup := named[id]; !dup {
			pref = append(pref, id[:]) // id is this iteration's own variable
		}
	}
	rc.PreferredSegmentIds = pref
}

// endOf validates the fields shared by PutEnd, PutRevoke, UpsertEnd and UpsertRevoke.
func endOf(tenant string, client, key []byte, tier metadv1.Tier) (string, alloc.ID, error) {
	t, err := tenantOf(tenant)
	if err != nil {
		return "", alloc.ID{}, err
	}
	c, err := clientOf("client_id", client)
	if err != nil {
		return "", alloc.ID{}, err
	}
	if _, err := keyOf(key); err != nil {
		return "", alloc.ID{}, err
	}
	return t, c, tierOf("tier", tier)
}

// propose commits cmd and returns its result, or the status of a Raft failure or a rejection. A
// command the leader's state refuses is answered from it without a log entry (proposeChecked).
func (s *Service) propose(ctx context.Context, cmd *metadv1.Command, tenant string, key []byte) (store.Result, error) {
	res, err := s.proposeChecked(ctx, cmd)
	if err != nil {
		return res, fail(err, tenant, key)
	}
	return res, rejected(&res, tenant, key)
}

// PutStart places a new object.
func (s *Service) PutStart(ctx context.Context, req *metadv1.PutStartRequest) (*metadv1.PutStartResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	ps, err := s.putStartOf(req.GetTenant(), req.GetClientId(), req.GetKey(), req.GetGroup(), req.GetSize(), req.GetConfig())
	if err != nil {
		return nil, fail(err, req.GetTenant(), req.GetKey())
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	s.localFirst(ps.Config, req.GetConfig().GetPreferredHost())
	want := ps.Size * uint64(max(ps.GetConfig().GetMemoryReplicas(), 1))
	if err := s.reservedQuota(ctx, ps.Tenant, ps.Key, want); err != nil {
		return nil, err
	}
	if !s.cfg.NoArenas {
		reps, ok, err := s.res.tryReserve(ctx, ps)
		if err != nil {
			return nil, err
		}
		if ok {
			return &metadv1.PutStartResponse{Replicas: reps}, nil
		}
	}
	done, err := s.classicStart(ps, false)
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := s.proposePut(ctx, &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: ps}}, ps.Tenant, ps.Key, want)
	if err != nil {
		return nil, err
	}
	return &metadv1.PutStartResponse{Replicas: wire.ReplicasTo(s.state().Segments(), res.Replicas, ps.Size)}, nil
}

// reservedQuota checks a put of want bytes against the tenant's quota with what reservations hold
// counted in, which the log's check cannot see: over it, the tenant's own objects are evicted for
// the difference (Config.Evictor) and the quota checked again, at most twice (SEMANTICS
// section 6); still over, the put is refused TENANT_QUOTA_EXCEEDED. A put over the quota by the
// state's charge alone is evicted for here too when it may be answered from the arenas, since it
// then takes no log path that would evict for it.
func (s *Service) reservedQuota(ctx context.Context, tenant string, key []byte, want uint64) error {
	over, held := s.res.heldOver(s.state(), tenant, want)
	for attempt := 0; over > 0 && attempt < 2 && s.cfg.Evictor != nil; attempt++ {
		if freed, err := s.evictForQuota(ctx, tenant, want+held); err != nil || freed == 0 {
			break // nothing could be freed: the refusal stands
		}
		over, held = s.res.heldOver(s.state(), tenant, want)
	}
	if over == 0 {
		return nil
	}
	t := s.state().Tenants().Lookup(tenant)
	if t == nil {
		return nil // the log decides
	}
	return quotaErr(tenant, key, t.Quota(), held, want)
}

// classicStart marks a PutStart (or, with upsert, an UpsertStart) that goes through the log (no
// reservation is made for its key until it is decided) and returns the function that unmarks it;
// a key a live reservation holds is refused as the state refuses a key whose write is in progress
// (putBlocked, upsertBlocked).
func (s *Service) classicStart(ps *metadv1.PutStart, upsert bool) (func(), error) {
	keys := [][]byte{ps.Key}
	blocked := putBlocked(ps.Tenant, keys, time.Duration(ps.PutDiscardTimeoutMs)*time.Millisecond)
	if upsert {
		blocked = upsertBlocked(ps.Tenant, ps.Key, ps.Group)
	}
	refused, done := s.res.startClassic(ps.Tenant, keys, blocked)
	if err := refused[0]; err != nil {
		done()
		return nil, err
	}
	return done, nil
}

// proposePut proposes a put that charges want bytes of quota. Rejected with
// TENANT_QUOTA_EXCEEDED, it has the leader evict that tenant's own objects until the deficit is
// freed (Config.Evictor) and tries again, at most twice (SEMANTICS section 6).
func (s *Service) proposePut(ctx context.Context, cmd *metadv1.Command, tenant string, key []byte, want uint64) (store.Result, error) {
	for attempt := 0; ; attempt++ {
		res, err := s.proposeRoomy(ctx, cmd)
		if err != nil {
			return res, fail(err, tenant, key)
		}
		if res.Reason != store.TenantQuotaExceeded || attempt == 2 || s.cfg.Evictor == nil {
			return res, rejected(&res, tenant, key)
		}
		if freed, eerr := s.evictForQuota(ctx, tenant, want); eerr != nil || freed == 0 {
			return res, rejected(&res, tenant, key) // nothing could be freed: the rejection stands
		}
	}
}

// proposeRoomy proposes a command that places replicas (proposeChecked). Refused
// NO_AVAILABLE_HANDLE while this leader's idle arenas hold free bytes apart from the segments'
// other free spans, it retires those arenas (reservations.retireIdle) and proposes once more: an
// arena's bytes never make a placement fail.
func (s *Service) proposeRoomy(ctx context.Context, cmd *metadv1.Command) (store.Result, error) {
	res, err := s.proposeChecked(ctx, cmd)
	if err == nil && res.Reason == store.NoAvailableHandle && !s.cfg.NoArenas && s.res.retireIdle(ctx, 0) {
		return s.proposeChecked(ctx, cmd)
	}
	return res, err
}

// endRequest is what PutEnd, PutRevoke, UpsertEnd and UpsertRevoke requests share.
type endRequest interface {
	proto.Message
	GetSession() *metadv1.SessionHeader
	GetTenant() string
	GetClientId() []byte
	GetKey() []byte
	GetTier() metadv1.Tier
}

// endWrite is the path those four share: validate, then propose on the leader (or forward) the
// command that wrap builds from the validated fields (given as a PutEnd), answering with an empty
// response.
//
// A write the leader reserved in its arenas ends here instead (reservations.endReserved): its
// PutEnd or UpsertEnd (commit) proposes PutCommit, its PutRevoke or UpsertRevoke drops it. A
// commit of a write this leader does not know, refused OBJECT_NOT_FOUND while reservations of an
// earlier term may have been lost, answers RESERVATION_LOST: place the object again.
func endWrite[Resp any, P interface {
	*Resp
	proto.Message
}](ctx context.Context, s *Service, req endRequest, commit bool, wrap func(*metadv1.PutEnd) *metadv1.Command) (P, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	tenant, client, err := endOf(req.GetTenant(), req.GetClientId(), req.GetKey(), req.GetTier())
	if err != nil {
		return nil, fail(err, req.GetTenant(), req.GetKey())
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	if handled, err := s.res.endReserved(ctx, tenant, client, req.GetKey(), wire.TierFrom(req.GetTier()), commit); handled {
		if err != nil {
			return nil, err
		}
		return P(new(Resp)), nil
	}
	cmd := wrap(&metadv1.PutEnd{Tenant: tenant, ClientId: client[:], Key: req.GetKey(), Tier: req.GetTier()})
	if _, err := s.propose(ctx, cmd, tenant, req.GetKey()); err != nil {
		var se *store.Error
		if commit && errors.As(err, &se) && se.Reason == store.ObjectNotFound && s.res.lostPossible() {
			return nil, &Error{Err: &store.Error{Reason: store.ReservationLost,
				Msg: "no such write here; a leader change since its PutStart lost its reservation: place the object again"},
				Tenant: tenant, Key: req.GetKey()}
		}
		return nil, err
	}
	return P(new(Resp)), nil
}

// PutEnd commits a write.
func (s *Service) PutEnd(ctx context.Context, req *metadv1.PutEndRequest) (*metadv1.PutEndResponse, error) {
	return endWrite[metadv1.PutEndResponse](ctx, s, req, true, func(e *metadv1.PutEnd) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: e}}
	})
}

// PutRevoke abandons a write.
func (s *Service) PutRevoke(ctx context.Context, req *metadv1.PutRevokeRequest) (*metadv1.PutRevokeResponse, error) {
	return endWrite[metadv1.PutRevokeResponse](ctx, s, req, false, func(e *metadv1.PutEnd) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_PutRevoke{PutRevoke: &metadv1.PutRevoke{Tenant: e.Tenant, ClientId: e.ClientId, Key: e.Key, Tier: e.Tier}}}
	})
}

// UpsertStart inserts or rewrites an object.
func (s *Service) UpsertStart(ctx context.Context, req *metadv1.UpsertStartRequest) (*metadv1.UpsertStartResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	ps, err := s.putStartOf(req.GetTenant(), req.GetClientId(), req.GetKey(), req.GetGroup(), req.GetSize(), req.GetConfig())
	if err != nil {
		return nil, fail(err, req.GetTenant(), req.GetKey())
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	s.localFirst(ps.Config, req.GetConfig().GetPreferredHost())
	done, err := s.classicStart(ps, true)
	if err != nil {
		return nil, err
	}
	defer done()
	cmd := &metadv1.Command{Op: &metadv1.Command_UpsertStart{UpsertStart: &metadv1.UpsertStart{
		Tenant: ps.Tenant, ClientId: ps.ClientId, Key: ps.Key, Group: ps.Group, Size: ps.Size, Config: ps.Config,
		Placement: ps.Placement, PutDiscardTimeoutMs: ps.PutDiscardTimeoutMs}}}
	res, err := s.proposeRoomy(ctx, cmd)
	if err != nil {
		return nil, fail(err, ps.Tenant, ps.Key)
	}
	if err := rejected(&res, ps.Tenant, ps.Key); err != nil {
		return nil, err
	}
	return &metadv1.UpsertStartResponse{Replicas: wire.ReplicasTo(s.state().Segments(), res.Replicas, ps.Size), Reused: res.Reused}, nil
}

// UpsertEnd commits an upsert.
func (s *Service) UpsertEnd(ctx context.Context, req *metadv1.UpsertEndRequest) (*metadv1.UpsertEndResponse, error) {
	return endWrite[metadv1.UpsertEndResponse](ctx, s, req, true, func(e *metadv1.PutEnd) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_UpsertEnd{UpsertEnd: &metadv1.UpsertEnd{Tenant: e.Tenant, ClientId: e.ClientId, Key: e.Key, Tier: e.Tier}}}
	})
}

// UpsertRevoke abandons an upsert.
func (s *Service) UpsertRevoke(ctx context.Context, req *metadv1.UpsertRevokeRequest) (*metadv1.UpsertRevokeResponse, error) {
	return endWrite[metadv1.UpsertRevokeResponse](ctx, s, req, false, func(e *metadv1.PutEnd) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_UpsertRevoke{UpsertRevoke: &metadv1.UpsertRevoke{Tenant: e.Tenant, ClientId: e.ClientId, Key: e.Key, Tier: e.Tier}}}
	})
}

// BatchPutStart is PutStart for many keys in one command.
func (s *Service) BatchPutStart(ctx context.Context, req *metadv1.BatchPutStartRequest) (*metadv1.BatchPutStartResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	tenant, err := tenantOf(req.GetTenant())
	if err != nil {
		return nil, fail(err, req.GetTenant(), nil)
	}
	client, err := clientOf("client_id", req.GetClientId())
	if err != nil {
		return nil, fail(err, tenant, nil)
	}
	if err := batchOf("items", len(req.GetItems())); err != nil {
		return nil, fail(err, tenant, nil)
	}
	items := make([]*metadv1.BatchPutStart_Item, len(req.GetItems()))
	slab := make([]metadv1.BatchPutStart_Item, len(items)) // one allocation for the batch's items
	for i, it := range req.GetItems() {
		if _, err := keyOf(it.GetKey()); err != nil {
			return nil, fail(within("items", i, err), tenant, it.GetKey())
		}
		if _, err := groupOf(it.GetGroup()); err != nil {
			return nil, fail(within("items", i, err), tenant, it.GetKey())
		}
		if err := sizeOf(it.GetSize()); err != nil {
			return nil, fail(within("items", i, err), tenant, it.GetKey())
		}
		items[i] = &slab[i]
		items[i].Key, items[i].Group, items[i].Size = it.GetKey(), it.GetGroup(), it.GetSize()
	}
	if err := store.ValidateDistinct("items", len(items), func(i int) string { return string(items[i].Key) }); err != nil {
		return nil, fail(err, tenant, nil)
	}
	rc, err := configOf(req.GetConfig())
	if err != nil {
		return nil, fail(err, tenant, nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	s.localFirst(rc, req.GetConfig().GetPreferredHost())
	m := &metadv1.BatchPutStart{Tenant: tenant, ClientId: client[:], Config: rc, Items: items,
		Placement: wire.StrategyTo(s.cfg.Strategy), PutDiscardTimeoutMs: ms(s.cfg.PutDiscardTimeout)}
	// Items are answered from the arenas where they can be (answered); a key a live reservation
	// holds is refused here (OBJECT_ALREADY_EXISTS, or the reservation's own refusal); the others
	// go into one command, marked in flight until it is decided. With a session that command
	// names every item, those answered here marked reserved (apply skips them), so that the result
	// the session keeps covers the request: a retry gets each item's answer whichever way it then
	// goes, and an item answered from an arena that a leader change lost since answers
	// RESERVATION_LOST (the kept result has no replica for it).
	var answered []reserveAnswer
	if !s.cfg.NoArenas {
		answered = s.res.tryReserveBatch(ctx, m)
	}
	refused := map[int]error{}
	var rest [][]byte
	var restAt []int
	for i, it := range items {
		switch {
		case answered != nil && answered[i].err != nil:
			refused[i] = answered[i].err
		case answered != nil && answered[i].ok:
		default:
			rest, restAt = append(rest, it.Key), append(restAt, i)
		}
	}
	held, done := s.res.startClassic(tenant, rest, putBlocked(tenant, rest, s.cfg.PutDiscardTimeout))
	defer done()
	var logged []*metadv1.BatchPutStart_Item
	var loggedAt []int
	for j, i := range restAt {
		if err := held[j]; err != nil {
			refused[i] = err
			continue
		}
		logged, loggedAt = append(logged, items[i]), append(loggedAt, i)
	}
	out := &metadv1.BatchPutStartResponse{Results: make([]*metadv1.BatchPutStartResponse_Result, len(items))}
	for i := range items {
		switch {
		case refused[i] != nil:
			out.Results[i] = &metadv1.BatchPutStartResponse_Result{Status: errStatus(refused[i])}
		case answered != nil && answered[i].ok:
			out.Results[i] = &metadv1.BatchPutStartResponse_Result{Status: &metadv1.Status{}, Replicas: answered[i].reps}
		}
	}
	if len(logged) > 0 {
		m.Items = logged
		whole := len(logged) == len(items) // the command's items are the request's
		if sessionOf(ctx) != nil && !whole {
			m.Items, whole = make([]*metadv1.BatchPutStart_Item, len(items)), true
			for i, it := range items {
				m.Items[i] = it
				if out.Results[i] != nil { // answered here: reserved or refused
					m.Items[i] = &metadv1.BatchPutStart_Item{Key: it.Key, Group: it.Group, Size: it.Size, Reserved: true}
				}
			}
		}
		res, err := s.propose(ctx, &metadv1.Command{Op: &metadv1.Command_BatchPutStart{BatchPutStart: m}}, tenant, nil)
		if err != nil {
			// The request fails whole, so the items reserved for it must not stay reserved: the
			// caller never learns their ranges and would find its own keys taken.
			var mine [][]byte
			for i, it := range items {
				if answered != nil && answered[i].ok {
					mine = append(mine, it.Key)
				}
			}
			s.res.revokeMany(tenant, client, mine, 0)
			return nil, err
		}
		if len(res.Items) != len(m.Items) {
			return nil, internalf("BatchPutStart: %d results for %d items", len(res.Items), len(m.Items))
		}
		st := s.state()
		noRoom := false
		for j, i := range loggedAt {
			r := res.Items[j]
			if whole {
				r = res.Items[i]
			}
			noRoom = noRoom || r.Reason == store.NoAvailableHandle
			out.Results[i] = &metadv1.BatchPutStartResponse_Result{Status: wire.ItemStatus(r.Reason, r.Message)}
			switch {
			case r.Reason == store.OK && len(r.Replicas) == 0: // a kept answer of an item reserved then
				out.Results[i].Status = wire.ItemStatus(store.ReservationLost, "the item's reservation was lost: place it again")
			case r.Reason == store.OK:
				out.Results[i].Replicas = wire.ReplicasTo(st.Segments(), r.Replicas, items[i].Size)
			}
		}
		if noRoom && !s.cfg.NoArenas {
			// The batch is one command, answered as it applied; the items that found no span are
			// answered so, and this leader's idle arenas are retired for their retry.
			s.res.retireIdle(ctx, 0)
		}
	}
	return out, nil
}

// batchEndOf validates BatchPutEnd and BatchPutRevoke.
func batchEndOf(tenant string, client []byte, keys [][]byte, tier metadv1.Tier) (string, alloc.ID, error) {
	t, err := tenantOf(tenant)
	if err != nil {
		return "", alloc.ID{}, err
	}
	c, err := clientOf("client_id", client)
	if err != nil {
		return "", alloc.ID{}, err
	}
	if _, err := keysOf("keys", keys); err != nil {
		return "", alloc.ID{}, err
	}
	return t, c, tierOf("tier", tier)
}

// statuses maps per-item results to Statuses, checking there is one per item.
func statuses(method string, items []store.Result, n int) ([]*metadv1.Status, error) {
	if len(items) != n {
		return nil, internalf("%s: %d results for %d items", method, len(items), n)
	}
	out := make([]*metadv1.Status, n)
	for i, r := range items {
		out[i] = wire.ItemStatus(r.Reason, r.Message)
	}
	return out, nil
}

// batchEndRequest is what BatchPutEnd and BatchPutRevoke requests share.
type batchEndRequest interface {
	GetSession() *metadv1.SessionHeader
	GetTenant() string
	GetClientId() []byte
	GetKeys() [][]byte
	GetTier() metadv1.Tier
}

// batchEnd is the path BatchPutEnd and BatchPutRevoke share: validate, then propose on the leader
// the command that wrap builds from the validated fields (given as a BatchPutEnd), and answer one
// status per key.
func (s *Service) batchEnd(ctx context.Context, method string, req batchEndRequest, commit bool, wrap func(*metadv1.BatchPutEnd) *metadv1.Command) ([]*metadv1.Status, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	tenant, client, err := batchEndOf(req.GetTenant(), req.GetClientId(), req.GetKeys(), req.GetTier())
	if err != nil {
		return nil, fail(err, req.GetTenant(), nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	// A commit with a reserved key is one PutCommit of every key (reservations.commitMany). A
	// revoke drops the reservations without a log entry, and the others' writes go into one
	// command; with a session that command names every key, so that a retry, whichever way its
	// keys then go, finds the kept result of the same keys.
	keys := req.GetKeys()
	tier := wire.TierFrom(req.GetTier())
	var ended map[int]store.Result
	if commit {
		var proposed bool
		if ended, proposed, err = s.res.commitMany(ctx, tenant, client, keys, tier); err != nil {
			return nil, fail(err, tenant, nil) // a Raft failure: the outcome of the keys is unknown
		}
		if proposed {
			out := make([]*metadv1.Status, len(keys))
			for i := range keys {
				r := ended[i]
				out[i] = wire.ItemStatus(r.Reason, r.Message)
			}
			return out, nil
		}
	} else {
		ended = s.res.revokeMany(tenant, client, keys, tier)
	}
	logged, loggedAt := keys, []int(nil)
	if len(ended) > 0 && (commit || sessionOf(ctx) == nil) {
		logged = nil
		for i, k := range keys {
			if _, done := ended[i]; !done {
				logged, loggedAt = append(logged, k), append(loggedAt, i)
			}
		}
	}
	out := make([]*metadv1.Status, len(keys))
	if len(logged) > 0 {
		cmd := wrap(&metadv1.BatchPutEnd{Tenant: tenant, ClientId: client[:], Keys: logged, Tier: req.GetTier()})
		res, err := s.propose(ctx, cmd, tenant, nil)
		if err != nil {
			return nil, err
		}
		sts, err := statuses(method, res.Items, len(logged))
		if err != nil {
			return nil, err
		}
		for j, st := range sts {
			i := j
			if loggedAt != nil {
				i = loggedAt[j]
			}
			out[i] = st
		}
	}
	for i, r := range ended { // a reserved key's answer stands over the log's
		out[i] = wire.ItemStatus(r.Reason, r.Message)
	}
	return out, nil
}

// errStatus is an item's Status for the rejection of a call that ended one key (nil: OK).
func errStatus(err error) *metadv1.Status {
	var se *store.Error
	if errors.As(err, &se) {
		return wire.ItemStatus(se.Reason, se.Msg)
	}
	return &metadv1.Status{}
}

// BatchPutEnd is PutEnd for many keys in one command.
func (s *Service) BatchPutEnd(ctx context.Context, req *metadv1.BatchPutEndRequest) (*metadv1.BatchPutEndResponse, error) {
	sts, err := s.batchEnd(ctx, "BatchPutEnd", req, true, func(e *metadv1.BatchPutEnd) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_BatchPutEnd{BatchPutEnd: e}}
	})
	if err != nil {
		return nil, err
	}
	return &metadv1.BatchPutEndResponse{Results: sts}, nil
}

// BatchPutRevoke is PutRevoke for many keys in one command.
func (s *Service) BatchPutRevoke(ctx context.Context, req *metadv1.BatchPutRevokeRequest) (*metadv1.BatchPutRevokeResponse, error) {
	sts, err := s.batchEnd(ctx, "BatchPutRevoke", req, false, func(e *metadv1.BatchPutEnd) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_BatchPutRevoke{BatchPutRevoke: &metadv1.BatchPutRevoke{
			Tenant: e.Tenant, ClientId: e.ClientId, Keys: e.Keys, Tier: e.Tier}}}
	})
	if err != nil {
		return nil, err
	}
	return &metadv1.BatchPutRevokeResponse{Results: sts}, nil
}

// ---- segments and clients -------------------------------------------------------------------

// MountSegment mounts a segment of the calling client.
func (s *Service) MountSegment(ctx context.Context, req *metadv1.MountSegmentRequest) (*metadv1.MountSegmentResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	client, err := clientOf("client_id", req.GetClientId())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	seg, err := segmentOf(client, req.GetSegment())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	// propose refuses from the applied state (another owner, a conflict, a tier whose capacity
	// would overflow) without a log entry; apply checks again.
	cmd := &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: seg}}}
	if _, err := s.propose(ctx, cmd, "", nil); err != nil {
		return nil, err
	}
	s.live.touch(client, s.cfg.nowNano())
	return &metadv1.MountSegmentResponse{}, nil
}

// UnmountSegment drops a segment of the calling client.
func (s *Service) UnmountSegment(ctx context.Context, req *metadv1.UnmountSegmentRequest) (*metadv1.UnmountSegmentResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	client, err := clientOf("client_id", req.GetClientId())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	seg, err := segmentIDOf("segment_id", req.GetSegmentId())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	if g := req.GetGraceMs(); g > uint64(MaxUnmountGrace.Milliseconds()) {
		return nil, fail(badf("grace_ms", "%d over %d (24 h)", g, MaxUnmountGrace.Milliseconds()), "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	if g := req.GetGraceMs(); g > 0 {
		// The deadline is this leader's clock now plus the grace, stamped into the command.
		cmd := &metadv1.Command{Op: &metadv1.Command_CloseSegment{CloseSegment: &metadv1.CloseSegment{
			ClientId: client[:], SegmentId: seg[:], UnmountAtUnixNano: s.cfg.nowNano() + int64(g)*int64(time.Millisecond)}}}
		res, err := s.propose(ctx, cmd, "", nil)
		if err != nil {
			return nil, err
		}
		return &metadv1.UnmountSegmentResponse{ReplicasDropped: uint64(res.Unmount.Replicas), ObjectsErased: uint64(res.Unmount.Erased),
			Closing: res.Unmount.UnmountAt != 0, UnmountAtUnixNano: res.Unmount.UnmountAt}, nil
	}
	cmd := &metadv1.Command{Op: &metadv1.Command_UnmountSegment{UnmountSegment: &metadv1.UnmountSegment{
		ClientId: client[:], SegmentIds: [][]byte{req.GetSegmentId()}, Reason: metadv1.UnmountReason_UNMOUNT_REASON_CLIENT_REQUEST}}}
	res, err := s.propose(ctx, cmd, "", nil)
	if err != nil {
		return nil, err
	}
	return &metadv1.UnmountSegmentResponse{ReplicasDropped: uint64(res.Unmount.Replicas), ObjectsErased: uint64(res.Unmount.Erased)}, nil
}

// Ping records that the client is alive (leader soft state) and returns its view of the cluster.
func (s *Service) Ping(ctx context.Context, req *metadv1.PingRequest) (*metadv1.PingResponse, error) {
	client, err := clientOf("client_id", req.GetClientId())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	s.live.touch(client, s.cfg.nowNano())
	// The segments are read from the state: not before it holds everything committed before
	// this term, or a worker would be told its segments are gone and mount them again.
	if err := s.b.LeaderReady(ctx); err != nil {
		return nil, fail(err, "", nil)
	}
	ids := s.state().Segments().SegmentsOf(client)
	out := &metadv1.PingResponse{SegmentIds: make([][]byte, len(ids)), ClientTtlMs: ms(s.cfg.ClientTTL)}
	for i, id := range ids {
		out.SegmentIds[i] = id[:]
	}
	st := s.b.Status()
	out.LeaderName, out.LeaderAddress, out.Term = st.Name, st.ClientAddr, st.Term
	if members, err := s.b.Members(); err == nil {
		for _, mb := range members {
			if mb.ClientAddr != "" {
				out.MemberAddresses = append(out.MemberAddresses, mb.ClientAddr)
			}
		}
		sort.Strings(out.MemberAddresses)
	}
	return out, nil
}
