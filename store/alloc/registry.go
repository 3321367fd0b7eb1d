package alloc

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Segment is an immutable value, safe to copy and share. It is what a client
// mounts: a region of its memory (or NOF device) of Size bytes at address
// Base, reachable at Endpoint. Extents inside it are relative to its start,
// not to Base.
type Segment struct {
	ID       ID
	Name     string
	Base     uint64
	Size     uint64
	Endpoint string
	Tier     Tier
	Owner    ID // the client that mounted it
	// Offload: a LOCAL_DISK segment's owner takes offload tasks (always false for other tiers).
	Offload bool
}

// SegmentInfo is an immutable snapshot value, safe to share: a segment with
// its allocation state at the time of the call.
type SegmentInfo struct {
	Segment
	Used      uint64 // allocated bytes
	FreeSpans int    // number of free spans (1 when empty, 0 when full)
	// Closing: the segment takes no new allocation (SetClosing, ScheduleUnmount).
	Closing bool
	// UnmountAt is the leader time (unix ns) at which the segment's graceful unmount ends, 0 when
	// none is scheduled (ScheduleUnmount). A segment with one is Closing.
	UnmountAt int64
}

// Extent is an immutable value, safe to share. It is one replica's place:
// [Offset, Offset+Size) inside Segment, relative to the segment's start.
// Size is the allocated (rounded) size.
type Extent struct {
	Segment ID
	Offset  uint64
	Size    uint64
}

// Registry is safe for concurrent use. It holds every mounted segment and its
// RangeAllocator behind one mutex, "the allocator's own lock".
//
// Lock order: Registry.mu is a leaf outside the store's lock order. Callers
// never hold another metadata lock (registry shard, route, group catalog,
// group, object) while calling a Registry method, and the Registry calls out
// to nothing while holding mu. Every method takes mu for its whole duration,
// so each call is atomic: a Place either allocates all its extents or none.
type Registry struct {
	// mu guards every field below it. It is a leaf lock (see above):
	// nothing else is acquired while it is held.
	mu sync.Mutex

	// segs indexes segments by ID. Only used for lookups: nothing iterates
	// it, so map order never reaches a result.
	segs map[ID]*segment
	// all holds every segment sorted by ID bytes.
	all []*segment
	// byTier[t] holds the segments of tier t sorted by ID bytes.
	byTier [NumTiers][]*segment
	// byOwner maps a client to its segment IDs, sorted (lookups only).
	byOwner map[ID][]ID
	// capacity[t] and used[t] are the sums of Size and allocated bytes
	// over the mounted segments of tier t, kept incrementally.
	capacity [NumTiers]uint64
	used     [NumTiers]uint64
	// closing[t] counts the closing segments of tier t.
	closing [NumTiers]int
	// epoch counts Place calls; a segment whose mark equals the current
	// epoch has already been tried by the running Place.
	epoch uint64

	// descs maps ID to descriptor for lock-free reads (Describe): the read
	// path names each replica's segment endpoint and base without taking mu.
	// Replaced, never changed, under mu by Mount and Unmount.
	descs atomic.Pointer[map[ID]Segment]
	// disks maps an owner to its LOCAL_DISK segment, offloaders counts the mounted segments with
	// Offload set, and roots the DISK segments; all replaced with descs.
	disks      atomic.Pointer[map[ID]Segment]
	offloaders atomic.Int64
	roots      atomic.Int64
}

// publishDescsLocked rebuilds the lock-free descriptor map, the owners' LOCAL_DISK segments and
// the offloaders' count (mu held).
func (r *Registry) publishDescsLocked() {
	m := make(map[ID]Segment, len(r.all))
	disks := map[ID]Segment{}
	offloaders, roots := int64(0), int64(0)
	for _, seg := range r.all {
		m[seg.info.ID] = seg.info
		if seg.info.Tier == TierDisk {
			roots++
		}
		if seg.info.Tier == TierLocalDisk {
			disks[seg.info.Owner] = seg.info
		}
		if seg.info.Offload {
			offloaders++
		}
	}
	r.descs.Store(&m)
	r.disks.Store(&disks)
	r.offloaders.Store(offloaders)
	r.roots.Store(roots)
}

// LocalDiskOf returns the LOCAL_DISK segment of owner, without the registry's lock (no hash of
// the owner's id, as LocalDiskID computes, on the put and census paths that ask).
func (r *Registry) LocalDiskOf(owner ID) (Segment, bool) {
	m := r.disks.Load()
	if m == nil {
		return Segment{}, false
	}
	s, ok := (*m)[owner]
	return s, ok
}

// Offloaders returns how many LOCAL_DISK segments take offload tasks, without the registry's lock:
// a put's completion looks for an offload only when some do.
func (r *Registry) Offloaders() int64 { return r.offloaders.Load() }

// Roots returns how many DISK segments (shared roots) are mounted, without the registry's lock: a
// reserved put asks whether the log would have placed a DISK replica only when some are.
func (r *Registry) Roots() int64 { return r.roots.Load() }

// Describe returns a mounted segment's descriptor without taking the
// registry's lock.
func (r *Registry) Describe(id ID) (Segment, bool) {
	m := r.descs.Load()
	if m == nil {
		return Segment{}, false
	}
	s, ok := (*m)[id]
	return s, ok
}

// segment is one mounted segment; all fields are guarded by Registry.mu.
type segment struct {
	info      Segment
	alloc     *RangeAllocator
	mark      uint64
	closing   bool   // takes no new allocation
	unmountAt int64  // leader unix ns at which its graceful unmount ends; 0: none (then closing may be either)
	host      string // HostOf(info.Endpoint), kept for HostSegments
}

func (s *segment) infoLocked() SegmentInfo {
	return SegmentInfo{Segment: s.info, Used: s.alloc.Used(), FreeSpans: s.alloc.NumFreeSpans(),
		Closing: s.closing, UnmountAt: s.unmountAt}
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{segs: make(map[ID]*segment), byOwner: make(map[ID][]ID)}
}

// Limits of a segment (SEMANTICS section 1). A size is also a non-zero multiple of Align, so the
// smallest segment is Align (64) bytes.
const (
	MaxSegmentSize    = uint64(1) << 48 // bytes
	MaxSegmentNameLen = 256             // bytes
	MaxEndpointLen    = 1024            // bytes
)

// SegmentError is a segment refused by a mount: Field names the field at fault as the API spells
// it ("segment.size"), Why says what is wrong, and Err is ErrInvalidSegment or
// ErrCapacityOverflow (errors.Is matches it).
type SegmentError struct {
	Field string
	Why   string
	Err   error
}

func (e *SegmentError) Error() string { return e.Field + ": " + e.Why }
func (e *SegmentError) Unwrap() error { return e.Err }

func invalidSegment(field, format string, args ...any) error {
	return &SegmentError{Field: "segment." + field, Why: fmt.Sprintf(format, args...), Err: ErrInvalidSegment}
}

// ValidateSegment checks a segment to mount against SEMANTICS section 1: non-zero ID and Owner,
// Base and Size non-zero and Align-aligned (Base zero for a segment of a tier that is not Addressed), Size at most
// MaxSegmentSize, Base+Size not wrapping, Tier valid, Name 1..MaxSegmentNameLen and Endpoint 1..MaxEndpointLen bytes with no byte below
// 0x20. It is the one definition of these rules: Mount applies it, and the server checks a request
// with it before proposing. The error is a *SegmentError wrapping ErrInvalidSegment.
func ValidateSegment(s Segment) error {
	if err := validateShape(s); err != nil {
		return err
	}
	if s.Size > MaxSegmentSize {
		return invalidSegment("size", "%d over %d (2^48)", s.Size, MaxSegmentSize)
	}
	if err := validateLabel("name", s.Name, MaxSegmentNameLen); err != nil {
		return err
	}
	return validateLabel("endpoint", s.Endpoint, MaxEndpointLen)
}

// validateShape checks what the registry's own soundness needs (non-zero ids, alignment, no
// wrap, a valid tier) and none of the limits of ValidateSegment: it is what MountRecorded applies.
func validateShape(s Segment) error {
	switch {
	case s.ID.IsZero():
		return invalidSegment("id", "zero")
	case s.Owner.IsZero():
		return invalidSegment("owner", "zero")
	case !s.Tier.Valid():
		return invalidSegment("tier", "%s, want MEMORY, NOF, LOCAL_DISK, DISK or DFS", s.Tier)
	case !s.Tier.Addressed() && s.Base != 0:
		return invalidSegment("base", "%#x, want 0 for a %s segment (files, not an address range)", s.Base, s.Tier)
	case s.Base == 0 && s.Tier.Addressed():
		return invalidSegment("base", "zero")
	case s.Base%Align != 0:
		return invalidSegment("base", "%#x not %d-byte aligned", s.Base, Align)
	case s.Size == 0:
		return invalidSegment("size", "zero")
	case s.Size%Align != 0:
		return invalidSegment("size", "%d not %d-byte aligned", s.Size, Align)
	case s.Base+s.Size < s.Base:
		return invalidSegment("size", "base %#x + size %d wraps the address space", s.Base, s.Size)
	case s.Tier == TierLocalDisk && s.ID != LocalDiskID(s.Owner):
		return invalidSegment("id", "%s is not the owner's local disk id %s", s.ID, LocalDiskID(s.Owner))
	case s.Offload && s.Tier != TierLocalDisk:
		return invalidSegment("offload", "set on a %s segment; only a LOCAL_DISK one takes offload tasks", s.Tier)
	}
	return nil
}

// validateLabel checks a segment's name or endpoint: 1..limit bytes, no byte below 0x20.
func validateLabel(field, v string, limit int) error {
	if len(v) == 0 || len(v) > limit {
		return invalidSegment(field, "length %d not in 1..%d", len(v), limit)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 {
			return invalidSegment(field, "control byte 0x%02x at %d", v[i], i)
		}
	}
	return nil
}

// Mount adds s with an empty allocator. Mounting the same ID again by the same owner with
// identical fields is a no-op returning created=false. It fails with ErrInvalidSegment (see
// ValidateSegment), ErrCapacityOverflow if the tier's total capacity would pass 2^64-1,
// ErrSegmentOwned if another owner holds the ID, or ErrSegmentConflict if the same owner holds it
// with different fields; nothing changes on error.
func (r *Registry) Mount(s Segment) (created bool, err error) {
	if err := ValidateSegment(s); err != nil {
		return false, err
	}
	return r.mount(s)
}

// MountRecorded is Mount for a segment the replicated state already holds, which may break a limit
// that did not exist when it was mounted: snapshot restore and the replay of log entries written
// before the limit. It checks only what the registry's soundness needs (validateShape, and that
// the tier's total capacity does not overflow), with Mount's errors and idempotence.
func (r *Registry) MountRecorded(s Segment) (created bool, err error) {
	if err := validateShape(s); err != nil {
		return false, err
	}
	return r.mount(s)
}

// CheckMount returns the error Mount(s) would return now, changing nothing: the leader refuses a
// mount from its applied state before proposing it.
func (r *Registry) CheckMount(s Segment) error {
	if err := ValidateSegment(s); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _, err := r.checkMountLocked(s)
	return err
}

// checkMountLocked decides a mount of a validated s (mu held): exists reports an identical
// mount (a no-op), capacity is the tier's total after a new mount.
func (r *Registry) checkMountLocked(s Segment) (exists bool, capacity uint64, err error) {
	if old, ok := r.segs[s.ID]; ok {
		if err := remountErr(old.info, s); err != nil {
			return false, 0, err
		}
		return true, 0, nil
	}
	capacity, ok := add64(r.capacity[s.Tier], s.Size)
	if !ok {
		return false, 0, &SegmentError{Field: "segment.size", Err: ErrCapacityOverflow,
			Why: fmt.Sprintf("%d bytes would overflow the total capacity of tier %s (%d bytes mounted)", s.Size, s.Tier, r.capacity[s.Tier])}
	}
	return false, capacity, nil
}

// mount adds a validated s (Mount, MountRecorded).
func (r *Registry) mount(s Segment) (created bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	exists, capacity, err := r.checkMountLocked(s)
	if err != nil || exists {
		return false, err
	}
	seg := &segment{info: s, alloc: NewRangeAllocator(s.Size), host: HostOf(s.Endpoint)}
	r.segs[s.ID] = seg
	r.all = insertSorted(r.all, seg)
	r.byTier[s.Tier] = insertSorted(r.byTier[s.Tier], seg)
	ids := r.byOwner[s.Owner]
	i, _ := slices.BinarySearchFunc(ids, s.ID, Compare)
	r.byOwner[s.Owner] = slices.Insert(ids, i, s.ID)
	r.capacity[s.Tier] = capacity
	r.publishDescsLocked()
	return true, nil
}

// remountErr is Mount's verdict on s when old is mounted under its ID: ErrSegmentOwned if another
// owner holds it, ErrSegmentConflict if the same owner holds it with other fields, nil (a no-op)
// if it is the same segment.
func remountErr(old, s Segment) error {
	switch {
	case old.Owner != s.Owner:
		return fmt.Errorf("mount segment %s by client %s: owned by client %s: %w", s.ID, s.Owner, old.Owner, ErrSegmentOwned)
	case old != s:
		return fmt.Errorf("mount segment %s by client %s: %w", s.ID, s.Owner, ErrSegmentConflict)
	}
	return nil
}

// Unmount forgets the segment and its allocator and returns it. The caller
// drops the replicas that lived there. ErrSegmentNotFound if not mounted.
func (r *Registry) Unmount(id ID) (Segment, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seg, ok := r.segs[id]
	if !ok {
		return Segment{}, fmt.Errorf("unmount segment %s: %w", id, ErrSegmentNotFound)
	}
	t := seg.info.Tier
	delete(r.segs, id)
	r.all = removeSorted(r.all, id)
	r.byTier[t] = removeSorted(r.byTier[t], id)
	ids := r.byOwner[seg.info.Owner]
	if i, found := slices.BinarySearchFunc(ids, id, Compare); found {
		ids = slices.Delete(ids, i, i+1)
	}
	if len(ids) == 0 {
		delete(r.byOwner, seg.info.Owner)
	} else {
		r.byOwner[seg.info.Owner] = ids
	}
	r.capacity[t] = mustSub("tier capacity", r.capacity[t], seg.info.Size)
	r.used[t] = mustSub("tier used bytes", r.used[t], seg.alloc.Used())
	if seg.closing {
		r.closing[t]--
	}
	r.publishDescsLocked()
	return seg.info, nil
}

// SetClosing opens or closes a segment to new allocations. A closing segment keeps its extents
// (its replicas stay readable, Free and Reserve work on it as before) but Place never allocates in
// it, even when a request prefers it; it counts in Capacity and Used but not in Allocatable.
// Closing a closing segment, or opening an open one, changes nothing. A segment whose graceful
// unmount is scheduled (ScheduleUnmount) stays closing: SetClosing(id, false) leaves it so, and
// only Unmount ends it. ErrSegmentNotFound if not mounted.
func (r *Registry) SetClosing(id ID, closing bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	seg, ok := r.segs[id]
	if !ok {
		return fmt.Errorf("close segment %s: %w", id, ErrSegmentNotFound)
	}
	if !closing && seg.unmountAt != 0 {
		return nil
	}
	r.setClosingLocked(seg, closing)
	return nil
}

func (r *Registry) setClosingLocked(seg *segment, closing bool) {
	if seg.closing == closing {
		return
	}
	seg.closing = closing
	if closing {
		r.closing[seg.info.Tier]++
	} else {
		r.closing[seg.info.Tier]--
	}
}

// ScheduleUnmount closes a segment (SetClosing) and records at (leader unix ns, > 0) as the end of
// its graceful unmount; when one is scheduled already, the earlier of the two stays. It returns
// the time now recorded. The registry unmounts nothing itself: the store does, through the log.
// ErrSegmentNotFound if not mounted, ErrInvalidRequest for at <= 0; nothing changes on error.
func (r *Registry) ScheduleUnmount(id ID, at int64) (int64, error) {
	if at <= 0 {
		return 0, fmt.Errorf("schedule unmount of segment %s at %d: %w", id, at, ErrInvalidRequest)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	seg, ok := r.segs[id]
	if !ok {
		return 0, fmt.Errorf("schedule unmount of segment %s: %w", id, ErrSegmentNotFound)
	}
	r.setClosingLocked(seg, true)
	if seg.unmountAt == 0 || at < seg.unmountAt {
		seg.unmountAt = at
	}
	return seg.unmountAt, nil
}

// Fits reports whether some open segment of tier t has a free span of RoundUp(size) bytes: whether
// a placement on the tier could take an extent of that size now.
func (r *Registry) Fits(t Tier, size uint64) bool {
	if !t.Valid() {
		return false
	}
	size = RoundUp(size)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, seg := range r.byTier[t] {
		if !seg.closing && seg.alloc.Largest() >= size {
			return true
		}
	}
	return false
}

// Allocatable returns the summed Size and allocated bytes of the segments of tier t that take
// allocations (not closing): what Place can use. Without closing segments it equals
// (Capacity(t), Used(t)).
func (r *Registry) Allocatable(t Tier) (capacity, used uint64) {
	if !t.Valid() {
		return 0, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	capacity, used = r.capacity[t], r.used[t]
	if r.closing[t] == 0 {
		return capacity, used
	}
	for _, seg := range r.byTier[t] {
		if seg.closing {
			capacity = mustSub("tier capacity", capacity, seg.info.Size)
			used = mustSub("tier used bytes", used, seg.alloc.Used())
		}
	}
	return capacity, used
}

// Get returns the segment and its allocation state.
func (r *Registry) Get(id ID) (SegmentInfo, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seg, ok := r.segs[id]
	if !ok {
		return SegmentInfo{}, false
	}
	return seg.infoLocked(), true
}

// Len returns the number of mounted segments.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.all)
}

// List returns every mounted segment sorted by ID bytes.
func (r *Registry) List() []SegmentInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]SegmentInfo, len(r.all))
	for i, seg := range r.all {
		out[i] = seg.infoLocked()
	}
	return out
}

// SegmentsOf returns the IDs of the segments mounted by owner, sorted.
func (r *Registry) SegmentsOf(owner ID) []ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.byOwner[owner])
}

// FreeSpans returns a copy of the segment's free spans sorted by offset.
func (r *Registry) FreeSpans(id ID) ([]Span, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seg, ok := r.segs[id]
	if !ok {
		return nil, false
	}
	return seg.alloc.FreeSpans(), true
}

// Capacity returns the summed Size of the mounted segments of tier t (0 for
// an invalid tier). For TierMemory this is the quota capacity of SEMANTICS
// section 6.
func (r *Registry) Capacity(t Tier) uint64 {
	if !t.Valid() {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.capacity[t]
}

// Used returns the allocated bytes summed over the mounted segments of tier t
// (0 for an invalid tier).
func (r *Registry) Used(t Tier) uint64 {
	if !t.Valid() {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.used[t]
}

// Free releases an extent. ErrSegmentNotFound if its segment is no longer
// mounted (the caller ignores that case: the space went with the segment);
// otherwise the allocator's error (ErrNotAllocated), with nothing changed.
func (r *Registry) Free(e Extent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.freeLocked(e)
}

// FreeIfMounted releases an extent as Free does, except that an extent of a segment no longer
// mounted is no error and costs no error value: a segment's unmount drops a replica on it from
// every object, and those frees are nothing to do.
func (r *Registry) FreeIfMounted(e Extent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.segs[e.Segment]; !ok {
		return nil
	}
	return r.freeLocked(e)
}

// FreeMany releases extents as Free would one at a time, in one pass: under one
// lock, sorted by segment and offset (es is sorted in place), each maximal
// run of adjacent extents of a segment freed as one range. A run of neighbours
// (objects allocated together and evicted together) then costs its allocator
// one tree update instead of one per extent. The free space afterwards is the
// same as after freeing each in turn, since an allocator's free spans are a
// function of its free bytes. Extents of segments no longer mounted are
// skipped (Free's callers ignore ErrSegmentNotFound). On any other error it
// returns the error of the first extent whose own Free fails, as Free reports
// it; the runs before it have been freed, so the caller must treat the state
// as broken.
func (r *Registry) FreeMany(es []Extent) error {
	slices.SortFunc(es, func(a, b Extent) int {
		if c := Compare(a.Segment, b.Segment); c != 0 {
			return c
		}
		return cmp.Compare(a.Offset, b.Offset)
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	for lo := 0; lo < len(es); {
		first := es[lo]
		hi, end := lo+1, first.Offset+RoundUp(first.Size)
		if mergeable(first, first.Segment, first.Offset) { // only a valid extent starts a run
			for hi < len(es) && mergeable(es[hi], first.Segment, end) {
				end += RoundUp(es[hi].Size)
				hi++
			}
		}
		seg, ok := r.segs[first.Segment]
		switch {
		case !ok:
		case hi-lo == 1 || seg.alloc.Free(first.Offset, end-first.Offset) != nil:
			// One extent, or a run that cannot be freed whole: free one by one, which names
			// the extent at fault (Free changes nothing when it fails).
			for _, e := range es[lo:hi] {
				if err := r.freeLocked(e); err != nil {
					return err
				}
			}
		default:
			r.used[seg.info.Tier] = mustSub("tier used bytes", r.used[seg.info.Tier], end-first.Offset)
		}
		lo = hi
	}
	return nil
}

// maxRun bounds the extent sizes FreeMany merges, so that a run's end cannot
// wrap (a larger size is freed on its own and fails there).
const maxRun = 1 << 62

// mergeable reports whether e continues a run of segment seg that ends at end.
func mergeable(e Extent, seg ID, end uint64) bool {
	return e.Segment == seg && e.Offset == end && e.Size > 0 && e.Size <= maxRun && end+RoundUp(e.Size) > end
}

// Reserve marks an extent used; snapshot restore mounts the segments and then
// reserves every recorded extent. ErrSegmentNotFound or ErrNotFree, with
// nothing changed.
func (r *Registry) Reserve(e Extent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	seg, ok := r.segs[e.Segment]
	if !ok {
		return fmt.Errorf("reserve extent in segment %s: %w", e.Segment, ErrSegmentNotFound)
	}
	if err := seg.alloc.Reserve(e.Offset, e.Size); err != nil {
		return fmt.Errorf("segment %s: %w", e.Segment, err)
	}
	r.used[seg.info.Tier] = mustAdd("tier used bytes", r.used[seg.info.Tier], RoundUp(e.Size))
	return nil
}

func (r *Registry) freeLocked(e Extent) error {
	seg, ok := r.segs[e.Segment]
	if !ok {
		return fmt.Errorf("free extent in segment %s: %w", e.Segment, ErrSegmentNotFound)
	}
	if err := seg.alloc.Free(e.Offset, e.Size); err != nil {
		return fmt.Errorf("segment %s: %w", e.Segment, err)
	}
	r.used[seg.info.Tier] = mustSub("tier used bytes", r.used[seg.info.Tier], RoundUp(e.Size))
	return nil
}

// Clone returns a deep copy: later changes to either registry do not affect
// the other. Allocators are cloned copy-on-write, so this is O(segments).
func (r *Registry) Clone() *Registry {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &Registry{
		segs:     make(map[ID]*segment, len(r.segs)),
		all:      make([]*segment, len(r.all)),
		byOwner:  make(map[ID][]ID, len(r.byOwner)),
		capacity: r.capacity,
		used:     r.used,
		closing:  r.closing,
		epoch:    r.epoch,
	}
	for i, seg := range r.all {
		cs := &segment{info: seg.info, alloc: seg.alloc.Clone(), mark: seg.mark, closing: seg.closing, unmountAt: seg.unmountAt, host: seg.host}
		c.all[i] = cs
		c.segs[cs.info.ID] = cs
		c.byTier[cs.info.Tier] = append(c.byTier[cs.info.Tier], cs)
	}
	for owner, ids := range r.byOwner { // builds a map; order does not matter
		c.byOwner[owner] = slices.Clone(ids)
	}
	c.publishDescsLocked()
	return c
}

func insertSorted(list []*segment, seg *segment) []*segment {
	i, _ := slices.BinarySearchFunc(list, seg.info.ID, cmpSegmentID)
	return slices.Insert(list, i, seg)
}

func removeSorted(list []*segment, id ID) []*segment {
	i, found := slices.BinarySearchFunc(list, id, cmpSegmentID)
	if !found {
		return list
	}
	return slices.Delete(list, i, i+1)
}

func cmpSegmentID(s *segment, id ID) int { return Compare(s.info.ID, id) }

// AllocIn allocates RoundUp(size) bytes in segment id, best fit as RangeAllocator.Alloc does, for
// an allocation arena (store.ArenaTable.Grant). A closing segment takes none. ErrSegmentNotFound,
// ErrInvalidRequest (size 0, or the segment closing) or ErrNoSpace, with nothing changed.
func (r *Registry) AllocIn(id ID, size uint64) (Extent, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seg, ok := r.segs[id]
	if !ok {
		return Extent{}, fmt.Errorf("allocate in segment %s: %w", id, ErrSegmentNotFound)
	}
	if size == 0 || seg.closing {
		return Extent{}, fmt.Errorf("allocate %d bytes in segment %s (closing %v): %w", size, id, seg.closing, ErrInvalidRequest)
	}
	off, ok := seg.alloc.Alloc(size)
	if !ok {
		return Extent{}, fmt.Errorf("allocate %d bytes in segment %s: %w", size, id, ErrNoSpace)
	}
	need := RoundUp(size)
	r.used[seg.info.Tier] = mustAdd("tier used bytes", r.used[seg.info.Tier], need)
	return Extent{Segment: id, Offset: off, Size: need}, nil
}
