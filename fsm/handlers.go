package fsm

import (
	"slices"
	"sync"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// applyCreateTask schedules a task; its result's Tasks holds it.
func applyCreateTask(st *State, e env, spec store.TaskSpec) store.Result {
	s := st.store
	id, err := s.Tasks().Create(e.now, spec)
	r := fromErr(err)
	if err == nil {
		t, qerr := s.Tasks().Get(id)
		if qerr != nil {
			panic("fsm: a task created by this entry is not kept: " + qerr.Error())
		}
		r.Tasks = []store.Task{t}
	}
	return r
}

// applyFetchTasks hands a worker its oldest pending tasks; its result's Tasks holds them.
func applyFetchTasks(st *State, e env, m *metadv1.FetchTasks) store.Result {
	s := st.store
	tasks, err := s.Tasks().Fetch(e.now, wire.ID16(m.GetClientId()), int(min(m.GetBatch(), 1<<20)))
	r := fromErr(err)
	r.Tasks = tasks
	return r
}

func applyCompleteTask(st *State, e env, m *metadv1.CompleteTask) store.Result {
	s := st.store
	return fromErr(s.Tasks().Complete(e.now, wire.ID16(m.GetClientId()), m.GetTaskId(), m.GetSuccess(), m.GetMessage()))
}

// applyReplicaTaskStart starts a copy or move; its result's Replicas are the source, then the
// targets, and its Bytes the object's size.
func applyReplicaTaskStart(st *State, e env, m *metadv1.ReplicaTaskStart) store.Result {
	ts, err := st.store.StartReplicaTask(e.now, e.seed, wire.ReplicaTaskFrom(m))
	r := fromErr(err)
	if err == nil {
		r.Replicas = append([]store.Replica{ts.Source}, ts.Targets...)
		r.Bytes = ts.Size
	}
	return r
}

// taskEndFields is what ReplicaTaskEnd and ReplicaTaskRevoke have in common.
type taskEndFields interface {
	GetTenant() string
	GetClientId() []byte
	GetKey() []byte
	GetKind() metadv1.TaskKind
}

// taskEndReq decodes a ReplicaTaskEnd or ReplicaTaskRevoke (got by get) into its store request.
func taskEndReq(get func(*metadv1.Command) taskEndFields) func(*metadv1.Command) store.ReplicaTaskEndRequest {
	return func(c *metadv1.Command) store.ReplicaTaskEndRequest {
		m := get(c)
		return wire.ReplicaTaskEndFrom(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetKind())
	}
}

func applyReplicaTaskEnd(st *State, e env, req store.ReplicaTaskEndRequest) store.Result {
	return fromErr(st.store.EndReplicaTask(e.now, req))
}

func applyReplicaTaskRevoke(st *State, e env, req store.ReplicaTaskEndRequest) store.Result {
	return fromErr(st.store.RevokeReplicaTask(e.now, req))
}

// applySetMember records a member's addresses. Its name must be a valid member name
// (ValidateMemberName) on entries written under rulesLimits; before, only not empty.
func applySetMember(st *State, e env, m *metadv1.SetMember) store.Result {
	if m.GetName() == "" {
		return store.Result{Reason: store.InvalidParams, Message: "member: empty name"}
	}
	if e.rules >= rulesLimits {
		if err := ValidateMemberName(m.GetName()); err != nil {
			return fromErr(err)
		}
	}
	ms := st.Members()
	ms[m.GetName()] = Member{Name: m.GetName(), PeerAddr: m.GetPeerAddress(), ClientAddr: m.GetClientAddress(), Level: m.GetFeatureLevel()}
	st.setMembers(ms)
	return store.Result{}
}

func applyForgetMember(st *State, _ env, m *metadv1.ForgetMember) store.Result {
	ms := st.Members()
	delete(ms, m.GetName())
	st.setMembers(ms)
	return store.Result{}
}

// putStartFields is what PutStart and UpsertStart have in common: the fields of a
// store.PutStartRequest.
type putStartFields interface {
	GetTenant() string
	GetClientId() []byte
	GetKey() []byte
	GetGroup() []byte
	GetSize() uint64
	GetConfig() *metadv1.ReplicaConfig
	GetPlacement() metadv1.PlacementStrategy
	GetPutDiscardTimeoutMs() uint64
}

// putStartReq decodes a PutStart or UpsertStart (got by get) into its store request.
func putStartReq(get func(*metadv1.Command) putStartFields) func(*metadv1.Command) store.PutStartRequest {
	return func(c *metadv1.Command) store.PutStartRequest {
		m := get(c)
		return wire.PutStartFrom(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetGroup(),
			m.GetSize(), m.GetConfig(), m.GetPlacement(), m.GetPutDiscardTimeoutMs())
	}
}

func applyPutStart(st *State, e env, req store.PutStartRequest) store.Result {
	reps, err := st.store.PutStart(e.now, e.seed, req)
	r := fromErr(err)
	r.Replicas = reps
	if err == nil {
		e.m.countShort(req.Config, reps)
	}
	return r
}

func applyUpsertStart(st *State, e env, req store.PutStartRequest) store.Result {
	reps, reused, err := st.store.Upsert(e.now, e.seed, req)
	r := fromErr(err)
	r.Replicas, r.Reused = reps, reused
	if err == nil && !reused { // reused extents were placed by an earlier put
		e.m.countShort(req.Config, reps)
	}
	return r
}

// applyPutCommit creates objects from ranges the leader reserved in its arenas (store.CommitPuts);
// one result per item. Repeated keys refuse the whole command, as a batch's do.
func applyPutCommit(st *State, e env, m *metadv1.PutCommit) store.Result {
	s := st.store
	if r, ok := distinct(e, "items", len(m.GetItems()), func(i int) []byte { return m.GetItems()[i].GetKey() }); !ok {
		return r
	}
	errs := s.CommitPuts(e.now, wire.CommitFrom(m))
	out := store.Result{Items: make([]store.Result, len(errs))}
	for i, err := range errs {
		out.Items[i] = fromErr(err)
	}
	if len(out.Items) == 1 {
		out.Reason, out.Message = out.Items[0].Reason, out.Items[0].Message
	}
	return out
}

// applyArenaGrant grants arenas to the leader of the command's term (store.ArenaTable.Grant);
// Count is how many were granted.
func applyArenaGrant(st *State, _ env, m *metadv1.ArenaGrant) store.Result {
	s := st.store
	return store.Result{Count: len(s.Arenas().Grant(m.GetTerm(), wire.ArenaSpecsFrom(m)))}
}

// applyArenaRetire returns arenas' unused bytes to their segments (store.ArenaTable.Retire);
// Count is how many were retired.
func applyArenaRetire(st *State, _ env, m *metadv1.ArenaRetire) store.Result {
	return store.Result{Count: st.store.Arenas().Retire(m.GetArenaIds())}
}

func endReq(tenant string, client, key []byte, tier metadv1.Tier) store.PutEndRequest {
	return store.PutEndRequest{Tenant: tenant, Client: wire.ID16(client), Key: string(key), Tier: wire.TierFrom(tier)}
}

// endFields is what the commands that end or revoke one write have in common.
type endFields interface {
	GetTenant() string
	GetClientId() []byte
	GetKey() []byte
	GetTier() metadv1.Tier
}

// endReqOf decodes a PutEnd, PutRevoke, UpsertEnd or UpsertRevoke (got by get) into its store
// request.
func endReqOf(get func(*metadv1.Command) endFields) func(*metadv1.Command) store.PutEndRequest {
	return func(c *metadv1.Command) store.PutEndRequest {
		m := get(c)
		return endReq(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetTier())
	}
}

func applyPutEnd(st *State, e env, req store.PutEndRequest) store.Result {
	return fromErr(st.store.PutEnd(e.now, req))
}

func applyPutRevoke(st *State, e env, req store.PutEndRequest) store.Result {
	return fromErr(st.store.PutRevoke(e.now, req))
}

func applyUpsertEnd(st *State, e env, req store.PutEndRequest) store.Result {
	return fromErr(st.store.UpsertEnd(e.now, req))
}

func applyUpsertRevoke(st *State, e env, req store.PutEndRequest) store.Result {
	return fromErr(st.store.UpsertRevoke(e.now, req))
}

// eraseRefs erases the objects the leader prepared: each ref must still be that object of that
// tenant instance (instance 0: the current instance).
func eraseRefs(s *store.Store, tenant string, instance uint64, refs []*metadv1.ObjectRef) []store.Result {
	tenant = store.NormalizeTenant(tenant)
	toks := make([]store.ObjectToken, len(refs))
	for i, ref := range refs {
		toks[i] = store.ObjectToken{Tenant: tenant, Instance: instance, Key: string(ref.GetKey()), ObjectID: ref.GetObjectId()}
	}
	return items(s.EraseTokens(toks, false))
}

func applyRemove(st *State, e env, m *metadv1.Remove) store.Result {
	s := st.store
	return fromErr(s.RemoveObject(store.ObjectToken{Tenant: m.GetTenant(), Instance: m.GetTenantInstanceId(),
		Key: string(m.GetKey()), ObjectID: m.GetObjectId()}))
}

// applyRemoveAll erases exactly the targets the leader prepared (with or without force the leader
// lists them: leases and PROCESSING checks need its soft state and the census).
func applyRemoveAll(st *State, e env, m *metadv1.RemoveAll) store.Result {
	s := st.store
	if s.Tenants().Lookup(store.NormalizeTenant(m.GetTenant())) == nil {
		return fromErr(&store.Error{Reason: store.TenantNotRegistered, Msg: "tenant " + m.GetTenant() + " is not registered"})
	}
	rs := eraseRefs(s, m.GetTenant(), m.GetTenantInstanceId(), m.GetTargets())
	return store.Result{Count: countOK(rs), Items: rs}
}

func applyRemoveGroup(st *State, e env, m *metadv1.RemoveGroup) store.Result {
	s := st.store
	n, err := s.EraseGroup(store.GroupToken{Tenant: m.GetTenant(), Instance: m.GetTenantInstanceId(),
		Group: string(m.GetGroup()), GroupID: m.GetGroupId(), MaxObjectID: m.GetMaxObjectId()})
	r := fromErr(err)
	r.Count = n
	return r
}

// distinct refuses a batch command whose keys repeat, whole and before anything changes (SEMANTICS
// section 1), on entries written under rulesLimits; an older entry applies item by item as it did.
func distinct(e env, field string, n int, key func(i int) []byte) (store.Result, bool) {
	if e.rules < rulesLimits {
		return store.Result{}, true
	}
	if err := store.ValidateDistinct(field, n, func(i int) string { return string(key(i)) }); err != nil {
		return fromErr(err), false
	}
	return store.Result{}, true
}

func applyBatchPutStart(st *State, e env, m *metadv1.BatchPutStart) store.Result {
	s := st.store
	if r, ok := distinct(e, "items", len(m.GetItems()), func(i int) []byte { return m.GetItems()[i].GetKey() }); !ok {
		return r
	}
	reqs := make([]store.PutStartRequest, len(m.GetItems()))
	skip := make([]bool, len(reqs))
	for i, it := range m.GetItems() {
		reqs[i] = wire.PutStartFrom(m.GetTenant(), m.GetClientId(), it.GetKey(), it.GetGroup(), it.GetSize(),
			m.GetConfig(), m.GetPlacement(), m.GetPutDiscardTimeoutMs())
		skip[i] = it.GetReserved()
	}
	res := s.BatchPutStart(e.now, e.seed, reqs, skip)
	out := store.Result{Items: make([]store.Result, len(res))}
	for i, r := range res {
		if skip[i] {
			continue // answered from the leader's arenas: OK, no replica
		}
		out.Items[i] = fromErr(r.Err)
		out.Items[i].Replicas = r.Replicas
		if r.Err == nil {
			e.m.countShort(reqs[i].Config, r.Replicas)
		}
	}
	return out
}

func endReqs(tenant string, client []byte, keys [][]byte, tier metadv1.Tier) []store.PutEndRequest {
	reqs := make([]store.PutEndRequest, len(keys))
	for i, k := range keys {
		reqs[i] = endReq(tenant, client, k, tier)
	}
	return reqs
}

func applyBatchPutEnd(st *State, e env, m *metadv1.BatchPutEnd) store.Result {
	s := st.store
	if r, ok := distinct(e, "keys", len(m.GetKeys()), func(i int) []byte { return m.GetKeys()[i] }); !ok {
		return r
	}
	return store.Result{Items: items(s.BatchPutEnd(e.now, endReqs(m.GetTenant(), m.GetClientId(), m.GetKeys(), m.GetTier())))}
}

func applyBatchPutRevoke(st *State, e env, m *metadv1.BatchPutRevoke) store.Result {
	s := st.store
	if r, ok := distinct(e, "keys", len(m.GetKeys()), func(i int) []byte { return m.GetKeys()[i] }); !ok {
		return r
	}
	return store.Result{Items: items(s.BatchPutRevoke(e.now, endReqs(m.GetTenant(), m.GetClientId(), m.GetKeys(), m.GetTier())))}
}

func applyBatchRemove(st *State, e env, m *metadv1.BatchRemove) store.Result {
	s := st.store
	if r, ok := distinct(e, "items", len(m.GetItems()), func(i int) []byte { return m.GetItems()[i].GetKey() }); !ok {
		return r
	}
	// Items the leader refused when it prepared the batch are answered as refused, untouched; the
	// others are erased together.
	rs := withRefused(m.GetItems(), func(erase []*metadv1.ObjectRef) []store.Result {
		return eraseRefs(s, m.GetTenant(), m.GetTenantInstanceId(), erase)
	})
	if m.GetKeyed() {
		for i, ref := range m.GetItems() {
			rs[i].Key = string(ref.GetKey())
		}
	}
	return store.Result{Count: countOK(rs), Items: rs}
}

// withRefused answers a batch of refs in which the leader refused some items when it prepared
// them (ObjectRef.refused): those are answered with their refusal, untouched, and run gets the
// others, in order, and returns one result for each. The results are in the order of refs.
func withRefused(refs []*metadv1.ObjectRef, run func([]*metadv1.ObjectRef) []store.Result) []store.Result {
	var refused []int
	do := refs
	for i, ref := range refs {
		if ref.GetRefused() != metadv1.Reason_REASON_UNSPECIFIED {
			if refused == nil {
				do = make([]*metadv1.ObjectRef, 0, len(refs))
				do = append(do, refs[:i]...)
			}
			refused = append(refused, i)
		} else if refused != nil {
			do = append(do, ref)
		}
	}
	rs := run(do)
	if refused == nil {
		return rs
	}
	all := make([]store.Result, len(refs))
	next, r := 0, 0
	for i, ref := range refs {
		if r < len(refused) && refused[r] == i {
			reason, ok := wire.ReasonFrom(ref.GetRefused())
			if !ok || reason == store.OK {
				reason = store.InvalidParams
			}
			all[i] = store.Result{Reason: reason, Message: ref.GetRefusedMessage()}
			r++
			continue
		}
		all[i] = rs[next]
		next++
	}
	return all
}

// applyBatchReplicaClear drops the items' COMPLETE replicas on the client's segments (the one
// named, or all it owns now). A segment that is not mounted or not the client's refuses the whole
// command, nothing changed; the leader refused the same before proposing, so this happens only
// when the segment went between its check and the commit.
func applyBatchReplicaClear(st *State, e env, m *metadv1.BatchReplicaClear) store.Result {
	s := st.store
	if r, ok := distinct(e, "items", len(m.GetItems()), func(i int) []byte { return m.GetItems()[i].GetKey() }); !ok {
		return r
	}
	if err := s.CheckWritable(m.GetTenant()); err != nil {
		return fromErr(err)
	}
	var seg alloc.ID
	if len(m.GetSegmentId()) > 0 {
		seg = wire.ID16(m.GetSegmentId())
	}
	on, err := s.ClearScope(wire.ID16(m.GetClientId()), seg)
	if err != nil {
		return fromErr(err)
	}
	tenant := store.NormalizeTenant(m.GetTenant())
	rs := withRefused(m.GetItems(), func(refs []*metadv1.ObjectRef) []store.Result {
		out := make([]store.Result, len(refs))
		for i, ref := range refs {
			out[i] = fromErr(s.ClearReplicas(store.ObjectToken{Tenant: tenant, Instance: m.GetTenantInstanceId(),
				Key: string(ref.GetKey()), ObjectID: ref.GetObjectId()}, on))
		}
		return out
	})
	return store.Result{Count: countOK(rs), Items: rs}
}

func tokens(ts []*metadv1.ObjectToken) []store.ObjectToken {
	out := make([]store.ObjectToken, len(ts))
	for i, t := range ts {
		out[i] = wire.TokenFrom(t)
	}
	return out
}

// evictBufs hold applyEvict's token and unit lists from one Evict entry to the next: a drain
// applies hundreds of entries of thousands of tokens on every node, and fresh lists for each were
// about a seventh of a drain's garbage. A pool, not a field of the FSM, because handlers take the
// store only.
var evictBufs = sync.Pool{New: func() any { return new(evictBuf) }}

type evictBuf struct {
	toks  []store.ObjectToken
	units [][]store.ObjectToken
}

// put clears the lists (they reference the entry's keys) and returns them to evictBufs.
func (b *evictBuf) put() {
	clear(b.toks)
	clear(b.units)
	b.toks, b.units = b.toks[:0], b.units[:0]
	evictBufs.Put(b)
}

// applyEvict evicts the leader's revalidated tokens (in columns, or the form before them: a message
// per token; malformed columns reject the command and evict nothing). With unit_sizes the tokens
// form units that go all or nothing (a group is evicted whole or not at all); sizes that do not
// cover the tokens exactly reject the command and evict nothing. Without unit_sizes each token
// stands alone (the form written before units existed). With redundant (offload on evict) each
// unit is one token whose redundant MEMORY replicas go (store.Store.EvictRedundant). Units has one
// reason per unit (a lone token is a unit): a unit has one outcome.
func applyEvict(st *State, e env, m *metadv1.Evict) store.Result {
	s := st.store
	tier := wire.TierFrom(m.GetTier())
	if tier == 0 {
		tier = alloc.TierMemory
	}
	buf := evictBufs.Get().(*evictBuf)
	defer buf.put()
	toks := tokens(m.GetTokens())
	if c := m.GetColumns(); c != nil {
		if len(toks) != 0 {
			return store.Result{Reason: store.InvalidParams, Message: "evict: tokens and columns are both set"}
		}
		var err error
		if toks, err = wire.ColumnsFrom(c, buf.toks); err != nil {
			return store.Result{Reason: store.InvalidParams, Message: "evict: " + err.Error()}
		}
	}
	sizes := m.GetUnitSizes()
	if m.GetRedundant() && len(sizes) == 0 {
		return store.Result{Reason: store.InvalidParams, Message: "evict: a redundant-replica eviction needs unit_sizes"}
	}
	var r store.Result
	var errs []error
	if len(sizes) == 0 {
		errs, r.Bytes = s.EvictTokens(toks, tier)
		r.Units = make([]store.Reason, len(toks))
		for i, err := range errs {
			r.Units[i] = store.ReasonOf(err)
		}
	} else {
		buf.toks = toks
		units := slices.Grow(buf.units[:0], len(sizes))
		rest := toks
		for _, n := range sizes {
			if n == 0 || uint64(n) > uint64(len(rest)) {
				return store.Result{Reason: store.InvalidParams, Message: "evict: unit_sizes do not cover the tokens"}
			}
			units = append(units, rest[:n:n])
			rest = rest[n:]
		}
		if len(rest) != 0 {
			return store.Result{Reason: store.InvalidParams, Message: "evict: unit_sizes do not cover the tokens"}
		}
		buf.units = units
		if m.GetRedundant() {
			if tier != alloc.TierMemory || len(units) != len(toks) {
				return store.Result{Reason: store.InvalidParams, Message: "evict: a redundant-replica eviction is of the memory tier, one token per unit"}
			}
			errs, r.Bytes = s.EvictRedundant(units)
		} else {
			errs, r.Bytes = s.EvictUnits(units, tier)
		}
		r.Units = make([]store.Reason, len(units))
		off := 0
		for i, u := range units {
			r.Units[i] = store.ReasonOf(errs[off]) // every token of a unit has its unit's error
			off += len(u)
		}
	}
	for _, err := range errs {
		if err == nil {
			r.Count++
		}
	}
	return r
}

func applyRevokeExpired(st *State, e env, re *metadv1.RevokeExpired) store.Result {
	s := st.store
	rs := items(s.RevokeTokens(tokens(re.GetTokens())))
	r := store.Result{Count: countOK(rs), Items: rs}
	if ids := re.GetTaskIds(); len(ids) > 0 {
		r.Tasks = s.Tasks().Expire(e.now, re.GetTaskTimeoutNs(), ids)
	}
	return r
}

// applyMountSegment mounts a segment. An entry written before the segment limits existed mounts
// what the state recorded then (the tier's capacity is checked whatever the entry's rules).
func applyMountSegment(st *State, e env, m *metadv1.MountSegment) store.Result {
	s := st.store
	mount := s.MountSegment
	if e.rules < rulesLimits {
		mount = s.MountRecordedSegment
	}
	created, err := mount(wire.SegmentFrom(m.GetSegment()))
	r := fromErr(err)
	r.Created = created
	return r
}

// applyUnmountSegment unmounts the listed segments of the client (all of them when none is listed;
// at its expiry, all but its Shared ones, store.Store.UnmountClient).
// A listed segment the client does not own is refused, and nothing is unmounted.
func applyUnmountSegment(st *State, e env, m *metadv1.UnmountSegment) store.Result {
	s := st.store
	client := wire.ID16(m.GetClientId())
	if len(m.GetSegmentIds()) == 0 {
		expired := m.GetReason() == metadv1.UnmountReason_UNMOUNT_REASON_CLIENT_EXPIRED
		return store.Result{Unmount: s.UnmountClient(client, expired)}
	}
	ids := segmentIDs(m.GetSegmentIds())
	if err := s.CheckUnmount(client, ids); err != nil {
		return fromErr(err)
	}
	var total store.UnmountResult
	for _, id := range ids {
		r, err := s.UnmountSegment(id)
		if err != nil { // a segment listed twice
			continue
		}
		total.Segments += r.Segments
		total.Replicas += r.Replicas
		total.Erased += r.Erased
	}
	return store.Result{Unmount: total}
}

// applyCloseSegment starts a segment's graceful unmount (store.Store.CloseSegment).
func applyCloseSegment(st *State, _ env, m *metadv1.CloseSegment) store.Result {
	s := st.store
	r, err := s.CloseSegment(wire.ID16(m.GetClientId()), wire.ID16(m.GetSegmentId()), m.GetUnmountAtUnixNano())
	if err != nil {
		return fromErr(err)
	}
	return store.Result{Unmount: r}
}

// applyUnmountClosed ends a graceful unmount at the entry's leader time (store.Store.UnmountClosed).
func applyUnmountClosed(st *State, e env, m *metadv1.UnmountClosed) store.Result {
	s := st.store
	return store.Result{Unmount: s.UnmountClosed(wire.ID16(m.GetSegmentId()), m.GetUnmountAtUnixNano(), e.now)}
}

func applyRegisterTenant(st *State, e env, m *metadv1.RegisterTenant) store.Result {
	s := st.store
	inst, err := s.RegisterTenant(m.GetName(), m.GetQuotaBytes())
	r := fromErr(err)
	r.Instance = inst
	return r
}

func applyUnregisterTenant(st *State, e env, m *metadv1.UnregisterTenant) store.Result {
	s := st.store
	n, err := s.UnregisterTenant(m.GetName(), m.GetForce())
	r := fromErr(err)
	r.Count = n
	return r
}

func applySetQuota(st *State, e env, m *metadv1.SetQuota) store.Result {
	s := st.store
	return fromErr(s.SetQuota(m.GetTenant(), m.GetQuotaBytes()))
}
