package store

import (
	"sync"
	"sync/atomic"

	"metad/store/alloc"
)

// ReplicaStatus is the write state of one replica.
type ReplicaStatus uint8

const (
	// Processing: extents allocated, the client is writing the bytes.
	Processing ReplicaStatus = 1
	// Complete: the bytes are written and may be read.
	Complete ReplicaStatus = 2
)

func (s ReplicaStatus) String() string {
	switch s {
	case Processing:
		return "PROCESSING"
	case Complete:
		return "COMPLETE"
	}
	return "UNKNOWN"
}

// Replica is one copy of an object: an extent of one segment. Immutable once inside an ObjectState.
type Replica struct {
	ID     uint64
	Extent alloc.Extent
	Tier   alloc.Tier
	Status ReplicaStatus
}

// ObjectState is the replicated state of one object. It is immutable: every change builds a new
// ObjectState with Version+1 and swaps the pointer in ObjectEntry, so a snapshot capture or a census
// can hold a *ObjectState with no lock and read a consistent object. The Replicas slice is part of
// that immutable state: operations return it without copying, and nobody may modify it.
type ObjectState struct {
	ID              uint64   // object id, from the tenant's counter; unique for the tenant instance
	Version         uint64   // +1 on every replicated change of this object
	Size            uint64   // object size in bytes as the client gave it
	Writer          alloc.ID // client that started the current write
	PutStart        int64    // leader time (unix ns) of the PutStart/UpsertStart that began the write
	SoftPinTTL      int64    // staged soft pin (ns) until the write first completes; 0 = none
	SoftPinDeadline int64    // unix ns; 0 = not soft-pinned
	DataType        uint32   // opaque to metad
	HardPin         bool     // never evicted (Remove still deletes it)
	Replicas        []Replica
	Task            *ReplicaTask // the copy or move in progress; nil = none (immutable, see ReplicaTask)
}

// MemoryBytes is what the object charges to its tenant's quota: size times its MEMORY replicas,
// whatever their status (PutStart charges what it allocates; revoke, eviction, removal and unmount
// release what they drop).
func (s *ObjectState) MemoryBytes() uint64 {
	n := uint64(0)
	for _, r := range s.Replicas {
		if r.Tier == alloc.TierMemory {
			n++
		}
	}
	return n * s.Size
}

// HasComplete reports whether any replica is COMPLETE (the object is readable).
func (s *ObjectState) HasComplete() bool {
	for _, r := range s.Replicas {
		if r.Status == Complete {
			return true
		}
	}
	return false
}

// HasProcessing reports whether any replica is still PROCESSING.
func (s *ObjectState) HasProcessing() bool {
	for _, r := range s.Replicas {
		if r.Status == Processing {
			return true
		}
	}
	return false
}

// busy is the verdict of every removal (Remove, BatchRemove, RemoveAll, RemoveGroup, the erase
// steps) on an object it would erase: OBJECT_HAS_REPLICATION_TASK while a copy or move runs,
// REPLICA_IS_NOT_READY while a write is in progress, force or not; nil when neither.
func (s *ObjectState) busy(tenant, key string) *Error {
	switch {
	case s.Task != nil:
		return objErr(ObjectHasReplicationTask, tenant, key, "a "+s.Task.Kind.String()+" task is in progress")
	case s.HasProcessing():
		return objErr(ReplicaIsNotReady, tenant, key, "a replica is still PROCESSING")
	}
	return nil
}

// writing reports whether r is a replica of the object's write in progress: PROCESSING and not a
// target of its replica task (PutEnd and PutRevoke never touch a task's targets).
func (s *ObjectState) writing(r Replica) bool {
	return r.Status == Processing && (s.Task == nil || !s.Task.IsTarget(r.ID))
}

// PendingSince returns the leader time at which the object's PROCESSING work began, the replica
// task's start when it has one, else its write's PutStart (the reaper's clock for
// put_release_timeout); ok is false when nothing is PROCESSING.
func (s *ObjectState) PendingSince() (since int64, ok bool) {
	if s.Task != nil {
		return s.Task.Started, true
	}
	return s.PutStart, s.HasProcessing()
}

// SoftPinned reports whether the soft pin holds at now.
func (s *ObjectState) SoftPinned(now int64) bool { return s.SoftPinDeadline > now }

// clone returns a copy with Version+1 and its own replica slice, ready to be changed and published.
func (s *ObjectState) next() *ObjectState {
	n := newState(len(s.Replicas))
	reps := n.Replicas
	*n = *s
	n.Version++
	n.Replicas = append(reps, s.Replicas...)
	return n
}

// nextWith is next with room for extra more replicas, so that a change that adds them allocates once.
func (s *ObjectState) nextWith(extra int) *ObjectState {
	n := newState(len(s.Replicas) + extra)
	reps := n.Replicas
	*n = *s
	n.Version++
	n.Replicas = append(reps, s.Replicas...)
	return n
}

// nextKeeping returns a copy with Version+1 that holds only the replicas keep accepts, in their
// order, in storage sized to them (a state that lost replicas carries no room for them), and the
// replicas it left out. keep must depend on its argument alone: it is called twice per replica.
func (s *ObjectState) nextKeeping(keep func(Replica) bool) (*ObjectState, []Replica) {
	n := 0
	for _, r := range s.Replicas {
		if keep(r) {
			n++
		}
	}
	ns := newState(n)
	reps := ns.Replicas
	*ns = *s
	ns.Version++
	var dropped []Replica
	if n < len(s.Replicas) {
		dropped = make([]Replica, 0, len(s.Replicas)-n)
	}
	for _, r := range s.Replicas {
		if keep(r) {
			reps = append(reps, r)
		} else {
			dropped = append(dropped, r)
		}
	}
	ns.Replicas = reps
	return ns, dropped
}

// newState allocates a state with room for n replicas. For the common one and two replica cases
// the state and its replicas are one allocation (a change of an object allocates once, not twice).
func newState(n int) *ObjectState {
	switch n {
	case 0, 1:
		b := &struct {
			ObjectState
			r [1]Replica
		}{}
		b.Replicas = b.r[:0]
		return &b.ObjectState
	case 2:
		b := &struct {
			ObjectState
			r [2]Replica
		}{}
		b.Replicas = b.r[:0]
		return &b.ObjectState
	}
	return &ObjectState{Replicas: make([]Replica, 0, n)}
}

// Lifecycle of an ObjectEntry. Transitions: creating -> active -> removing, or creating -> removing
// when a create is abandoned. removing is final: the entry is unlinked and a new entry takes the key.
type Lifecycle uint8

const (
	Creating Lifecycle = iota
	Active
	Removing
)

func (l Lifecycle) String() string {
	return [...]string{"creating", "active", "removing"}[l]
}

// meta word layout (ObjectEntry.meta): bits 0-1 lifecycle, bit 2 the leader's pending-unlink mark,
// bits 3.. the read lease deadline in unix milliseconds (leader soft state).
const (
	metaLifeMask  = 0x3
	metaMarkBit   = 0x4
	metaLeaseShft = 3
)

// ObjectEntry is one object's identity and lock. Concurrency contract: key and group are immutable;
// mu guards every change of meta and state; meta and state are also readable without mu (atomics),
// so route-level code can see a removing entry and a census can load a state with no object lock.
// Leader soft state (the read lease and the pending-unlink mark) lives in meta, apart from the
// replicated ObjectState, and never reaches a snapshot.
type ObjectEntry struct {
	key   string
	group *GroupEntry // nil for a singleton; immutable back-pointer to the explicit group

	mu    sync.Mutex
	meta  atomic.Uint64 // written under mu: lifecycle | mark | lease
	state atomic.Pointer[ObjectState]
}

// Key returns the object key.
func (e *ObjectEntry) Key() string { return e.key }

// Group returns the explicit group, or nil for a singleton.
func (e *ObjectEntry) Group() *GroupEntry { return e.group }

// State returns the current replicated state (immutable; nil only while creating).
func (e *ObjectEntry) State() *ObjectState { return e.state.Load() }

// Life returns the lifecycle (an atomic read; stable only under mu).
func (e *ObjectEntry) Life() Lifecycle { return Lifecycle(e.meta.Load() & metaLifeMask) }

func (e *ObjectEntry) setLifeLocked(l Lifecycle) {
	m := e.meta.Load()
	e.meta.Store(m&^metaLifeMask | uint64(l))
}

// markedLocked reports the leader's pending-unlink mark (set between an eviction's or a remove's
// revalidation and the commit of its proposal).
func (e *ObjectEntry) markedLocked() bool { return e.meta.Load()&metaMarkBit != 0 }

func (e *ObjectEntry) setMarkLocked(on bool) {
	m := e.meta.Load()
	if on {
		m |= metaMarkBit
	} else {
		m &^= metaMarkBit
	}
	e.meta.Store(m)
}

// leaseLocked returns the lease deadline in unix ns (0 = none).
func (e *ObjectEntry) leaseLocked() int64 {
	return int64(e.meta.Load()>>metaLeaseShft) * 1e6
}

// extendLeaseLocked sets lease = max(lease, until), rounded up to a millisecond.
func (e *ObjectEntry) extendLeaseLocked(until int64) {
	e.raiseLeaseLocked(uint64((until + 1e6 - 1) / 1e6))
}

// stampWriteLocked sets lease = max(lease, at) for a completed write at leader time at, rounded
// down to a millisecond: never later than at, so the stamp protects nothing at any later time of
// the same clock (leased means now < lease), while eviction, which takes the oldest lease first,
// ranks a fresh object by its write time instead of as never used.
func (e *ObjectEntry) stampWriteLocked(at int64) {
	if at > 0 {
		e.raiseLeaseLocked(uint64(at / 1e6))
	}
}

// raiseLeaseLocked sets the lease field of the meta word to max(lease, ms), in milliseconds.
func (e *ObjectEntry) raiseLeaseLocked(ms uint64) {
	m := e.meta.Load()
	if m>>metaLeaseShft >= ms {
		return
	}
	e.meta.Store(m&(1<<metaLeaseShft-1) | ms<<metaLeaseShft)
}

// ObjectToken names one incarnation of an object for work that outlives a lock: eviction, removal,
// the reaper. It matches only while the tenant instance and object id are unchanged, so stale work
// can never touch an object erased and recreated under the same key; Version pins one state.
type ObjectToken struct {
	Tenant   string
	Instance uint64
	Key      string
	ObjectID uint64
	Version  uint64
}

// ObjectHandle is a census entry: a tenant, a key and the entry found under it at census time. A
// handle may outlive the entry's life; its State is the last state that entry had, and every change
// through a handle revalidates (Token, WithToken), so it can never reach a recreated object.
type ObjectHandle struct {
	Tenant *TenantState
	Entry  *ObjectEntry
}

// Key returns the handle's object key.
func (h ObjectHandle) Key() string { return h.Entry.key }

// State loads the entry's current state without a lock (nil while creating).
func (h ObjectHandle) State() *ObjectState { return h.Entry.state.Load() }

// Token returns a token for the state the handle sees now (ok is false while creating).
func (h ObjectHandle) Token() (ObjectToken, bool) {
	s := h.Entry.state.Load()
	if s == nil {
		return ObjectToken{}, false
	}
	return ObjectToken{Tenant: h.Tenant.name, Instance: h.Tenant.instance, Key: h.Entry.key,
		ObjectID: s.ID, Version: s.Version}, true
}
