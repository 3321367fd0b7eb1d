// Package store is metad's tenant-first metadata store: the state the Raft state machine applies every
// command to, and the state the read path serves every Get from. It is an ordinary data structure:
// it imports nothing of Raft, gRPC or protobuf, reads no clock and draws no randomness.
//
// # Ownership
//
//	Store
//	 ├─ TenantRegistry        tenant id -> *TenantState   (sharded, copy-on-write, lock-free reads)
//	 │   └─ TenantState       instance id, lifecycle, QuotaAccount, gate
//	 │       └─ GroupDirectory route shards (key -> *ObjectEntry), group catalog, id counters
//	 │           ├─ GroupEntry   explicit group: members, lifecycle
//	 │           └─ ObjectEntry  one object: mutex, lifecycle, leader soft state, *ObjectState
//	 ├─ alloc.Registry        segments, range allocators, placement (package store/alloc)
//	 ├─ TaskQueue             master-scheduled tasks (taskqueue.go)
//	 ├─ DrainTable            drain jobs (drain.go)
//	 └─ ArenaTable            allocation arenas (arena.go)
//
// Each sub-table is reached through the store (Tenants, Segments, Tasks, Drains, Arenas) and its
// own operations and listings are its methods; operations that span tables or change objects are
// the Store's. The task queue and the drain table hold their store, the arena table the segment
// registry, to reach what their operations check and change.
//
// The mutation boundary is one lock per object: unrelated objects never wait for each other, also
// when their keys share a route shard, since a route shard's lock is held only for one map access.
// An explicit group member points back to its GroupEntry, so a member is found by one route lookup
// and its group in O(1), without a second lookup or the group's lock.
//
// # Lock order
//
// Written once, here; every function that takes more than one lock follows it:
//
//	registry shard writer  <  tenant gate  <  group  <  objects in canonical (byte-wise key) order
//
// Route shard locks and the group catalog lock are leaves: held for one map access, with nothing
// acquired under them, so they may be taken anywhere. The segment registry's lock (alloc.Registry)
// is never taken while a group or object lock is held: allocation happens before an object is
// locked, freeing after its lock is released. No store lock is ever held across a Raft proposal or
// any I/O (the store does none).
//
// # Lifetimes and fencing
//
// An ObjectEntry goes creating -> active -> removing; removing is final and the entry is then
// unlinked from its route by a matched unlink (EraseIfMatch), so stale work can never unlink an
// object created again under the same key. Work that outlives a lock keeps an ObjectToken (tenant
// instance, key, object id, version) or an ObjectHandle and revalidates. A tenant's instance id is
// new on every registration, so a token of a removed-and-registered-again tenant matches nothing.
//
// Create: the new entry is locked, published in its route in creating state (serializing the key),
// joins its group, then turns active; readers that find it block on its lock and see it whole.
// Erase: under the object lock the entry turns removing; after the lock is released it leaves its
// group (an empty group is dropped), its route is unlinked if it still points at it, and its extents
// and quota are freed (an Evict's extents together at the end of each run of one tenant's units:
// alloc.Registry.FreeMany).
//
// # Replicated state and leader soft state
//
// ObjectState is immutable and replaced (Version+1) on every replicated change, so a census or a
// snapshot capture can hold it with no lock. Read leases and the pending-unlink mark are leader soft
// state kept in the entry's meta word: they never reach a snapshot and never decide a replicated
// outcome. PutEnd, applied on every node, stamps the entry's leader time into the lease (lease =
// max(lease, now), rounded down: it protects nothing) so that eviction ranks a fresh object by its
// write time. Removal is therefore two steps: the leader prepares (checks the lease, marks) and the
// replicated step erases the prepared incarnation (see ops_remove.go).
//
// # Copy and move of replicas
//
// A copy or move is a ReplicaTask recorded in the object's state (ops_task.go): StartReplicaTask
// places PROCESSING targets next to a COMPLETE source, EndReplicaTask makes them COMPLETE (a move
// also drops its source), RevokeReplicaTask drops them. While an object carries one, removal and
// eviction refuse it (OBJECT_HAS_REPLICATION_TASK), UpsertStart too, and PutEnd and PutRevoke
// leave its targets alone; an unmount that drops its source or a target ends it; RevokeTokens (the
// reaper) revokes it. The allocator is called with no object lock held, as for a put.
//
// # Master-scheduled tasks
//
// TaskQueue (taskqueue.go, reached as Store.Tasks()) is the replicated queue of work the cluster
// assigns to workers: a TaskKind, a state machine (PENDING -> PROCESSING -> SUCCESS | FAILED), a
// FIFO per client, ids from a counter, bounded pending and finished tasks. Its API is Create,
// Fetch, Complete, Expire and Get (and List / Restore for snapshots); a new kind adds its TaskKind
// and what Create checks for it (checkTask), nothing else.
//
// # Drain jobs
//
// DrainTable (drain.go, reached as Store.Drains()) holds the replicated drain jobs: Start closes
// the segments and starts a job, ScheduleMoves creates the job's move tasks in the TaskQueue (at
// most its MaxConcurrency in flight), TaskQueue.Complete of such a task counts it for its job,
// Finish ends a job whose segments are empty, Cancel opens them again. Candidates is the leader's
// census of what to move next (lock-free, a hint: never on the apply path). The table's lock is a
// leaf, never held while the task queue's is, nor the other way round.
//
// # Call sequence on the apply path
//
// The FSM, on every node, calls only replicated operations: RegisterTenant, UnregisterTenant,
// SetQuota, MountSegment, UnmountSegment, UnmountClient, CloseSegment and UnmountClosed (the
// graceful unmount: the segment closed to allocations at once, unmounted at a leader-stamped
// deadline or when it holds nothing), PutStart, PutEnd, PutRevoke, UpsertStart, UpsertEnd,
// UpsertRevoke, the Batch forms, StartReplicaTask, EndReplicaTask, RevokeReplicaTask, CommitPuts,
// RemoveObject, EraseTokens, EraseGroup, ClearReplicas, EvictUnits (EvictTokens) and RevokeTokens,
// and of the sub-tables Tasks().Create, Fetch, Complete and Expire (the reaper's, beside
// RevokeTokens), Drains().Start, Cancel, ScheduleMoves and Finish, and Arenas().Grant and Retire,
// each with the leader's time and seed from the log entry. The leader additionally calls Get,
// Exist, BatchGet, Peek, ScanKeys, Prepare* (PrepareClear included), ClearMarks, ResetSoftState,
// the census (VisitHandles, Capture, Drains().Candidates, Tasks().Expired), and the Check* methods
// of the store and its sub-tables: read-only prechecks that run the predicate of the operation's
// apply and refuse only what it refuses in the state they read (the leader reads it after a read
// barrier, so the refusal is linearizable), so that the leader refuses such a request without a log
// entry.
package store
