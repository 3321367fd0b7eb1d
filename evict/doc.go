// Package evict is metad's eviction: the leader frees segment space (memory and NOF watermarks),
// tenant quota (a PutStart over quota) and stale writes (the reaper), and every eviction is a
// replicated command, so all nodes unlink exactly the same objects.
//
// # One kernel, three policies
//
// Memory watermark, NOF watermark and tenant quota differ only in which objects are candidates,
// what one weighs and how much to free (a spec); they share one kernel of seven steps, the RFC's
// eviction commit made replicated (ARCHITECTURE.md, "Eviction commit"):
//
//  1. Census. store.VisitHandles (VisitTenantHandles for a tenant) copies handles one route shard at
//     a time under that shard's read lock and hands them over in chunks of CensusChunk with no lock
//     held. Each handle is read lock-free: the immutable ObjectState, and the lease, mark and
//     lifecycle from the entry's atomic meta word.
//  2. Selection, with no lock held. A candidate is not hard-pinned, has no lease at now (its own, or
//     the new leader's lease floor), is not marked, has a COMPLETE replica of the tier and no
//     PROCESSING one. Soft-pinned candidates go to pass 2, or nowhere when AllowEvictSoftPinned is
//     off. Order: oldest lease first (a read leases until now + ttl, a PutEnd stamps its write
//     time: an object ranks by its last read plus the ttl or its last write, whichever is later,
//     so a block just written is not taken first), ties by tenant instance, then object (or
//     group) id: a total
//     order on integers, so the selection is deterministic and cheap. The selection keeps only the
//     oldest units that cover the target (and a quarter more as spares), at most RoundLimit of
//     them, pruning by a linear-time weighted quickselect as candidates arrive, so a census of a
//     million objects holds what a round can use; a larger target takes several rounds.
//  3. Units. A group member maps to its explicit group; the group is one unit (deduplicated),
//     a candidate only if every member is, ranked by its most recently leased member.
//  4. Reservation. For each batch the kernel takes a proposer slot (TryReserve) before it takes any
//     metadata lock. With none free, or when not the leader, the round stops holding nothing: no
//     lock is ever held while waiting for the replication pipeline.
//  5. Revalidate, then mark. Under the group's lock and then its members' in key order
//     (store.WithGroup; a singleton: store.WithToken) the unit must be what the census saw (tenant
//     instance, object ids and versions, the same member set) and still evictable at now (lease,
//     pins, lifecycle, PROCESSING, no mark). Then every member gets the unlink mark, under the same
//     locks: from that moment a linearizable Get waits for the outcome (store.ErrUnlinkPending;
//     the server asks again), so no reader can lease it between the check and the commit, and none
//     is told "not found" for an eviction that then fails. A Get that leased it before the check
//     makes the check fail. Locks are released
//     before proposing.
//  6. Propose. One Evict command carries the batch's tokens (object id and version), unit by unit
//     (unit_sizes), in columns (wire.ColumnsTo: a token costs its key and a few varints). Every
//     node applies store.EvictUnits: a unit is evicted only if every token still matches and, for
//     a group, names exactly its members; otherwise none of it is. So a write
//     (PutEnd, upsert) between mark and commit moves a version and saves that unit; an erase and
//     recreate under the same key has a new object id and survives; a group is never half evicted,
//     on any node. Apply reads no clock and no soft state: leases and marks decided only what the
//     leader proposed.
//  7. Clear and count. Once the proposal's outcome is known the marks are cleared through the
//     entries revalidation marked (store.ClearHandleMarks, no key lookup; evicted objects are
//     gone, the rest must be readable again), also when it certainly failed; metrics are
//     updated after every lock is released. When the outcome is unknown (the wait was cancelled,
//     or Raft could not say) and the node still leads, the marks stay: clearing them would let a
//     Get lease an object the entry may still evict. They are leader soft state, dropped by the
//     next term's ResetSoftState. EvictTenant waits for every outcome, so a cancelled request
//     never strands marks.
//
// # Policies
//
//   - Memory: MEMORY used/capacity above HighWatermark (0.90), or store.EvictionWanted (a MEMORY
//     placement found no room for an object that some MEMORY segment is large enough to hold; one
//     larger than every segment raises nothing, since no eviction could place it), until a memory
//     round completes or the tier's used bytes fall below what they were at the failure (memory
//     freed since, so the room the put lacked may be there: the call for a round is dropped,
//     metad_evict_flags_dropped_total). With ratio
//     EvictRatio (0.05), target = max(ratio, used - hwm + ratio)
//     and lower = max(target/2, used - hwm), as fractions of capacity. Pass 1 evicts unpinned units
//     until target bytes are freed; pass 2 evicts soft-pinned units, toward the same target, only if
//     pass 1 freed less than lower and AllowEvictSoftPinned.
//   - NOF: the same on the NOF tier with NOFHighWatermark and NOFEvictRatio.
//   - DISK and DFS: the same on the shared roots (DiskHighWatermark 0.95, DiskEvictRatio: a root's
//     size is its quota) and on the DFS pools (DFSHighWatermark, DFSEvictRatio). The order is the
//     kernel's, oldest lease first: an object's last read plus the ttl or its last write, so a file
//     that nobody reads goes in the order it was written (the oldest first) and the DFS extents go
//     least recently used first. Evicting drops only that tier's replicas; an object with no
//     replica left is erased.
//   - Offload on evict (Config.OffloadOnEvict, memory rounds with an offloading SSD registration):
//     an object its owner would offload is no candidate; the census ranks the oldest of them in a
//     selection of their own, the round proposes QueueOffload for them, then evicts their
//     redundant MEMORY replicas (an Evict with redundant set, store.Store.EvictRedundant: every
//     MEMORY replica but the one the offload copies from, the object never erased, a group member
//     alone) through steps 4 to 7, and pass 1 covers what is left of the target.
//   - Tenant quota: EvictTenant, called synchronously by the service (package service, which owns
//     the evictor) when a PutStart is over its tenant's quota, evicts that tenant's own MEMORY
//     replicas until the deficit of its quota is released, soft-pinned last.
//
// The reaper proposes RevokeExpired for writes PROCESSING longer than PutReleaseTimeout (600 s),
// and for the scheduled tasks PROCESSING longer than it since their fetch (apply ends them FAILED).
// It reads every object as a census does, every ReapInterval; while a drain makes progress it
// waits, up to three intervals.
//
// # Sharing the processor
//
// A drain of a million objects is seconds of CPU on the leader (censuses) and on every node
// (apply), and the foreground's reads wait on goroutine hand-offs (the read barrier, Raft's leader
// loop and heartbeats), each of which waits for a processor. So no eviction step holds one for
// long: the census yields after every CensusChunk handles (store.VisitHandles), commit after
// every 256 revalidations, apply after every 64 units (store.EvictUnits), the selection is sorted
// in pieces with yields between them, and its rank array is sized once from the object count, and
// grows, if ever, by a chunked copy (one large copy runs without a preemption point, and into
// memory fresh from the OS it can take long enough to hold a collector's stop-the-world waiting
// on it). Garbage is the other cost every node pays: the selection's storage is kept
// between the rounds of a drain (dropped when the loop goes idle), and apply reuses its token
// lists from one entry to the next.
//
// Most of what is left is waiting for memory: on a loaded store an object's entry and its state
// sit far apart, and reading them one object at a time misses the cache twice in a row per object.
// The census reads a chunk's states in passes (loadStates), commit reads a batch's objects before
// it locks them (touchUnits), and apply looks an Evict's keys up shard by shard
// (store.EvictUnits), so that the misses overlap. BenchmarkCensus and BenchmarkRound measure the
// kernel alone on such a store.
//
// # Leadership
//
// Run works only while the node is the leader. A new leader counts every object as leased for one
// lease ttl (store.ResetSoftState), and the evictor starts no round before that floor has passed.
// A batch whose marking overlapped a new term's ResetSoftState (the lease floor moved) is dropped
// before it is proposed.
//
// # Call sequence
//
// The package sits below package service: it proposes through the node (Node, FromHA) and settles
// its marks with ha.ProposeMarked, and knows nothing of the service. The service owns the evictor
// (service.Config.Evictor): it runs the loop, kicks it on every leadership change, and evicts for
// quota.
//
//	ev, err := evict.New(cfg, evict.FromHA(node, f.Store), registry, log) // f: the node's *fsm.FSM
//	// in the service (package service):
//	go ev.Run(ctx)  // in Service.Run, for the process's life
//	ev.Kick()       // in the leadership hook, on every leadership change
//	// on TENANT_QUOTA_EXCEEDED from PutStart, or over the quota with the reservations (at most twice):
//	freed, err := ev.EvictTenant(ctx, tenant, evict.QuotaDeficit(f.Store(), tenant, size*replicas))
package evict
