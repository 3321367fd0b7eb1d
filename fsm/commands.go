package fsm

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/wire"
)

// Each replicated command is declared once, in commands below: its Command oneof field, the
// feature level that introduced it, how its request is decoded, the leader's check and the apply
// handler, both over the one decoded request. The completeness tests (commands_test.go) fail a
// command of the Command oneof with no entry here, an entry with neither a check nor a stated
// reason for having none, an entry whose level is not the level it was released at
// (testdata/levels.txt) and a result field that a session's kept answer would lose. docs/design.md
// ("Adding a replicated command") is the checklist.

// spec is one command's declaration, its types erased (def builds it).
type spec struct {
	name  protoreflect.Name
	level uint32
	// apply applies the command to st (the apply goroutine only).
	apply func(st *State, e env, c *metadv1.Command) store.Result
	// check is the leader's precheck (Check); nil when noCheck says why the command has none.
	check   func(s *store.Store, a *auth.State, c *metadv1.Command) (store.Result, bool)
	noCheck string
}

// A check function of a command whose request is R: refused is true when applying the command to
// the state read would be refused, and r is then the result to answer with.
type checkFn[R any] func(s *store.Store, a *auth.State, req R) (r store.Result, refused bool)

// def declares a command whose leader check is check.
func def[R any](name protoreflect.Name, level uint32, decode func(*metadv1.Command) R, check checkFn[R],
	apply func(st *State, e env, req R) store.Result) spec {
	return spec{name: name, level: level,
		apply: func(st *State, e env, c *metadv1.Command) store.Result { return apply(st, e, decode(c)) },
		check: func(s *store.Store, a *auth.State, c *metadv1.Command) (store.Result, bool) {
			return check(s, a, decode(c))
		}}
}

// defNoCheck declares a command the leader proposes with no check; why says what stands in for one.
func defNoCheck[R any](name protoreflect.Name, level uint32, why string, decode func(*metadv1.Command) R,
	apply func(st *State, e env, req R) store.Result) spec {
	return spec{name: name, level: level, noCheck: why,
		apply: func(st *State, e env, c *metadv1.Command) store.Result { return apply(st, e, decode(c)) }}
}

// storeCheck is a check by a store predicate (a Check* method, the predicate apply itself runs).
func storeCheck[R any](pred func(s *store.Store, req R) error) checkFn[R] {
	return func(s *store.Store, _ *auth.State, req R) (store.Result, bool) {
		if err := pred(s, req); err != nil {
			return fromErr(err), true
		}
		return store.Result{}, false
	}
}

// whole decodes a command whose handler reads the Command itself (its principal, or the op for
// package auth).
func whole(c *metadv1.Command) *metadv1.Command { return c }

// checkAuth is the check of an auth command: the verdict apply reaches in the auth state.
func checkAuth(_ *store.Store, a *auth.State, c *metadv1.Command) (store.Result, bool) {
	return auth.Check(a, c)
}

// Feature levels. A binary's level (FeatureLevel) names the commands it knows: each command is
// declared with the level that introduced it, and a level, once released, never gains or loses a
// command (testdata/levels.txt). A member records its level (SetMember.feature_level), and the
// leader proposes a command only when every member of the configuration records at least the
// command's level (ha.Node.Propose), so that no member meets a command it cannot apply during a
// rolling upgrade; a member that records none counts as level 1.
const (
	// levelBase: every command before the allocation arenas.
	levelBase uint32 = 1
	// levelArenas: the allocation arenas (ArenaGrant, ArenaRetire, PutCommit).
	levelArenas uint32 = 2
	// levelCloseSession: a client ends its session (CloseSession).
	levelCloseSession uint32 = 3
	// levelLimits: the rate limits of principals and roles (SetLimit).
	levelLimits uint32 = 4
	// levelLocalDisk: the replica tiers beyond memory: the LOCAL_DISK tier's commands
	// (MountLocalDisk, NotifyOffload, EvictDiskReplica, ...), and the DISK and DFS tiers in the
	// fields of older commands (contentLevel).
	levelLocalDisk uint32 = 5
)

// FeatureLevel is this binary's feature level: the highest level of its commands.
var FeatureLevel = func() uint32 {
	var l uint32
	for _, c := range commands {
		l = max(l, c.level)
	}
	return l
}()

// LevelArenas is the feature level the arena commands need: the leader answers PutStarts from
// arenas only while every member records at least this level.
const LevelArenas = levelArenas

// Reasons for the commands with no check.
const (
	preparedRemoval = "the leader prepares it against its own state, marks what it removes and settles the marks by its outcome (service/remove.go); apply erases only what the prepared tokens still name"
	leaderOwn       = "the leader's own bookkeeping, proposed from its state; apply decides from the state it meets"
	alwaysApplies   = "apply answers every well-formed one (the service validates the request's fields before proposing)"
)

// commands declares every command of the Command oneof (field names as in command.proto).
var commands = []spec{
	// Object writes (store.PutStart and friends).
	def("put_start", levelBase, putStartReq(func(c *metadv1.Command) putStartFields { return c.GetPutStart() }),
		storeCheck((*store.Store).CheckPutStart), applyPutStart),
	def("upsert_start", levelBase, putStartReq(func(c *metadv1.Command) putStartFields { return c.GetUpsertStart() }),
		storeCheck((*store.Store).CheckUpsertStart), applyUpsertStart),
	def("put_end", levelBase, endReqOf(func(c *metadv1.Command) endFields { return c.GetPutEnd() }),
		storeCheck((*store.Store).CheckPutEnd), applyPutEnd),
	def("upsert_end", levelBase, endReqOf(func(c *metadv1.Command) endFields { return c.GetUpsertEnd() }),
		storeCheck((*store.Store).CheckPutEnd), applyUpsertEnd),
	def("put_revoke", levelBase, endReqOf(func(c *metadv1.Command) endFields { return c.GetPutRevoke() }),
		storeCheck((*store.Store).CheckPutRevoke), applyPutRevoke),
	def("upsert_revoke", levelBase, endReqOf(func(c *metadv1.Command) endFields { return c.GetUpsertRevoke() }),
		storeCheck((*store.Store).CheckPutRevoke), applyUpsertRevoke),
	def("batch_put_start", levelBase, (*metadv1.Command).GetBatchPutStart, checkBatchPutStart, applyBatchPutStart),
	def("batch_put_end", levelBase, (*metadv1.Command).GetBatchPutEnd, checkBatchPutEnd, applyBatchPutEnd),
	def("batch_put_revoke", levelBase, (*metadv1.Command).GetBatchPutRevoke, checkBatchPutRevoke, applyBatchPutRevoke),

	// Object removal, prepared by the leader.
	defNoCheck("remove", levelBase, preparedRemoval, (*metadv1.Command).GetRemove, applyRemove),
	defNoCheck("remove_all", levelBase, preparedRemoval, (*metadv1.Command).GetRemoveAll, applyRemoveAll),
	defNoCheck("remove_group", levelBase, preparedRemoval, (*metadv1.Command).GetRemoveGroup, applyRemoveGroup),
	defNoCheck("batch_remove", levelBase, preparedRemoval, (*metadv1.Command).GetBatchRemove, applyBatchRemove),
	defNoCheck("batch_replica_clear", levelBase, preparedRemoval+"; the leader refuses a segment that is not the client's first (service/clear.go)",
		(*metadv1.Command).GetBatchReplicaClear, applyBatchReplicaClear),
	defNoCheck("evict", levelBase, "the evictor revalidates its candidates under their locks after taking its replication slot (package evict)",
		(*metadv1.Command).GetEvict, applyEvict),
	defNoCheck("revoke_expired", levelBase, "the leader's reaper lists what expired from its state (package evict)",
		(*metadv1.Command).GetRevokeExpired, applyRevokeExpired),

	// Segments.
	def("mount_segment", levelBase, (*metadv1.Command).GetMountSegment,
		storeCheck(func(s *store.Store, m *metadv1.MountSegment) error {
			return s.CheckMountSegment(wire.SegmentFrom(m.GetSegment()))
		}),
		applyMountSegment),
	def("unmount_segment", levelBase, (*metadv1.Command).GetUnmountSegment,
		storeCheck(func(s *store.Store, m *metadv1.UnmountSegment) error {
			return s.CheckUnmount(wire.ID16(m.GetClientId()), segmentIDs(m.GetSegmentIds()))
		}), applyUnmountSegment),
	def("close_segment", levelBase, (*metadv1.Command).GetCloseSegment,
		storeCheck(func(s *store.Store, m *metadv1.CloseSegment) error {
			return s.CheckUnmount(wire.ID16(m.GetClientId()), segmentIDs([][]byte{m.GetSegmentId()}))
		}), applyCloseSegment),
	defNoCheck("unmount_closed", levelBase, leaderOwn+" (the graceful unmount's deadline passed)",
		(*metadv1.Command).GetUnmountClosed, applyUnmountClosed),

	// Tenants.
	def("register_tenant", levelBase, (*metadv1.Command).GetRegisterTenant,
		storeCheck(func(s *store.Store, m *metadv1.RegisterTenant) error { return s.CheckRegisterTenant(m.GetName()) }),
		applyRegisterTenant),
	def("unregister_tenant", levelBase, (*metadv1.Command).GetUnregisterTenant,
		storeCheck(func(s *store.Store, m *metadv1.UnregisterTenant) error {
			return s.CheckUnregisterTenant(m.GetName(), m.GetForce())
		}), applyUnregisterTenant),
	def("set_quota", levelBase, (*metadv1.Command).GetSetQuota,
		storeCheck(func(s *store.Store, m *metadv1.SetQuota) error { return s.CheckSetQuota(m.GetTenant()) }),
		applySetQuota),

	// The LOCAL_DISK tier (store/ops_disk.go).
	def("mount_local_disk", levelLocalDisk, (*metadv1.Command).GetMountLocalDisk,
		storeCheck(func(s *store.Store, m *metadv1.MountLocalDisk) error {
			return s.CheckMountLocalDisk(wire.ID16(m.GetClientId()), m.GetCapacityBytes(), m.GetEndpoint(), m.GetOffload())
		}), applyMountLocalDisk),
	def("notify_offload", levelLocalDisk, (*metadv1.Command).GetNotifyOffload,
		storeCheck(func(s *store.Store, m *metadv1.NotifyOffload) error {
			return s.CheckOffloadDone(m.GetTenant(), wire.ID16(m.GetClientId()))
		}), applyNotifyOffload),
	def("evict_disk_replica", levelLocalDisk, (*metadv1.Command).GetEvictDiskReplica,
		storeCheck(func(s *store.Store, m *metadv1.EvictDiskReplica) error { return s.CheckWritable(m.GetTenant()) }),
		applyEvictDiskReplica),
	defNoCheck("queue_offload", levelLocalDisk, leaderOwn+" (package evict, offload on evict)",
		(*metadv1.Command).GetQueueOffload, applyQueueOffload),
	defNoCheck("queue_promotion", levelLocalDisk, leaderOwn+" (service/promote.go, promotion on hit)",
		(*metadv1.Command).GetQueuePromotion, applyQueuePromotion),
	def("promotion_start", levelLocalDisk, (*metadv1.Command).GetPromotionStart,
		storeCheck(func(s *store.Store, m *metadv1.PromotionStart) error { return s.CheckStartPromotion(promotionReq(m)) }),
		applyPromotionStart),
	def("promotion_end", levelLocalDisk, (*metadv1.Command).GetPromotionEnd,
		storeCheck(func(s *store.Store, m *metadv1.PromotionEnd) error {
			return s.CheckEndPromotion(m.GetTenant(), string(m.GetKey()), wire.ID16(m.GetClientId()))
		}), applyPromotionEnd),

	// Members and sessions.
	defNoCheck("set_member", levelBase, "package ha checks the name and the configuration before it proposes a record",
		(*metadv1.Command).GetSetMember, applySetMember),
	defNoCheck("forget_member", levelBase, "package ha proposes it for a member it removed", (*metadv1.Command).GetForgetMember, applyForgetMember),
	defNoCheck("open_session", levelBase, alwaysApplies, whole, applyOpenSession),
	defNoCheck("close_session", levelCloseSession, "the service refuses a session that is not open to its caller (service/session.go)",
		whole, applyCloseSession),

	// The auth state (package auth).
	def("create_key", levelBase, whole, checkAuth, applyAuth),
	def("revoke_key", levelBase, whole, checkAuth, applyAuth),
	def("grant_role", levelBase, whole, checkAuth, applyAuth),
	def("revoke_role", levelBase, whole, checkAuth, applyAuth),
	def("set_limit", levelLimits, whole, checkAuth, applyAuth),

	// Copy and move of replicas (store.ReplicaTask).
	def("replica_task_start", levelBase, (*metadv1.Command).GetReplicaTaskStart,
		storeCheck(func(s *store.Store, m *metadv1.ReplicaTaskStart) error {
			return s.CheckStartReplicaTask(wire.ReplicaTaskFrom(m))
		}),
		applyReplicaTaskStart),
	def("replica_task_end", levelBase, taskEndReq(func(c *metadv1.Command) taskEndFields { return c.GetReplicaTaskEnd() }),
		storeCheck((*store.Store).CheckEndReplicaTask), applyReplicaTaskEnd),
	def("replica_task_revoke", levelBase, taskEndReq(func(c *metadv1.Command) taskEndFields { return c.GetReplicaTaskRevoke() }),
		storeCheck((*store.Store).CheckEndReplicaTask), applyReplicaTaskRevoke),

	// Master-scheduled tasks (store.TaskQueue).
	def("create_task", levelBase, func(c *metadv1.Command) store.TaskSpec { return wire.TaskSpecFrom(c.GetCreateTask()) },
		storeCheck(func(s *store.Store, spec store.TaskSpec) error { return s.Tasks().CheckCreate(spec) }), applyCreateTask),
	defNoCheck("fetch_tasks", levelBase, alwaysApplies+" (a worker with nothing pending gets no task)", (*metadv1.Command).GetFetchTasks, applyFetchTasks),
	def("complete_task", levelBase, (*metadv1.Command).GetCompleteTask,
		storeCheck(func(s *store.Store, m *metadv1.CompleteTask) error {
			return s.Tasks().CheckComplete(wire.ID16(m.GetClientId()), m.GetTaskId())
		}), applyCompleteTask),

	// Drain jobs (store.DrainTable).
	def("start_drain", levelBase, func(c *metadv1.Command) store.DrainSpec { return wire.DrainSpecFrom(c.GetStartDrain()) },
		storeCheck(func(s *store.Store, spec store.DrainSpec) error { return s.Drains().CheckStart(spec) }), applyStartDrain),
	def("cancel_drain", levelBase, (*metadv1.Command).GetCancelDrain,
		storeCheck(func(s *store.Store, m *metadv1.CancelDrain) error { return s.Drains().CheckCancel(m.GetDrainId()) }), applyCancelDrain),
	defNoCheck("schedule_drain_moves", levelBase, leaderOwn+" (the drain loop plans the moves from its state)",
		(*metadv1.Command).GetScheduleDrainMoves, applyScheduleDrainMoves),
	def("finish_drain", levelBase, (*metadv1.Command).GetFinishDrain,
		storeCheck(func(s *store.Store, m *metadv1.FinishDrain) error { return s.Drains().CheckFinish(m.GetDrainId()) }), applyFinishDrain),

	// Allocation arenas (store.ArenaTable) and the reserved writes they answer.
	defNoCheck("arena_grant", levelArenas, leaderOwn+" (the arena keeper of the leader of the command's term)",
		(*metadv1.Command).GetArenaGrant, applyArenaGrant),
	defNoCheck("arena_retire", levelArenas, leaderOwn+" (the arena keeper)", (*metadv1.Command).GetArenaRetire, applyArenaRetire),
	defNoCheck("put_commit", levelArenas, "the leader ends a reserved write from its reservation and refuses a wrong tier itself "+
		"(service/reserve_end.go); apply takes the tier as given", (*metadv1.Command).GetPutCommit, applyPutCommit),
}

// byField indexes commands by the Command oneof field number; built once, checked complete by
// TestEveryCommandDeclared.
var byField = func() map[protoreflect.FieldNumber]*spec {
	fields := (&metadv1.Command{}).ProtoReflect().Descriptor().Fields()
	out := make(map[protoreflect.FieldNumber]*spec, len(commands))
	for i := range commands {
		c := &commands[i]
		fd := fields.ByName(c.name)
		if fd == nil || fd.ContainingOneof() == nil || fd.ContainingOneof().Name() != "op" {
			panic(fmt.Sprintf("fsm: command %q is not a field of Command's op", c.name))
		}
		if _, dup := out[fd.Number()]; dup {
			panic(fmt.Sprintf("fsm: command %q declared twice", c.name))
		}
		out[fd.Number()] = c
	}
	return out
}()

// specOf returns c's declaration; nil for a command with no operation or one this binary does not
// declare.
func specOf(c *metadv1.Command) *spec {
	fd := c.ProtoReflect().WhichOneof(commandOp)
	if fd == nil {
		return nil
	}
	return byField[fd.Number()]
}

// LevelOf returns the feature level that command c needs of every member: the level that
// introduced it, or that of a field value a later level gave it (contentLevel); 0 for a command
// this binary does not declare.
func LevelOf(c *metadv1.Command) uint32 {
	if sp := specOf(c); sp != nil {
		return max(sp.level, contentLevel(c))
	}
	return 0
}

// Check is the leader's precheck of a command it is about to propose: refused is true when
// applying c to the state read (s, and a for the auth commands) now would be refused (so a refusal
// is linearizable at the moment the caller read a current state; a command that commits later
// might meet another state), and r is then the result to answer with, so that a request the
// applied state refuses costs no log entry (SEMANTICS section 8). It runs the check declared with
// the command (commands), over the request decoded as apply decodes it and with the predicate
// apply itself runs, so the two cannot disagree; it changes nothing. A batch is refused only when
// every item is (r.Items, one per item), or whole when its tenant is not registered and open (r.Reason
// TENANT_NOT_REGISTERED, where apply would refuse every item with it). A command declared with no
// check (defNoCheck: removals the leader prepares, eviction, the leader's own bookkeeping,
// members) is never refused.
//
// Check reads the state with no barrier of its own: the caller makes sure the state is current
// (the leader's term-start barrier applied) and that a refusal is a linearizable read (leadership
// confirmed) before answering it.
func Check(s *store.Store, a *auth.State, c *metadv1.Command) (r store.Result, refused bool) {
	sp := specOf(c)
	if sp == nil || sp.check == nil {
		return store.Result{}, false
	}
	return sp.check(s, a, c)
}
