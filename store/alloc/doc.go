// Package alloc is the segments-and-allocation part of the metad store: the
// registry of mounted segments, one range allocator per segment, replica
// placement, and the effective-quota computation of SEMANTICS section 6.
//
// # Role
//
// Clients mount segments (SEMANTICS section 3). Every replica of an object is
// an Extent [Offset, Offset+Size) inside one segment, relative to the
// segment's start (not its Base), with Size rounded up to Align (64) bytes.
// The store calls this package from the Raft apply path: PutStart calls
// Place, erase/evict/revoke call Free, unmount calls Unmount and drops the
// replicas that lived in the segment, and snapshot restore calls Mount for
// each segment and then Reserve for each recorded extent. The package knows
// nothing of Raft, gRPC or protobuf.
//
// # Determinism
//
// The same code runs on every replica, so every result is a function of the
// registry state and the arguments only: no clock, no global random source,
// and no map iteration reaches a result (maps are used for lookups; ordered
// views are kept in sorted slices and btrees). Randomness comes from
// PlaceRequest.Seed, which the leader writes into the command, through a
// splitmix64 generator written out in this package so the sequence never
// changes with the Go version. Quotas use exact integer arithmetic.
//
// # Invariants
//
//   - A RangeAllocator's free spans are disjoint, aligned, inside the segment
//     and coalesced (no two adjacent); free plus used bytes equal capacity.
//     Free fails, changing nothing, on any range that is not entirely
//     allocated; Reserve fails, changing nothing, on any range that is not
//     entirely free. So an extent can never be handed out twice.
//   - Registry.Capacity(t) and Registry.Used(t) equal the sums over the
//     mounted segments of tier t (kept incrementally, checked by the tests).
//   - A tier's total capacity fits in 64 bits: a mount that would take it past
//     2^64-1 is refused (ErrCapacityOverflow), changing nothing. Every other
//     sum of bytes is bounded by it (used <= capacity, free <= capacity) and
//     goes through the checked helpers of checked.go, which panic rather than
//     wrap: a total out of range means the state is broken.
//   - A segment ID has one owner; mounting it again by the same owner with
//     identical fields is a no-op.
//   - Mount applies ValidateSegment (SEMANTICS section 1, the one definition
//     of a segment's limits). MountRecorded, for segments the replicated state
//     already holds (snapshot restore, replay of log entries written before a
//     limit existed), checks only what the registry's soundness needs.
//   - Place is all or nothing: on error nothing was allocated.
//
// # Allocation
//
// Best fit: Alloc takes the smallest free span that holds the rounded size,
// the lowest offset among equal sizes, and carves from the span's start.
// Free spans are kept in two github.com/google/btree trees, by offset (for
// coalescing and range checks) and by (size, offset) (for best fit), so
// Alloc, Free and Reserve are O(log n) in the number of free spans.
//
// # Placement order
//
// Place puts every replica of one object in a distinct segment. For each
// tier asked (MEMORY always, NOF when NOF > 0):
//
//  1. The request's Preferred segments that are mounted and of that tier,
//     in the given order; duplicates are ignored. A writer's preferred host
//     reaches Place this way: the leader turns it into the host's segments
//     (HostSegments, by HostOf of each endpoint) after the ones the request
//     names, and the command carries them as preferred segments.
//  2. Then the tier's other segments in strategy order:
//     - random: the tier's segments sorted by ID bytes, permuted by the
//     forward Fisher-Yates shuffle (for i in 0..n-2: j = i + below(n-i);
//     swap p[i], p[j]) where below(m) is Lemire's unbiased multiply-shift
//     on a splitmix64 stream seeded with Seed. Each tier uses a fresh
//     stream seeded with Seed. The shuffle covers all of the tier's
//     segments; the preferred ones already tried are skipped, not removed
//     before shuffling.
//     - free_ratio_first: descending free/size, compared exactly as
//     free_a*size_b vs free_b*size_a in 128 bits, ties by lower ID.
//
// A closing segment (below) is never a candidate, preferred or not; it is
// skipped where it falls in the order, so the others keep their order.
//
// Each replica takes the next candidate whose allocator can hold the size; a
// candidate that cannot is not retried (nothing is freed during a Place).
// A tier that gets no replica fails the call with a *NoSpaceError (matching
// ErrNoSpace) naming the tier and saying whether some segment of the tier is
// large enough for the object (NoSpaceError.Fits: whether freeing space could
// help), and the extents already allocated by the call are freed. Fewer replicas
// than asked is success; Placement.Short counts the shortfall.
//
// # Closing segments
//
// A segment is open (takes allocations) or closing: SetClosing(id, true) stops
// new allocations in it at once, and its existing extents stay as they are (the
// replicas in them stay readable; Free and Reserve work as before). A graceful
// unmount closes the segment with a deadline (ScheduleUnmount: the earlier
// deadline wins, and a segment with one stays closing until Unmount); a drain
// may close the segments it empties through SetClosing. The flag is replicated state, set only by
// commands the store applies and recorded in snapshots (SegmentInfo.Closing,
// UnmountAt). Capacity and Used keep counting a closing segment, so effective
// quotas change only when it is unmounted (SEMANTICS section 6 recomputes them
// on mount and unmount); Allocatable leaves it out, and the eviction watermark
// is measured against Allocatable: free space in a closing segment is no room
// for a new write. A closing segment counts neither in NoSpaceError.Segments
// nor in its Fits.
//
// # Locking
//
// RangeAllocator is not safe for concurrent use. Registry is: one mutex,
// "the allocator's own lock", guards all of it. It is a leaf outside the
// store's lock order: callers never hold any other metadata lock while
// calling the Registry, and the Registry acquires nothing while holding it.
// Each Registry method is atomic.
//
// # Errors
//
// Errors are the ErrXxx sentinels of errors.go, always wrapped with context;
// match them with errors.Is.
package alloc
