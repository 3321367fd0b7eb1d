package fsm

import (
	"slices"
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// dispatchTable maps each Command oneof field number to its handler. A command type without an
// entry here makes apply panic; TestEveryCommandHasHandler keeps the table complete.
func (f *FSM) dispatchTable() map[protoreflect.FieldNumber]handler {
	fields := (&metadv1.Command{}).ProtoReflect().Descriptor().Fields()
	num := func(name protoreflect.Name) protoreflect.FieldNumber {
		fd := fields.ByName(name)
		if fd == nil {
			panic("fsm: Command has no field " + string(name))
		}
		return fd.Number()
	}
	return map[protoreflect.FieldNumber]handler{
		num("put_start"):           f.applyPutStart,
		num("put_commit"):          applyPutCommit,
		num("arena_grant"):         applyArenaGrant,
		num("arena_retire"):        applyArenaRetire,
		num("put_end"):             applyPutEnd,
		num("put_revoke"):          applyPutRevoke,
		num("upsert_start"):        f.applyUpsertStart,
		num("upsert_end"):          applyUpsertEnd,
		num("upsert_revoke"):       applyUpsertRevoke,
		num("remove"):              applyRemove,
		num("remove_all"):          applyRemoveAll,
		num("remove_group"):        applyRemoveGroup,
		num("batch_put_start"):     f.applyBatchPutStart,
		num("batch_put_end"):       applyBatchPutEnd,
		num("batch_put_revoke"):    applyBatchPutRevoke,
		num("batch_remove"):        applyBatchRemove,
		num("evict"):               applyEvict,
		num("revoke_expired"):      applyRevokeExpired,
		num("mount_segment"):       applyMountSegment,
		num("unmount_segment"):     applyUnmountSegment,
		num("register_tenant"):     applyRegisterTenant,
		num("unregister_tenant"):   applyUnregisterTenant,
		num("set_quota"):           applySetQuota,
		num("set_member"):          f.applySetMember,
		num("open_session"):        f.applyOpenSession,
		num("forget_member"):       f.applyForgetMember,
		num("create_key"):          f.applyCreateKey,
		num("revoke_key"):          f.applyRevokeKey,
		num("grant_role"):          f.applyGrantRole,
		num("revoke_role"):         f.applyRevokeRole,
		num("batch_replica_clear"): applyBatchReplicaClear,
		num("close_segment"):       applyCloseSegment,
		num("unmount_closed"):      applyUnmountClosed,
		// Copy and move of replicas (store.ReplicaTask).
		num("replica_task_start"):  applyReplicaTaskStart,
		num("replica_task_end"):    applyReplicaTaskEnd,
		num("replica_task_revoke"): applyReplicaTaskRevoke,
		// Master-scheduled tasks (store.TaskQueue).
		num("create_task"):   applyCreateTask,
		num("fetch_tasks"):   applyFetchTasks,
		num("complete_task"): applyCompleteTask,
		// Drain jobs (store.DrainTable).
		num("start_drain"):          applyStartDrain,
		num("cancel_drain"):         applyCancelDrain,
		num("schedule_drain_moves"): applyScheduleDrainMoves,
		num("finish_drain"):         applyFinishDrain,
	}
}

// applyCreateTask schedules a task; its result's Tasks holds it.
func applyCreateTask(s *store.Store, e env, c *metadv1.Command) store.Result {
	id, err := s.CreateTask(e.now, wire.TaskSpecFrom(c.GetCreateTask()))
	r := fromErr(err)
	if err == nil {
		t, qerr := s.QueryTask(id)
		if qerr != nil {
			panic("fsm: a task created by this entry is not kept: " + qerr.Error())
		}
		r.Tasks = []store.Task{t}
	}
	return r
}

// applyFetchTasks hands a worker its oldest pending tasks; its result's Tasks holds them.
func applyFetchTasks(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetFetchTasks()
	tasks, err := s.FetchTasks(e.now, wire.ID16(m.GetClientId()), int(min(m.GetBatch(), 1<<20)))
	r := fromErr(err)
	r.Tasks = tasks
	return r
}

func applyCompleteTask(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetCompleteTask()
	return fromErr(s.CompleteTask(e.now, wire.ID16(m.GetClientId()), m.GetTaskId(), m.GetSuccess(), m.GetMessage()))
}

// applyReplicaTaskStart starts a copy or move; its result's Replicas are the source, then the
// targets, and its Bytes the object's size.
func applyReplicaTaskStart(s *store.Store, e env, c *metadv1.Command) store.Result {
	ts, err := s.StartReplicaTask(e.now, e.seed, wire.ReplicaTaskFrom(c.GetReplicaTaskStart()))
	r := fromErr(err)
	if err == nil {
		r.Replicas = append([]store.Replica{ts.Source}, ts.Targets...)
		r.Bytes = ts.Size
	}
	return r
}

func applyReplicaTaskEnd(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetReplicaTaskEnd()
	return fromErr(s.EndReplicaTask(e.now, wire.ReplicaTaskEndFrom(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetKind())))
}

func applyReplicaTaskRevoke(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetReplicaTaskRevoke()
	return fromErr(s.RevokeReplicaTask(e.now, wire.ReplicaTaskEndFrom(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetKind())))
}

// applySetMember records a member's addresses. Its name must be a valid member name
// (ValidateMemberName) on entries written under rulesLimits; before, only not empty.
func (f *FSM) applySetMember(_ *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetSetMember()
	if m.GetName() == "" {
		return store.Result{Reason: store.InvalidParams, Message: "member: empty name"}
	}
	if e.rules >= rulesLimits {
		if err := ValidateMemberName(m.GetName()); err != nil {
			return fromErr(err)
		}
	}
	ms := f.Members()
	ms[m.GetName()] = Member{Name: m.GetName(), PeerAddr: m.GetPeerAddress(), ClientAddr: m.GetClientAddress()}
	f.setMembers(ms)
	return store.Result{}
}

func (f *FSM) applyForgetMember(_ *store.Store, _ env, c *metadv1.Command) store.Result {
	ms := f.Members()
	delete(ms, c.GetForgetMember().GetName())
	f.setMembers(ms)
	return store.Result{}
}

func (f *FSM) applyPutStart(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetPutStart()
	req := wire.PutStartFrom(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetGroup(),
		m.GetSize(), m.GetConfig(), m.GetPlacement(), m.GetPutDiscardTimeoutMs())
	reps, err := s.PutStart(e.now, e.seed, req)
	r := fromErr(err)
	r.Replicas = reps
	if err == nil {
		f.m.countShort(req.Config, reps)
	}
	return r
}

func (f *FSM) applyUpsertStart(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetUpsertStart()
	req := wire.PutStartFrom(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetGroup(),
		m.GetSize(), m.GetConfig(), m.GetPlacement(), m.GetPutDiscardTimeoutMs())
	reps, reused, err := s.Upsert(e.now, e.seed, req)
	r := fromErr(err)
	r.Replicas, r.Reused = reps, reused
	if err == nil && !reused { // reused extents were placed by an earlier put
		f.m.countShort(req.Config, reps)
	}
	return r
}

// applyPutCommit creates objects from ranges the leader reserved in its arenas (store.CommitPuts);
// one result per item. Repeated keys refuse the whole command, as a batch's do.
func applyPutCommit(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetPutCommit()
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

// applyArenaGrant grants arenas to the leader of the command's term (store.Store.GrantArenas);
// Count is how many were granted.
func applyArenaGrant(s *store.Store, _ env, c *metadv1.Command) store.Result {
	m := c.GetArenaGrant()
	return store.Result{Count: len(s.GrantArenas(m.GetTerm(), wire.ArenaSpecsFrom(m)))}
}

// applyArenaRetire returns arenas' unused bytes to their segments (store.Store.RetireArenas);
// Count is how many were retired.
func applyArenaRetire(s *store.Store, _ env, c *metadv1.Command) store.Result {
	return store.Result{Count: s.RetireArenas(c.GetArenaRetire().GetArenaIds())}
}

func endReq(tenant string, client, key []byte, tier metadv1.Tier) store.PutEndRequest {
	return store.PutEndRequest{Tenant: tenant, Client: wire.ID16(client), Key: string(key), Tier: wire.TierFrom(tier)}
}

func applyPutEnd(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetPutEnd()
	return fromErr(s.PutEnd(e.now, endReq(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetTier())))
}

func applyPutRevoke(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetPutRevoke()
	return fromErr(s.PutRevoke(e.now, endReq(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetTier())))
}

func applyUpsertEnd(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetUpsertEnd()
	return fromErr(s.UpsertEnd(e.now, endReq(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetTier())))
}

func applyUpsertRevoke(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetUpsertRevoke()
	return fromErr(s.UpsertRevoke(e.now, endReq(m.GetTenant(), m.GetClientId(), m.GetKey(), m.GetTier())))
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

func applyRemove(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetRemove()
	return fromErr(s.RemoveObject(store.ObjectToken{Tenant: m.GetTenant(), Instance: m.GetTenantInstanceId(),
		Key: string(m.GetKey()), ObjectID: m.GetObjectId()}))
}

// applyRemoveAll erases exactly the targets the leader prepared (with or without force the leader
// lists them: leases and PROCESSING checks need its soft state and the census).
func applyRemoveAll(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetRemoveAll()
	if s.Tenants().Lookup(store.NormalizeTenant(m.GetTenant())) == nil {
		return fromErr(&store.Error{Reason: store.TenantNotRegistered, Msg: "tenant " + m.GetTenant() + " is not registered"})
	}
	rs := eraseRefs(s, m.GetTenant(), m.GetTenantInstanceId(), m.GetTargets())
	return store.Result{Count: countOK(rs), Items: rs}
}

func applyRemoveGroup(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetRemoveGroup()
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

func (f *FSM) applyBatchPutStart(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetBatchPutStart()
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
			f.m.countShort(reqs[i].Config, r.Replicas)
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

func applyBatchPutEnd(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetBatchPutEnd()
	if r, ok := distinct(e, "keys", len(m.GetKeys()), func(i int) []byte { return m.GetKeys()[i] }); !ok {
		return r
	}
	return store.Result{Items: items(s.BatchPutEnd(e.now, endReqs(m.GetTenant(), m.GetClientId(), m.GetKeys(), m.GetTier())))}
}

func applyBatchPutRevoke(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetBatchPutRevoke()
	if r, ok := distinct(e, "keys", len(m.GetKeys()), func(i int) []byte { return m.GetKeys()[i] }); !ok {
		return r
	}
	return store.Result{Items: items(s.BatchPutRevoke(e.now, endReqs(m.GetTenant(), m.GetClientId(), m.GetKeys(), m.GetTier())))}
}

func applyBatchRemove(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetBatchRemove()
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
func applyBatchReplicaClear(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetBatchReplicaClear()
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
// stands alone (the form written before units existed). Units has one reason per unit (a lone token
// is a unit): a unit has one outcome.
func applyEvict(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetEvict()
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
		errs, r.Bytes = s.EvictUnits(units, tier)
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

func applyRevokeExpired(s *store.Store, e env, c *metadv1.Command) store.Result {
	re := c.GetRevokeExpired()
	rs := items(s.RevokeTokens(tokens(re.GetTokens())))
	r := store.Result{Count: countOK(rs), Items: rs}
	if ids := re.GetTaskIds(); len(ids) > 0 {
		r.Tasks = s.ExpireTasks(e.now, re.GetTaskTimeoutNs(), ids)
	}
	return r
}

// applyMountSegment mounts a segment. An entry written before the segment limits existed mounts
// what the state recorded then (the tier's capacity is checked whatever the entry's rules).
func applyMountSegment(s *store.Store, e env, c *metadv1.Command) store.Result {
	mount := s.MountSegment
	if e.rules < rulesLimits {
		mount = s.MountRecordedSegment
	}
	created, err := mount(wire.SegmentFrom(c.GetMountSegment().GetSegment()))
	r := fromErr(err)
	r.Created = created
	return r
}

// applyUnmountSegment unmounts the listed segments of the client (all of them when none is listed).
// A listed segment the client does not own is refused, and nothing is unmounted.
func applyUnmountSegment(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetUnmountSegment()
	client := wire.ID16(m.GetClientId())
	if len(m.GetSegmentIds()) == 0 {
		return store.Result{Unmount: s.UnmountClient(client)}
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
func applyCloseSegment(s *store.Store, _ env, c *metadv1.Command) store.Result {
	m := c.GetCloseSegment()
	r, err := s.CloseSegment(wire.ID16(m.GetClientId()), wire.ID16(m.GetSegmentId()), m.GetUnmountAtUnixNano())
	if err != nil {
		return fromErr(err)
	}
	return store.Result{Unmount: r}
}

// applyUnmountClosed ends a graceful unmount at the entry's leader time (store.Store.UnmountClosed).
func applyUnmountClosed(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetUnmountClosed()
	return store.Result{Unmount: s.UnmountClosed(wire.ID16(m.GetSegmentId()), m.GetUnmountAtUnixNano(), e.now)}
}

func applyRegisterTenant(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetRegisterTenant()
	inst, err := s.RegisterTenant(m.GetName(), m.GetQuotaBytes())
	r := fromErr(err)
	r.Instance = inst
	return r
}

func applyUnregisterTenant(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetUnregisterTenant()
	n, err := s.UnregisterTenant(m.GetName(), m.GetForce())
	r := fromErr(err)
	r.Count = n
	return r
}

func applySetQuota(s *store.Store, e env, c *metadv1.Command) store.Result {
	m := c.GetSetQuota()
	return fromErr(s.SetQuota(m.GetTenant(), m.GetQuotaBytes()))
}
