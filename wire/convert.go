package wire

import (
	"errors"
	"fmt"
	"slices"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
)

// ID16 converts 16 bytes to an id; any other length gives the zero id, which the store refuses.
func ID16(b []byte) alloc.ID {
	var id alloc.ID
	if len(b) == len(id) {
		copy(id[:], b)
	}
	return id
}

// TierFrom converts a wire tier; TIER_UNSPECIFIED is 0 ("all tiers" where a filter is meant).
func TierFrom(t metadv1.Tier) alloc.Tier {
	switch t {
	case metadv1.Tier_TIER_UNSPECIFIED:
		return 0
	case metadv1.Tier_TIER_MEMORY:
		return alloc.TierMemory
	case metadv1.Tier_TIER_NOF:
		return alloc.TierNOF
	case metadv1.Tier_TIER_LOCAL_DISK:
		return alloc.TierLocalDisk
	case metadv1.Tier_TIER_DISK:
		return alloc.TierDisk
	case metadv1.Tier_TIER_DFS:
		return alloc.TierDFS
	}
	return alloc.Tier(0xff) // unknown: the store rejects it
}

// TierTo converts a store tier to the wire.
func TierTo(t alloc.Tier) metadv1.Tier {
	switch t {
	case alloc.TierMemory:
		return metadv1.Tier_TIER_MEMORY
	case alloc.TierNOF:
		return metadv1.Tier_TIER_NOF
	case alloc.TierLocalDisk:
		return metadv1.Tier_TIER_LOCAL_DISK
	case alloc.TierDisk:
		return metadv1.Tier_TIER_DISK
	case alloc.TierDFS:
		return metadv1.Tier_TIER_DFS
	}
	return metadv1.Tier_TIER_UNSPECIFIED
}

// StatusTo converts a replica status to the wire.
func StatusTo(s store.ReplicaStatus) metadv1.ReplicaStatus {
	switch s {
	case store.Processing:
		return metadv1.ReplicaStatus_REPLICA_STATUS_PROCESSING
	case store.Complete:
		return metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE
	}
	return metadv1.ReplicaStatus_REPLICA_STATUS_UNSPECIFIED
}

// StatusFrom converts a wire replica status.
func StatusFrom(s metadv1.ReplicaStatus) store.ReplicaStatus {
	switch s {
	case metadv1.ReplicaStatus_REPLICA_STATUS_PROCESSING:
		return store.Processing
	case metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE:
		return store.Complete
	}
	return 0
}

// StrategyFrom converts a placement strategy; unspecified means random.
func StrategyFrom(p metadv1.PlacementStrategy) alloc.Strategy {
	if p == metadv1.PlacementStrategy_PLACEMENT_STRATEGY_FREE_RATIO_FIRST {
		return alloc.StrategyFreeRatioFirst
	}
	return alloc.StrategyRandom
}

// ReplicaConfigFrom converts a replica config.
func ReplicaConfigFrom(c *metadv1.ReplicaConfig) store.ReplicaConfig {
	out := store.ReplicaConfig{
		Memory:     int(min(c.GetMemoryReplicas(), 1<<16)),
		NOF:        int(min(c.GetNofReplicas(), 1<<16)),
		DFS:        int(min(c.GetDfsReplicas(), 1<<16)),
		SoftPin:    store.SoftPinAction(c.GetSoftPin()),
		SoftPinTTL: time.Duration(min(c.GetSoftPinTtlMs(), 1<<40)) * time.Millisecond,
		HardPin:    c.GetHardPin(),
		DataType:   c.GetDataType(),
	}
	for _, p := range c.GetPreferredSegmentIds() {
		out.Preferred = append(out.Preferred, ID16(p))
	}
	return out
}

// PutStartFrom builds the store's request for a PutStart or UpsertStart command's fields.
func PutStartFrom(tenant string, client, key, group []byte, size uint64, cfg *metadv1.ReplicaConfig,
	p metadv1.PlacementStrategy, discardMs uint64) store.PutStartRequest {
	return store.PutStartRequest{
		Tenant: tenant, Client: ID16(client), Key: string(key), Group: string(group), Size: size,
		Config: ReplicaConfigFrom(cfg), Strategy: StrategyFrom(p),
		DiscardAfter: time.Duration(min(discardMs, 1<<40)) * time.Millisecond,
	}
}

// SegmentFrom converts a segment descriptor.
func SegmentFrom(d *metadv1.SegmentDesc) alloc.Segment {
	return alloc.Segment{ID: ID16(d.GetId()), Name: d.GetName(), Base: d.GetBase(), Size: d.GetSize(),
		Endpoint: d.GetEndpoint(), Tier: TierFrom(d.GetTier()), Owner: ID16(d.GetOwnerClientId()), Offload: d.GetOffload()}
}

// SegmentTo converts a segment to its descriptor.
func SegmentTo(s alloc.Segment) *metadv1.SegmentDesc {
	return &metadv1.SegmentDesc{Id: s.ID[:], Name: s.Name, Base: s.Base, Size: s.Size, Endpoint: s.Endpoint,
		Tier: TierTo(s.Tier), OwnerClientId: s.Owner[:], Offload: s.Offload}
}

// TokenFrom converts a wire token (its tenant normalized).
func TokenFrom(t *metadv1.ObjectToken) store.ObjectToken {
	return store.ObjectToken{Tenant: store.NormalizeTenant(t.GetTenant()), Instance: t.GetTenantInstanceId(),
		Key: string(t.GetKey()), ObjectID: t.GetObjectId(), Version: t.GetVersion()}
}

// TokenTo converts a store token to the wire.
func TokenTo(t store.ObjectToken) *metadv1.ObjectToken {
	return &metadv1.ObjectToken{Tenant: t.Tenant, TenantInstanceId: t.Instance, Key: []byte(t.Key),
		ObjectId: t.ObjectID, Version: t.Version}
}

// ColumnsTo converts store tokens to the wire's columns (the form the eviction kernel proposes).
func ColumnsTo(toks []store.ObjectToken) *metadv1.TokenColumns {
	c := &metadv1.TokenColumns{TenantIndex: make([]uint32, len(toks)), KeyLengths: make([]uint32, len(toks)),
		ObjectIds: make([]uint64, len(toks)), Versions: make([]uint64, len(toks))}
	size := 0
	for _, t := range toks {
		size += len(t.Key)
	}
	c.Keys = make([]byte, 0, size)
	last := -1 // index of the previous token's tenant: consecutive tokens usually share one
	for i, t := range toks {
		if last < 0 || c.Tenants[last] != t.Tenant || c.TenantInstanceIds[last] != t.Instance {
			last = -1
			for j := range c.Tenants {
				if c.Tenants[j] == t.Tenant && c.TenantInstanceIds[j] == t.Instance {
					last = j
					break
				}
			}
			if last < 0 {
				last = len(c.Tenants)
				c.Tenants = append(c.Tenants, t.Tenant)
				c.TenantInstanceIds = append(c.TenantInstanceIds, t.Instance)
			}
		}
		c.TenantIndex[i] = uint32(last)
		c.KeyLengths[i] = uint32(len(t.Key))
		c.Keys = append(c.Keys, t.Key...)
		c.ObjectIds[i] = t.ObjectID
		c.Versions[i] = t.Version
	}
	return c
}

// ColumnsFrom converts wire columns to store tokens, or says why they are malformed (columns of
// different lengths, a tenant index out of range, key lengths that do not add up to the keys).
// Every key is a substring of one copy of the keys column: one allocation for all of them. The
// tokens are written over dst (its length does not matter; nil allocates).
func ColumnsFrom(c *metadv1.TokenColumns, dst []store.ObjectToken) ([]store.ObjectToken, error) {
	n := len(c.GetObjectIds())
	if len(c.GetVersions()) != n || len(c.GetTenantIndex()) != n || len(c.GetKeyLengths()) != n {
		return nil, fmt.Errorf("token columns of different lengths: %d object ids, %d versions, %d tenant indexes, %d key lengths",
			n, len(c.GetVersions()), len(c.GetTenantIndex()), len(c.GetKeyLengths()))
	}
	if len(c.GetTenants()) != len(c.GetTenantInstanceIds()) {
		return nil, fmt.Errorf("%d tenants but %d tenant instance ids", len(c.GetTenants()), len(c.GetTenantInstanceIds()))
	}
	tenants := make([]string, len(c.GetTenants()))
	for i, t := range c.GetTenants() {
		tenants[i] = store.NormalizeTenant(t)
	}
	keys := string(c.GetKeys())
	out := slices.Grow(dst[:0], n)[:n]
	off := 0
	for i := range n {
		ti, kl := c.TenantIndex[i], int(c.KeyLengths[i])
		if int(ti) >= len(tenants) {
			return nil, fmt.Errorf("token %d: tenant index %d of %d tenants", i, ti, len(tenants))
		}
		if kl > len(keys)-off {
			return nil, fmt.Errorf("token %d: key length %d past the end of the keys", i, kl)
		}
		out[i] = store.ObjectToken{Tenant: tenants[ti], Instance: c.TenantInstanceIds[ti], Key: keys[off : off+kl],
			ObjectID: c.ObjectIds[i], Version: c.Versions[i]}
		off += kl
	}
	if off != len(keys) {
		return nil, fmt.Errorf("key lengths add up to %d of %d key bytes", off, len(keys))
	}
	return out, nil
}

// RecordEncoder turns captured objects into snapshot records (SegIndex maps each mounted
// segment to its 1-based position among the segment records), reusing one ObjectRecord and its replica
// records for every object (Persist encodes a million of them).
type RecordEncoder struct {
	SegIndex map[alloc.ID]uint32
	rec      metadv1.ObjectRecord
	reps     []metadv1.ReplicaRecord
	ptrs     []*metadv1.ReplicaRecord
	keyBuf   []byte
}

// Encode fills and returns the shared record for o; it is valid until the next call.
func (x *RecordEncoder) Encode(o *store.CapturedObject) (*metadv1.ObjectRecord, error) {
	st := o.State
	group, gid := o.Group()
	x.keyBuf = append(x.keyBuf[:0], o.Key...)
	r := &x.rec
	*r = metadv1.ObjectRecord{
		Key: x.keyBuf, ObjectId: st.ID, Version: st.Version, Size: st.Size,
		WriterClientId: st.Writer[:], PutStartUnixNano: st.PutStart,
		GroupId: gid, DataType: st.DataType, HardPin: st.HardPin,
		SoftPinTtlMs: uint64(st.SoftPinTTL / int64(time.Millisecond)), SoftPinDeadlineUnixNano: st.SoftPinDeadline,
	}
	if group != "" {
		r.Group = []byte(group)
	}
	if n := len(st.Replicas); cap(x.reps) < n {
		x.reps = make([]metadv1.ReplicaRecord, n)
		x.ptrs = make([]*metadv1.ReplicaRecord, n)
	}
	rounded := alloc.RoundUp(st.Size)
	for i, rep := range st.Replicas {
		idx, ok := x.SegIndex[rep.Extent.Segment]
		if !ok {
			return nil, fmt.Errorf("object %q: replica %d on segment %s that is not mounted", o.Key, rep.ID, rep.Extent.Segment)
		}
		rr := &x.reps[i]
		*rr = metadv1.ReplicaRecord{ReplicaId: rep.ID, SegmentIndex: idx, Offset: rep.Extent.Offset,
			Status: StatusTo(rep.Status), Tier: TierTo(rep.Tier)}
		if rep.Extent.Size != rounded {
			rr.Size = rep.Extent.Size
		}
		x.ptrs[i] = rr
	}
	r.Replicas = x.ptrs[:len(st.Replicas)]
	if task := st.Task; task != nil {
		r.Task = &metadv1.ReplicaTaskRecord{Kind: TaskKindTo(task.Kind), ClientId: task.Client[:],
			StartedUnixNano: task.Started, SourceReplicaId: task.Source, TargetReplicaIds: task.Targets}
	}
	return r, nil
}

// ObjectFrom decodes one object record; segs lists the snapshot's segment ids by position.
func ObjectFrom(r *metadv1.ObjectRecord, segs []alloc.ID) (*store.ObjectState, error) {
	st := &store.ObjectState{
		ID: r.GetObjectId(), Version: r.GetVersion(), Size: r.GetSize(), Writer: ID16(r.GetWriterClientId()),
		PutStart: r.GetPutStartUnixNano(), DataType: r.GetDataType(), HardPin: r.GetHardPin(),
		SoftPinTTL:      int64(min(r.GetSoftPinTtlMs(), 1<<40)) * int64(time.Millisecond),
		SoftPinDeadline: r.GetSoftPinDeadlineUnixNano(),
		Replicas:        make([]store.Replica, len(r.GetReplicas())),
	}
	for i, rr := range r.GetReplicas() {
		idx := int(rr.GetSegmentIndex()) - 1
		if idx < 0 || idx >= len(segs) {
			return nil, fmt.Errorf("object %q: replica on segment #%d of %d", r.GetKey(), idx+1, len(segs))
		}
		size := rr.GetSize()
		if size == 0 {
			size = alloc.RoundUp(st.Size)
		}
		st.Replicas[i] = store.Replica{ID: rr.GetReplicaId(), Tier: TierFrom(rr.GetTier()), Status: StatusFrom(rr.GetStatus()),
			Extent: alloc.Extent{Segment: segs[idx], Offset: rr.GetOffset(), Size: size}}
	}
	if tr := r.GetTask(); tr != nil {
		st.Task = &store.ReplicaTask{Kind: TaskKindFrom(tr.GetKind()), Client: ID16(tr.GetClientId()),
			Started: tr.GetStartedUnixNano(), Source: tr.GetSourceReplicaId(), Targets: slices.Clone(tr.GetTargetReplicaIds())}
	}
	if st.MemoryBytes() != r.GetChargedBytes() && r.GetChargedBytes() != 0 {
		return nil, fmt.Errorf("object %q: charged %d bytes, replicas hold %d", r.GetKey(), r.GetChargedBytes(), st.MemoryBytes())
	}
	return st, nil
}

// ReasonTo converts a store reason to the wire's; ok is false for a reason the wire does not name
// (a test checks that every store reason is named).
func ReasonTo(r store.Reason) (_ metadv1.Reason, ok bool) {
	switch r {
	case store.OK:
		return metadv1.Reason_REASON_UNSPECIFIED, true
	case store.InvalidParams:
		return metadv1.Reason_REASON_INVALID_PARAMS, true
	case store.TenantNotRegistered:
		return metadv1.Reason_REASON_TENANT_NOT_REGISTERED, true
	case store.TenantNotEmpty:
		return metadv1.Reason_REASON_TENANT_NOT_EMPTY, true
	case store.TenantQuotaExceeded:
		return metadv1.Reason_REASON_TENANT_QUOTA_EXCEEDED, true
	case store.TenantAlreadyExists:
		return metadv1.Reason_REASON_TENANT_ALREADY_EXISTS, true
	case store.ObjectNotFound:
		return metadv1.Reason_REASON_OBJECT_NOT_FOUND, true
	case store.ObjectAlreadyExists:
		return metadv1.Reason_REASON_OBJECT_ALREADY_EXISTS, true
	case store.ObjectHasLease:
		return metadv1.Reason_REASON_OBJECT_HAS_LEASE, true
	case store.ReplicaIsNotReady:
		return metadv1.Reason_REASON_REPLICA_IS_NOT_READY, true
	case store.InvalidWrite:
		return metadv1.Reason_REASON_INVALID_WRITE, true
	case store.IllegalClient:
		return metadv1.Reason_REASON_ILLEGAL_CLIENT, true
	case store.NoAvailableHandle:
		return metadv1.Reason_REASON_NO_AVAILABLE_HANDLE, true
	case store.SegmentNotFound:
		return metadv1.Reason_REASON_SEGMENT_NOT_FOUND, true
	case store.SegmentOwnedByOtherClient:
		return metadv1.Reason_REASON_SEGMENT_OWNED_BY_OTHER_CLIENT, true
	case store.StateReplaced:
		return metadv1.Reason_REASON_STATE_REPLACED, true
	case store.MemberNotFound:
		return metadv1.Reason_REASON_MEMBER_NOT_FOUND, true
	case store.SessionExpired:
		return metadv1.Reason_REASON_SESSION_EXPIRED, true
	case store.SequenceTooOld:
		return metadv1.Reason_REASON_SEQUENCE_TOO_OLD, true
	case store.AuthRevisionStale:
		return metadv1.Reason_REASON_AUTH_REVISION_STALE, true
	case store.KeyNotFound:
		return metadv1.Reason_REASON_KEY_NOT_FOUND, true
	case store.RoleNotFound:
		return metadv1.Reason_REASON_ROLE_NOT_FOUND, true
	case store.KeyAlreadyExists:
		return metadv1.Reason_REASON_KEY_ALREADY_EXISTS, true
	case store.AuthLimitExceeded:
		return metadv1.Reason_REASON_AUTH_LIMIT_EXCEEDED, true
	case store.NoReplicaOnSegment:
		return metadv1.Reason_REASON_NO_REPLICA_ON_SEGMENT, true
	case store.ResponseLimitReached:
		return metadv1.Reason_REASON_RESPONSE_LIMIT_REACHED, true
	case store.ObjectHasReplicationTask:
		return metadv1.Reason_REASON_OBJECT_HAS_REPLICATION_TASK, true
	case store.ObjectNoReplicationTask:
		return metadv1.Reason_REASON_OBJECT_NO_REPLICATION_TASK, true
	case store.ReplicaNotFound:
		return metadv1.Reason_REASON_REPLICA_NOT_FOUND, true
	case store.TaskNotFound:
		return metadv1.Reason_REASON_TASK_NOT_FOUND, true
	case store.TaskPendingLimitExceeded:
		return metadv1.Reason_REASON_TASK_PENDING_LIMIT_EXCEEDED, true
	case store.DrainNotFound:
		return metadv1.Reason_REASON_DRAIN_NOT_FOUND, true
	case store.SegmentDraining:
		return metadv1.Reason_REASON_SEGMENT_DRAINING, true
	case store.DrainNotRunning:
		return metadv1.Reason_REASON_DRAIN_NOT_RUNNING, true
	case store.ReservationLost:
		return metadv1.Reason_REASON_RESERVATION_LOST, true
	case store.LearnerNotCaughtUp:
		return metadv1.Reason_REASON_LEARNER_NOT_CAUGHT_UP, true
	}
	return metadv1.Reason_REASON_UNSPECIFIED, false
}

// ItemStatus is one item's Status in a batch response: OK, or the reason and "REASON: msg".
func ItemStatus(r store.Reason, msg string) *metadv1.Status {
	if r == store.OK {
		return &metadv1.Status{}
	}
	wr, ok := ReasonTo(r)
	if !ok {
		wr = metadv1.Reason_REASON_UNSPECIFIED
		msg = "unmapped store reason " + r.String() + ": " + msg
	}
	return &metadv1.Status{Reason: wr, Message: r.String() + ": " + msg}
}

// ErrItem is ItemStatus of an error (nil = OK): a *store.Error by its reason, anything else as
// INVALID_PARAMS with the error's text.
func ErrItem(err error) *metadv1.Status {
	if err == nil {
		return &metadv1.Status{}
	}
	var se *store.Error
	if errors.As(err, &se) {
		return ItemStatus(se.Reason, se.Msg)
	}
	return ItemStatus(store.InvalidParams, err.Error())
}

// TenantStateTo converts a tenant's lifecycle to the wire.
func TenantStateTo(l store.TenantLife) metadv1.TenantState {
	switch l {
	case store.TenantOpen:
		return metadv1.TenantState_TENANT_STATE_OPEN
	case store.TenantClosing:
		return metadv1.TenantState_TENANT_STATE_CLOSING
	case store.TenantRemoved:
		return metadv1.TenantState_TENANT_STATE_REMOVED
	}
	return metadv1.TenantState_TENANT_STATE_UNSPECIFIED
}

// StrategyTo is a placement strategy as a command carries it.
func StrategyTo(s alloc.Strategy) metadv1.PlacementStrategy {
	if s == alloc.StrategyFreeRatioFirst {
		return metadv1.PlacementStrategy_PLACEMENT_STRATEGY_FREE_RATIO_FIRST
	}
	return metadv1.PlacementStrategy_PLACEMENT_STRATEGY_RANDOM
}

// ReplicasTo describes replicas to a client: where they are (segment endpoint and base, looked up
// in segs) and the object size.
//
// The replicas come in the order a reader tries them: by tier in alloc.Tiers order (MEMORY, NOF,
// LOCAL_DISK, DISK, DFS), in the object's order within a tier; a LOCAL_DISK one names its owner.
func ReplicasTo(segs *alloc.Registry, reps []store.Replica, size uint64) []*metadv1.Replica {
	out := make([]*metadv1.Replica, len(reps))
	msgs := make([]replicaMsg, len(reps))
	n := 0
	put := func(r *store.Replica) {
		m := &msgs[n]
		m.segment = r.Extent.Segment
		rp := &m.Replica
		rp.ReplicaId, rp.Tier, rp.SegmentId = r.ID, TierTo(r.Tier), m.segment[:]
		rp.Offset, rp.Size, rp.Status = r.Extent.Offset, size, StatusTo(r.Status)
		if info, ok := segs.Describe(m.segment); ok {
			rp.SegmentEndpoint, rp.BaseAddress = info.Endpoint, info.Base
			if r.Tier == alloc.TierLocalDisk {
				m.owner = info.Owner
				rp.OwnerClientId = m.owner[:]
			}
		}
		out[n] = rp
		n++
	}
	var later uint8 // tiers after the memory ones that reps holds, a bit each
	for i := range reps {
		if t := reps[i].Tier; t.InMemory() {
			put(&reps[i])
		} else {
			later |= 1 << t
		}
	}
	for _, t := range alloc.Tiers {
		if later&(1<<t) == 0 {
			continue
		}
		for i := range reps {
			if reps[i].Tier == t {
				put(&reps[i])
			}
		}
	}
	return out[:n]
}

// replicaMsg is a Replica message with the storage of its segment id, and resultReplicaMsg a
// ResultReplica's, so that the replicas of one conversion, ids included, are one allocation.
type (
	replicaMsg struct {
		metadv1.Replica
		segment alloc.ID
		owner   alloc.ID
	}
	resultReplicaMsg struct {
		metadv1.ResultReplica
		segment alloc.ID
	}
)

// ReasonFrom converts a wire reason to the store's; ok is false for one the store does not know
// (NOT_LEADER and UNAVAILABLE are not store reasons).
func ReasonFrom(r metadv1.Reason) (_ store.Reason, ok bool) {
	for _, sr := range store.Reasons() {
		if w, known := ReasonTo(sr); known && w == r {
			return sr, true
		}
	}
	return store.OK, false
}

// ResultTo converts a command's result to the record a client session keeps in a snapshot.
func ResultTo(r store.Result) *metadv1.ResultRecord {
	wr, _ := ReasonTo(r.Reason)
	out := &metadv1.ResultRecord{Reason: uint32(wr), Message: r.Message, Reused: r.Reused, Count: uint64(max(r.Count, 0)),
		Bytes: r.Bytes, Instance: r.Instance, Created: r.Created, UnmountSegments: uint64(max(r.Unmount.Segments, 0)),
		UnmountReplicas: uint64(max(r.Unmount.Replicas, 0)), UnmountErased: uint64(max(r.Unmount.Erased, 0)), Session: r.Session,
		UnmountAtUnixNano: r.Unmount.UnmountAt,

		Key: []byte(r.Key)}
	if len(r.Replicas) > 0 {
		out.Replicas = make([]*metadv1.ResultReplica, len(r.Replicas))
		msgs := make([]resultReplicaMsg, len(r.Replicas))
		for i := range r.Replicas {
			rep, m := &r.Replicas[i], &msgs[i]
			m.segment = rep.Extent.Segment
			rr := &m.ResultReplica
			rr.ReplicaId, rr.SegmentId, rr.Offset, rr.Size = rep.ID, m.segment[:], rep.Extent.Offset, rep.Extent.Size
			rr.Tier, rr.Status = TierTo(rep.Tier), StatusTo(rep.Status)
			out.Replicas[i] = rr
		}
	}
	for _, it := range r.Items {
		out.Items = append(out.Items, ResultTo(it))
	}
	for i := range r.Tasks {
		out.Tasks = append(out.Tasks, TaskTo(&r.Tasks[i]))
	}
	if r.Drain != nil {
		out.Drain = DrainTo(r.Drain)
	}
	return out
}

// ResultFrom converts a kept result back; an unknown reason is an error (the record is corrupt).
func ResultFrom(rec *metadv1.ResultRecord) (store.Result, error) {
	reason, ok := ReasonFrom(metadv1.Reason(rec.GetReason()))
	if !ok {
		return store.Result{}, fmt.Errorf("result with unknown reason %d", rec.GetReason())
	}
	r := store.Result{Reason: reason, Message: rec.GetMessage(), Reused: rec.GetReused(), Count: int(min(rec.GetCount(), 1<<40)),
		Bytes: rec.GetBytes(), Instance: rec.GetInstance(), Created: rec.GetCreated(), Session: rec.GetSession(), Key: string(rec.GetKey()),
		Unmount: store.UnmountResult{Segments: int(min(rec.GetUnmountSegments(), 1<<40)),
			Replicas: int(min(rec.GetUnmountReplicas(), 1<<40)), Erased: int(min(rec.GetUnmountErased(), 1<<40)),
			UnmountAt: rec.GetUnmountAtUnixNano()}}
	for _, rp := range rec.GetReplicas() {
		r.Replicas = append(r.Replicas, store.Replica{ID: rp.GetReplicaId(), Tier: TierFrom(rp.GetTier()), Status: StatusFrom(rp.GetStatus()),
			Extent: alloc.Extent{Segment: ID16(rp.GetSegmentId()), Offset: rp.GetOffset(), Size: rp.GetSize()}})
	}
	for _, t := range rec.GetTasks() {
		r.Tasks = append(r.Tasks, TaskFrom(t))
	}
	if rec.GetDrain() != nil {
		j := DrainFrom(rec.GetDrain())
		r.Drain = &j
	}
	for _, it := range rec.GetItems() {
		ir, err := ResultFrom(it)
		if err != nil {
			return store.Result{}, err
		}
		r.Items = append(r.Items, ir)
	}
	return r, nil
}

// TaskKindFrom converts a wire replica task kind; UNSPECIFIED and unknown kinds give 0, which the
// store refuses.
func TaskKindFrom(k metadv1.TaskKind) store.TaskKind {
	switch k {
	case metadv1.TaskKind_TASK_KIND_COPY:
		return store.TaskCopy
	case metadv1.TaskKind_TASK_KIND_MOVE:
		return store.TaskMove
	case metadv1.TaskKind_TASK_KIND_OFFLOAD:
		return store.TaskOffload
	case metadv1.TaskKind_TASK_KIND_PROMOTE:
		return store.TaskPromote
	}
	return 0
}

// TaskKindTo converts a store replica task kind to the wire.
func TaskKindTo(k store.TaskKind) metadv1.TaskKind {
	switch k {
	case store.TaskCopy:
		return metadv1.TaskKind_TASK_KIND_COPY
	case store.TaskMove:
		return metadv1.TaskKind_TASK_KIND_MOVE
	case store.TaskOffload:
		return metadv1.TaskKind_TASK_KIND_OFFLOAD
	case store.TaskPromote:
		return metadv1.TaskKind_TASK_KIND_PROMOTE
	}
	return metadv1.TaskKind_TASK_KIND_UNSPECIFIED
}

// ReplicaTaskFrom builds the store's request for a ReplicaTaskStart command.
func ReplicaTaskFrom(m *metadv1.ReplicaTaskStart) store.ReplicaTaskRequest {
	r := store.ReplicaTaskRequest{Tenant: m.GetTenant(), Client: ID16(m.GetClientId()), Key: string(m.GetKey()),
		Kind: TaskKindFrom(m.GetKind()), Source: ID16(m.GetSourceSegmentId()),
		Count: int(min(m.GetReplicas(), 1<<16)), Strategy: StrategyFrom(m.GetPlacement())}
	for _, id := range m.GetTargetSegmentIds() {
		r.Targets = append(r.Targets, ID16(id))
	}
	return r
}

// ReplicaTaskEndFrom builds the store's request for a ReplicaTaskEnd or ReplicaTaskRevoke command's
// fields.
func ReplicaTaskEndFrom(tenant string, client, key []byte, kind metadv1.TaskKind) store.ReplicaTaskEndRequest {
	return store.ReplicaTaskEndRequest{Tenant: tenant, Client: ID16(client), Key: string(key), Kind: TaskKindFrom(kind)}
}

// TaskStateTo converts a scheduled task's state to the wire.
func TaskStateTo(s store.TaskState) metadv1.TaskState {
	switch s {
	case store.TaskPending:
		return metadv1.TaskState_TASK_STATE_PENDING
	case store.TaskProcessing:
		return metadv1.TaskState_TASK_STATE_PROCESSING
	case store.TaskSuccess:
		return metadv1.TaskState_TASK_STATE_SUCCESS
	case store.TaskFailed:
		return metadv1.TaskState_TASK_STATE_FAILED
	}
	return metadv1.TaskState_TASK_STATE_UNSPECIFIED
}

// TaskTo converts a scheduled task to the wire (responses, snapshot records, kept results).
func TaskTo(t *store.Task) *metadv1.ScheduledTask {
	out := &metadv1.ScheduledTask{TaskId: t.ID, Kind: TaskKindTo(t.Spec.Kind), Tenant: t.Spec.Tenant, Key: []byte(t.Spec.Key),
		SourceSegmentId: slices.Clone(t.Spec.Source[:]), Replicas: uint32(max(t.Spec.Replicas, 0)), ClientId: slices.Clone(t.Client[:]),
		State: TaskStateTo(t.State), CreatedUnixNano: t.Created, UpdatedUnixNano: t.Updated, Message: t.Message, DrainId: t.Spec.Drain,
		Size: t.Spec.Size}
	for _, id := range t.Spec.Targets {
		out.TargetSegmentIds = append(out.TargetSegmentIds, slices.Clone(id[:]))
	}
	return out
}

// TaskFrom converts a wire scheduled task; an unknown state or kind gives 0, which
// store.TaskQueue.Restore refuses.
func TaskFrom(m *metadv1.ScheduledTask) store.Task {
	t := store.Task{ID: m.GetTaskId(), Spec: store.TaskSpec{Kind: TaskKindFrom(m.GetKind()), Tenant: m.GetTenant(),
		Key: string(m.GetKey()), Source: ID16(m.GetSourceSegmentId()), Replicas: int(min(m.GetReplicas(), 1<<16)), Drain: m.GetDrainId(),
		Size: m.GetSize()},
		Client: ID16(m.GetClientId()), Created: m.GetCreatedUnixNano(), Updated: m.GetUpdatedUnixNano(), Message: m.GetMessage()}
	switch m.GetState() {
	case metadv1.TaskState_TASK_STATE_PENDING:
		t.State = store.TaskPending
	case metadv1.TaskState_TASK_STATE_PROCESSING:
		t.State = store.TaskProcessing
	case metadv1.TaskState_TASK_STATE_SUCCESS:
		t.State = store.TaskSuccess
	case metadv1.TaskState_TASK_STATE_FAILED:
		t.State = store.TaskFailed
	}
	for _, id := range m.GetTargetSegmentIds() {
		t.Spec.Targets = append(t.Spec.Targets, ID16(id))
	}
	return t
}

// TaskSpecFrom builds the store's spec for a CreateTask command.
func TaskSpecFrom(m *metadv1.CreateTask) store.TaskSpec {
	s := store.TaskSpec{Kind: TaskKindFrom(m.GetKind()), Tenant: m.GetTenant(), Key: string(m.GetKey()),
		Source: ID16(m.GetSourceSegmentId()), Replicas: int(min(m.GetReplicas(), 1<<16))}
	if len(m.GetSourceSegmentId()) == 0 {
		s.Source = alloc.ID{}
	}
	for _, id := range m.GetTargetSegmentIds() {
		s.Targets = append(s.Targets, ID16(id))
	}
	return s
}

// ids16 converts 16-byte ids; a wrong length gives a zero id, which the store refuses.
func ids16(bs [][]byte) []alloc.ID {
	var out []alloc.ID
	for _, b := range bs {
		out = append(out, ID16(b))
	}
	return out
}

func idsTo(ids []alloc.ID) [][]byte {
	out := make([][]byte, 0, len(ids))
	for _, id := range ids {
		out = append(out, slices.Clone(id[:]))
	}
	return out
}

// DrainSpecFrom builds the store's spec of a StartDrain command.
func DrainSpecFrom(m *metadv1.StartDrain) store.DrainSpec {
	return store.DrainSpec{Segments: ids16(m.GetSegmentIds()), Targets: ids16(m.GetTargetSegmentIds()),
		MaxConcurrency: int(min(m.GetMaxConcurrency(), 1<<20))}
}

// DrainMovesFrom builds the store's moves of a ScheduleDrainMoves command.
func DrainMovesFrom(m *metadv1.ScheduleDrainMoves) []store.DrainMove {
	out := make([]store.DrainMove, len(m.GetMoves()))
	for i, mv := range m.GetMoves() {
		out[i] = store.DrainMove{Tenant: mv.GetTenant(), Key: string(mv.GetKey()), Source: ID16(mv.GetSourceSegmentId())}
		if len(mv.GetTargetSegmentId()) != 0 {
			out[i].Target = ID16(mv.GetTargetSegmentId())
		}
	}
	return out
}

// DrainMovesTo builds a ScheduleDrainMoves command's moves.
func DrainMovesTo(mv []store.DrainMove) []*metadv1.DrainMove {
	out := make([]*metadv1.DrainMove, len(mv))
	for i, m := range mv {
		out[i] = &metadv1.DrainMove{Tenant: m.Tenant, Key: []byte(m.Key), SourceSegmentId: slices.Clone(m.Source[:])}
		if !m.Target.IsZero() {
			out[i].TargetSegmentId = slices.Clone(m.Target[:])
		}
	}
	return out
}

// DrainStateTo converts a drain job's state.
func DrainStateTo(s store.DrainState) metadv1.DrainState {
	switch s {
	case store.DrainRunning:
		return metadv1.DrainState_DRAIN_STATE_RUNNING
	case store.DrainDone:
		return metadv1.DrainState_DRAIN_STATE_DONE
	case store.DrainCancelled:
		return metadv1.DrainState_DRAIN_STATE_CANCELLED
	}
	return metadv1.DrainState_DRAIN_STATE_UNSPECIFIED
}

// DrainTo converts a drain job to the wire (responses, snapshot records, kept results).
func DrainTo(j *store.DrainJob) *metadv1.DrainJob {
	return &metadv1.DrainJob{DrainId: j.ID, SegmentIds: idsTo(j.Spec.Segments), TargetSegmentIds: idsTo(j.Spec.Targets),
		MaxConcurrency: uint32(max(j.Spec.MaxConcurrency, 0)), State: DrainStateTo(j.State), CreatedUnixNano: j.Created,
		UpdatedUnixNano: j.Updated, Moved: j.Moved, Failed: j.Failed, InFlightTaskIds: slices.Clone(j.InFlight)}
}

// DrainFrom converts a wire drain job; an unknown state gives 0, which store.DrainTable.Restore
// refuses.
func DrainFrom(m *metadv1.DrainJob) store.DrainJob {
	j := store.DrainJob{ID: m.GetDrainId(), Spec: store.DrainSpec{Segments: ids16(m.GetSegmentIds()),
		Targets: ids16(m.GetTargetSegmentIds()), MaxConcurrency: int(min(m.GetMaxConcurrency(), 1<<20))},
		Created: m.GetCreatedUnixNano(), Updated: m.GetUpdatedUnixNano(), Moved: m.GetMoved(), Failed: m.GetFailed(),
		InFlight: slices.Clone(m.GetInFlightTaskIds())}
	switch m.GetState() {
	case metadv1.DrainState_DRAIN_STATE_RUNNING:
		j.State = store.DrainRunning
	case metadv1.DrainState_DRAIN_STATE_DONE:
		j.State = store.DrainDone
	case metadv1.DrainState_DRAIN_STATE_CANCELLED:
		j.State = store.DrainCancelled
	}
	return j
}
