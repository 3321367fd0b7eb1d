package store

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"metad/store/alloc"
)

// Capture is a point-in-time copy of the replicated state, cheap to take: it holds pointers to the
// objects' immutable states, not copies. Take it where no replicated change runs concurrently (the
// FSM's Snapshot runs on the apply goroutine); then read it on any goroutine while the
// store moves on. Leader soft state (leases, marks) is not part of it.
type Capture struct {
	NextInstance uint64
	Epoch        uint64              // the store's state epoch
	Segments     []alloc.SegmentInfo // by id
	Tenants      []TenantCapture     // by name
	Tasks        []Task              // the scheduled tasks kept, by id
	LastTask     uint64              // the id the last scheduled task got
	Drains       []DrainJob          // the drain jobs kept, by id
	LastDrain    uint64              // the id the last drain job got
	Arenas       []Arena             // the allocation arenas, by id
	LastArena    uint64              // the id the last arena got

	pool []CapturedObject // backing storage of every tenant's Objects
}

// TenantCapture is one tenant of a Capture.
type TenantCapture struct {
	Name          string
	Instance      uint64
	Requested     uint64
	NextObjectID  uint64
	NextGroupID   uint64
	NextReplicaID uint64
	Groups        int
	Objects       []CapturedObject // in the directory's order; KeyOrder gives key order
}

// CapturedObject is one object of a Capture: its key, its state, and its explicit group (nil for a
// singleton). 24 bytes, so a 1M-object capture is one 24 MB slice.
type CapturedObject struct {
	Key   string
	State *ObjectState
	group *GroupEntry
}

// Group returns the object's explicit group id and numeric group id ("" and 0 for a singleton).
func (o *CapturedObject) Group() (string, uint64) {
	if o.group == nil {
		return "", 0
	}
	return o.group.name, o.group.id
}

// Capture takes a Capture of the replicated state: the census of every route shard under its read
// lock, copying only a key, a state pointer and a group pointer per object.
func (s *Store) Capture() *Capture { return s.CaptureInto(nil) }

// CaptureInto is Capture reusing buf's storage (a Capture that is no longer needed, see Recycle):
// a million-object capture then costs no fresh allocation on the apply goroutine.
func (s *Store) CaptureInto(buf *Capture) *Capture {
	var pool []CapturedObject
	if buf != nil {
		pool = buf.pool[:0]
	}
	c := &Capture{NextInstance: s.nextInstance.Load(), Epoch: s.epoch, Segments: s.segs.List()}
	c.Tasks, c.LastTask = s.tasks.List()
	c.Drains, c.LastDrain = s.drains.List()
	c.Arenas, c.LastArena = s.arenas.List(), s.arenas.Last()
	ts := s.tenants.List()
	total := 0
	for _, t := range ts {
		total += int(t.dir.Objects())
	}
	if cap(pool) < total {
		pool = make([]CapturedObject, 0, total+total/8)
	}
	for _, t := range ts {
		d := t.dir
		tc := TenantCapture{Name: t.name, Instance: t.instance, Requested: t.quota.requested.Load(), Groups: d.Groups()}
		tc.NextObjectID, tc.NextGroupID, tc.NextReplicaID = d.Counters()
		start := len(pool)
		pool = d.capture(pool)
		tc.Objects = pool[start:len(pool):len(pool)]
		c.Tenants = append(c.Tenants, tc)
	}
	c.pool = pool
	return c
}

// Recycle drops the capture's references to object states (so they can be collected) and keeps
// its storage for the next CaptureInto. The capture must not be used afterwards.
func (c *Capture) Recycle() *Capture {
	clear(c.pool)
	c.Tenants, c.Segments, c.Tasks, c.Drains, c.Arenas = nil, nil, nil, nil, nil
	return c
}

// capture copies the directory's objects, its route shards split over a few goroutines: Snapshot
// runs on the apply goroutine, so this is the part of a snapshot that holds up writes. Route maps
// change only on the apply path, so the shard sizes read first still hold while the shards are
// copied; if one does not (a caller broke that rule), the copy falls back to one goroutine.
func (d *GroupDirectory) capture(pool []CapturedObject) []CapturedObject {
	var off [routeShardCount + 1]int
	for i := range d.routes {
		sh := &d.routes[i]
		sh.mu.RLock()
		off[i+1] = off[i] + len(sh.m)
		sh.mu.RUnlock()
	}
	base := len(pool)
	pool = slices.Grow(pool, off[routeShardCount])
	out := pool[base : base+off[routeShardCount]]
	workers := min(runtime.GOMAXPROCS(0), 4)
	var next atomic.Int32
	var broken atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < routeShardCount; i = int(next.Add(1) - 1) {
				if !d.routes[i].copyInto(out[off[i]:off[i+1]]) {
					broken.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	if broken.Load() {
		pool = pool[:base]
		for i := range d.routes {
			pool = d.routes[i].appendTo(pool)
		}
		return pool
	}
	// Drop the slots of entries that were not active (none between applies).
	live := out[:0]
	for _, o := range out {
		if o.State != nil {
			live = append(live, o)
		}
	}
	clear(out[len(live):])
	return pool[:base+len(live)]
}

// copyInto fills dst with the shard's active objects; false if the shard holds more than dst.
func (sh *routeShard) copyInto(dst []CapturedObject) bool {
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	if len(sh.m) > len(dst) {
		return false
	}
	i := 0
	for k, e := range sh.m {
		if st := e.State(); st != nil && e.Life() == Active {
			dst[i] = CapturedObject{Key: k, State: st, group: e.group}
			i++
		}
	}
	return true
}

func (sh *routeShard) appendTo(out []CapturedObject) []CapturedObject {
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	for k, e := range sh.m {
		if st := e.State(); st != nil && e.Life() == Active {
			out = append(out, CapturedObject{Key: k, State: st, group: e.group})
		}
	}
	return out
}

// Objects returns the number of captured objects.
func (c *Capture) Objects() int {
	n := 0
	for _, t := range c.Tenants {
		n += len(t.Objects)
	}
	return n
}

// Groups returns the number of captured explicit groups.
func (c *Capture) Groups() int {
	n := 0
	for _, t := range c.Tenants {
		n += t.Groups
	}
	return n
}

// Builder rebuilds a store from a snapshot's records: segments first, then each tenant followed by
// its objects in ascending key order. Every check CheckInvariants makes holds by construction:
// extents are reserved in their segment's allocator (so they lie on a mounted segment of the right
// tier and never overlap, and used bytes add up), keys strictly ascend (no key twice), object ids
// are unique and below the counters, groups are built from their members, and quota is charged from
// the objects. So a snapshot that decodes but does not make sense is refused before it replaces
// anything, at O(1) checking cost per object. The fuzz test of the snapshot reader asserts that
// every accepted snapshot passes CheckInvariants.
type Builder struct {
	s       *Store
	tenant  *TenantState
	ids     idSet  // object ids seen for the current tenant
	last    string // last key of the current tenant (keys must ascend)
	nobj    int
	pending []*ObjectEntry // the current tenant's objects, published by flush
}

// NewBuilder starts an empty store of the given state epoch (no default tenant: the snapshot has its
// own tenants).
func NewBuilder(cfg Config, nextInstance, epoch uint64) (*Builder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := newEmpty(cfg, alloc.NewRegistry())
	s.nextInstance.Store(nextInstance)
	s.epoch = epoch
	return &Builder{s: s}, nil
}

// AddSegment mounts a segment with nothing allocated. A recorded segment may break a limit that
// did not exist when it was mounted (alloc.Registry.MountRecorded); its tier's capacity must still
// fit in 64 bits.
func (b *Builder) AddSegment(seg alloc.Segment) error {
	created, err := b.s.segs.MountRecorded(seg)
	if err != nil {
		return fmt.Errorf("segment %s: %w", seg.ID, err)
	}
	if !created {
		return fmt.Errorf("segment %s: listed twice", seg.ID)
	}
	return nil
}

// CloseSegment records that a segment added by AddSegment is closing (it takes no allocation)
// and, when unmountAt is not 0, the end of its graceful unmount (alloc.Registry.SetClosing,
// ScheduleUnmount). A deadline without closing is refused: the state cannot hold one.
func (b *Builder) CloseSegment(id alloc.ID, closing bool, unmountAt int64) error {
	switch {
	case unmountAt < 0 || (unmountAt != 0 && !closing):
		return fmt.Errorf("segment %s: unmount time %d with closing %t", id, unmountAt, closing)
	case unmountAt != 0:
		_, err := b.s.segs.ScheduleUnmount(id, unmountAt)
		return err
	case closing:
		return b.s.segs.SetClosing(id, true)
	}
	return nil
}

// AddTenant registers a tenant with its instance id, requested quota and id counters; its objects
// follow.
func (b *Builder) AddTenant(tc TenantCapture) error {
	if err := ValidateTenant(tc.Name); err != nil {
		return err
	}
	if tc.Instance == 0 || tc.Instance > b.s.nextInstance.Load() {
		return fmt.Errorf("tenant %q: instance %d not in 1..%d", tc.Name, tc.Instance, b.s.nextInstance.Load())
	}
	t := &TenantState{name: tc.Name, instance: tc.Instance, dir: newGroupDirectory()}
	t.quota.requested.Store(tc.Requested)
	t.dir.nextObjectID.Store(tc.NextObjectID)
	t.dir.nextGroupID.Store(tc.NextGroupID)
	t.dir.nextReplicaID.Store(tc.NextReplicaID)
	if !b.s.tenants.insert(t) {
		return fmt.Errorf("tenant %q: listed twice", tc.Name)
	}
	b.flush()
	b.tenant, b.ids, b.last, b.nobj = t, newIDSet(tc.NextObjectID), "", 0
	return nil
}

// flush publishes the current tenant's objects into route maps sized for them.
func (b *Builder) flush() {
	if b.tenant == nil {
		return
	}
	d := b.tenant.dir
	var per [routeShardCount][]*ObjectEntry
	for _, e := range b.pending {
		i := d.shardIndex(e.key)
		per[i] = append(per[i], e)
	}
	for i := range d.routes {
		m := make(map[string]*ObjectEntry, len(per[i]))
		for _, e := range per[i] {
			m[e.key] = e
		}
		d.routes[i].m = m
	}
	b.pending = b.pending[:0]
}

// AddObject adds one object of the current tenant (group "" and groupID 0 for a singleton). Keys
// must ascend.
func (b *Builder) AddObject(key, group string, groupID uint64, st *ObjectState) error {
	t := b.tenant
	if t == nil {
		return fmt.Errorf("object %q before any tenant", key)
	}
	if err := b.addObject(t, key, group, groupID, st); err != nil {
		return fmt.Errorf("tenant %q object %q: %w", t.name, key, err)
	}
	return nil
}

func (b *Builder) addObject(t *TenantState, key, group string, groupID uint64, st *ObjectState) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if key <= b.last && b.nobj > 0 {
		return fmt.Errorf("keys out of order")
	}
	d := t.dir
	switch {
	case st.ID == 0 || st.ID > d.nextObjectID.Load():
		return fmt.Errorf("object id %d not in 1..%d", st.ID, d.nextObjectID.Load())
	case st.Version == 0:
		return fmt.Errorf("version 0")
	case ValidateSize(st.Size) != nil:
		return fmt.Errorf("size %d", st.Size)
	case len(st.Replicas) == 0:
		return fmt.Errorf("no replica")
	case (group == "") != (groupID == 0) || ValidateGroup(group) != nil || groupID > d.nextGroupID.Load():
		return fmt.Errorf("group %q id %d", group, groupID)
	}
	if !b.ids.add(st.ID) {
		return fmt.Errorf("object id %d used twice", st.ID)
	}
	for i, r := range st.Replicas {
		if r.ID == 0 || r.ID > d.nextReplicaID.Load() || !r.Tier.Valid() ||
			(r.Status != Processing && r.Status != Complete) || r.Extent.Size != alloc.RoundUp(st.Size) {
			return fmt.Errorf("replica %d malformed: %+v", i, r)
		}
		info, ok := b.s.segs.Get(r.Extent.Segment)
		if !ok || info.Tier != r.Tier {
			return fmt.Errorf("replica %d on unknown segment %s or wrong tier", i, r.Extent.Segment)
		}
		if err := b.s.segs.Reserve(r.Extent); err != nil {
			return fmt.Errorf("replica %d extent: %w", i, err)
		}
	}
	if err := validTask(st); err != nil {
		return err
	}
	var g *GroupEntry
	if group != "" {
		d.catalogMu.Lock()
		g = d.groups[group]
		if g == nil {
			g = &GroupEntry{name: group, id: groupID}
			d.groups[group] = g
		}
		d.catalogMu.Unlock()
		if g.id != groupID {
			return fmt.Errorf("group %q has id %d and %d", group, g.id, groupID)
		}
	}
	e := &ObjectEntry{key: key, group: g}
	e.state.Store(st)
	e.setLifeLocked(Active)          // not yet published: no other goroutine can see e
	b.pending = append(b.pending, e) // keys ascend strictly, so no key repeats
	if g != nil {
		g.members = append(g.members, e)
		g.gen.Add(1)
	}
	d.objects.Add(1)
	b.s.tiers.change(nil, st)
	t.quota.charged.Add(st.MemoryBytes())
	b.last = key
	b.nobj++
	return nil
}

// Finish recomputes effective quotas, verifies the invariants and returns the store.
func (b *Builder) Finish() (*Store, error) {
	b.flush()
	b.s.recomputeQuotas()
	return b.s, nil
}

// idSet records which object ids a restore has seen: a bitset up to the tenant's id counter (ids
// never exceed it), a map beyond a size where the bitset would be wasteful.
type idSet struct {
	bits []uint64
	m    map[uint64]struct{}
}

func newIDSet(max uint64) idSet {
	if max <= 1<<30 {
		return idSet{bits: make([]uint64, max/64+1)}
	}
	return idSet{m: map[uint64]struct{}{}}
}

// add records id and reports whether it was new.
func (s *idSet) add(id uint64) bool {
	if s.bits != nil {
		w, b := id/64, uint64(1)<<(id%64)
		if w >= uint64(len(s.bits)) {
			return true // above the counter: refused by the caller's range check first
		}
		if s.bits[w]&b != 0 {
			return false
		}
		s.bits[w] |= b
		return true
	}
	if _, dup := s.m[id]; dup {
		return false
	}
	s.m[id] = struct{}{}
	return true
}

// validTask checks the invariants of st's replica task, if any (see ReplicaTask): a known kind, a
// client, a COMPLETE source and at least one target, each a distinct PROCESSING replica of st, and
// no other PROCESSING replica.
func validTask(st *ObjectState) error {
	task := st.Task
	if task == nil {
		return nil
	}
	if !task.Kind.Valid() || task.Client.IsZero() || (len(task.Targets) == 0) != (task.Kind == TaskOffload) {
		return fmt.Errorf("replica task malformed: kind %d, client %s, %d targets", task.Kind, task.Client, len(task.Targets))
	}
	seen := 0
	for _, r := range st.Replicas {
		switch {
		case r.ID == task.Source:
			if r.Status != Complete {
				return fmt.Errorf("replica task: source %d is not COMPLETE", r.ID)
			}
			seen++
		case task.IsTarget(r.ID):
			if r.Status != Processing {
				return fmt.Errorf("replica task: target %d is not PROCESSING", r.ID)
			}
			seen++
		case r.Status == Processing:
			return fmt.Errorf("replica task: replica %d is PROCESSING and no target", r.ID)
		}
	}
	if seen != 1+len(task.Targets) {
		return fmt.Errorf("replica task: source %d or targets %v not among the object's replicas", task.Source, task.Targets)
	}
	return nil
}
