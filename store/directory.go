package store

import (
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
)

// routeShardCount is the number of route shards per tenant directory. A shard is a leaf lock held for
// one map read or write, so its count bounds only how many unrelated lookups of one tenant share a
// cache line and how large one census chunk is, never how long an object waits for another.
const routeShardCount = 64

var routeSeed = maphash.MakeSeed() // shard choice is process-local layout; it never reaches state

// routeShard maps keys to entries. mu is a leaf lock: nothing else is acquired while it is held.
type routeShard struct {
	mu sync.RWMutex
	m  map[string]*ObjectEntry // guarded by mu
	_  [32]byte                // keep neighbouring shards' locks off one cache line
}

// groupLife is the lifecycle of a GroupEntry: a group is removed when its last member leaves or when
// RemoveGroup erases it; a creator that finds a removed group takes a fresh one from the catalog.
type groupLife uint8

const (
	groupActive groupLife = iota
	groupRemoved
)

// GroupEntry is one explicit group of a tenant. Concurrency contract: name and id are immutable; mu
// guards life and members; gen and leasedGen are atomics written under mu, so a reader
// can see that the group gained a member since the last lease refresh without taking mu. Lock order: a group's mu before any member's mu.
type GroupEntry struct {
	name string
	id   uint64

	mu      sync.Mutex
	life    groupLife
	members []*ObjectEntry // unordered; a member leaves by swap-remove

	gen       atomic.Uint64 // +1 each time a member joins (written under mu)
	leasedGen atomic.Uint64 // gen at the last group-wide lease refresh (written under mu)
}

// Name returns the group id as the client named it.
func (g *GroupEntry) Name() string { return g.name }

// ID returns the group's numeric id (from the tenant's counter).
func (g *GroupEntry) ID() uint64 { return g.id }

// removeMemberLocked drops e from the member list (g.mu held). It reports whether the group is now
// empty.
func (g *GroupEntry) removeMemberLocked(e *ObjectEntry) bool {
	if i := slices.Index(g.members, e); i >= 0 {
		last := len(g.members) - 1
		g.members[i] = g.members[last]
		g.members[last] = nil
		g.members = g.members[:last]
	}
	return len(g.members) == 0
}

// sortedMembersLocked returns the members in canonical (key) order, the order in which a group
// transaction locks them.
func (g *GroupEntry) sortedMembersLocked() []*ObjectEntry {
	ms := slices.Clone(g.members)
	slices.SortFunc(ms, func(a, b *ObjectEntry) int { return compareKeys(a.key, b.key) })
	return ms
}

func compareKeys(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// GroupDirectory is one tenant's objects and groups: route shards (key -> entry), the group catalog
// (name -> group) and the id counters. Safe for concurrent use. Route shard locks and catalogMu are
// leaf locks; the counters are atomics whose values are replicated state (they reach snapshots).
type GroupDirectory struct {
	routes [routeShardCount]routeShard

	catalogMu sync.Mutex
	groups    map[string]*GroupEntry // guarded by catalogMu

	nextObjectID  atomic.Uint64 // last object id handed out
	nextGroupID   atomic.Uint64 // last group id handed out
	nextReplicaID atomic.Uint64 // last replica id handed out
	objects       atomic.Int64  // live (active or creating) entries
}

func newGroupDirectory() *GroupDirectory {
	d := &GroupDirectory{groups: make(map[string]*GroupEntry)}
	for i := range d.routes {
		d.routes[i].m = make(map[string]*ObjectEntry)
	}
	return d
}

func (d *GroupDirectory) shardIndex(key string) int {
	return int(maphash.String(routeSeed, key) % routeShardCount)
}

func (d *GroupDirectory) shard(key string) *routeShard { return &d.routes[d.shardIndex(key)] }

// lookup is the route lookup: one hash and one shard read lock, released before the caller takes any
// object lock. It may return an entry that is creating or removing; the caller checks under e.mu.
func (d *GroupDirectory) lookup(key string) *ObjectEntry {
	sh := d.shard(key)
	sh.mu.RLock()
	e := sh.m[key]
	sh.mu.RUnlock()
	return e
}

// lookupMany is lookup for many keys at once: it sets out[i] to the entry under keys[i] (nil when
// none), taking each shard's read lock once for all the keys it holds. A lookup of a large store
// misses the cache, and the locked instruction of a lock per key makes each miss wait for the one
// before it; keys looked up back to back under one lock let the processor overlap their misses.
// shards is scratch space for one shard index per key.
func (d *GroupDirectory) lookupMany(keys []string, out []*ObjectEntry, shards []uint8) {
	var count [routeShardCount + 1]int
	for i, k := range keys {
		sh := uint8(d.shardIndex(k))
		shards[i] = sh
		count[sh+1]++
	}
	for i := 1; i <= routeShardCount; i++ {
		count[i] += count[i-1] // count[sh]: where shard sh's keys start in order
	}
	var order [lookupManyMax]uint16
	start := count
	for i, sh := range shards[:len(keys)] {
		order[start[sh]] = uint16(i)
		start[sh]++
	}
	for sh := range routeShardCount {
		lo, hi := count[sh], count[sh+1]
		if lo == hi {
			continue
		}
		r := &d.routes[sh]
		r.mu.RLock()
		for _, i := range order[lo:hi] {
			out[i] = r.m[keys[i]]
		}
		r.mu.RUnlock()
	}
}

// lookupManyMax is the most keys one lookupMany call takes.
const lookupManyMax = 4096

// publish inserts e under its key unless a live entry holds the key. A removing entry is replaced: its
// eraser's EraseIfMatch then finds another entry and leaves the route alone.
func (d *GroupDirectory) publish(e *ObjectEntry) bool {
	sh := d.shard(e.key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if cur := sh.m[e.key]; cur != nil && cur.Life() != Removing {
		return false
	}
	sh.m[e.key] = e
	return true
}

// EraseIfMatch removes the route of key only if it still points at e: a matched unlink, so stale work
// can never unlink an object created again under the same key.
func (d *GroupDirectory) EraseIfMatch(key string, e *ObjectEntry) bool {
	sh := d.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m[key] != e {
		return false
	}
	delete(sh.m, key)
	return true
}

// groupGetOrCreate returns the catalog's group of that name, creating it (with the next group id) on
// first use. The caller locks g.mu and retries if it finds the group removed.
func (d *GroupDirectory) groupGetOrCreate(name string) (g *GroupEntry, created bool) {
	d.catalogMu.Lock()
	defer d.catalogMu.Unlock()
	if g = d.groups[name]; g != nil {
		return g, false
	}
	g = &GroupEntry{name: name, id: d.nextGroupID.Add(1)}
	d.groups[name] = g
	return g, true
}

// group returns the catalog's group of that name, or nil.
func (d *GroupDirectory) group(name string) *GroupEntry {
	d.catalogMu.Lock()
	defer d.catalogMu.Unlock()
	return d.groups[name]
}

// dropGroupLocked marks g removed and unlinks it from the catalog if it is still there (g.mu held;
// catalogMu is a leaf, so taking it under g.mu keeps the order).
func (d *GroupDirectory) dropGroupLocked(g *GroupEntry) {
	g.life = groupRemoved
	d.catalogMu.Lock()
	if d.groups[g.name] == g {
		delete(d.groups, g.name)
	}
	d.catalogMu.Unlock()
}

// Groups returns the number of explicit groups in the catalog.
func (d *GroupDirectory) Groups() int {
	d.catalogMu.Lock()
	defer d.catalogMu.Unlock()
	return len(d.groups)
}

// Objects returns the number of live objects.
func (d *GroupDirectory) Objects() int64 { return d.objects.Load() }

// Counters returns the directory's id counters (replicated state).
func (d *GroupDirectory) Counters() (object, group, replica uint64) {
	return d.nextObjectID.Load(), d.nextGroupID.Load(), d.nextReplicaID.Load()
}

// visit copies the handles of every route shard, one shard at a time under its read lock, into buf
// and hands them to fn; it stops early when fn returns false.
func (d *GroupDirectory) visit(t *TenantState, buf []ObjectHandle, fn func([]ObjectHandle) bool) ([]ObjectHandle, bool) {
	for i := range d.routes {
		sh := &d.routes[i]
		buf = buf[:0]
		sh.mu.RLock()
		for _, e := range sh.m {
			buf = append(buf, ObjectHandle{Tenant: t, Entry: e})
		}
		sh.mu.RUnlock()
		if len(buf) > 0 && !fn(buf) {
			return buf, false
		}
	}
	return buf, true
}
