package store

import (
	"errors"
	"hash/maphash"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"metad/store/alloc"
)

// The baseline: the design metad replaces, rendered in test code so that the benchmarks of
// bench_test.go can run it beside the store, in the same process, on the same data.
//
// The old design keeps every tenant's objects in 1024 global shards, one sync.RWMutex each; a key's
// shard is a hash of tenant and key. Group membership lives outside the objects, in two places: a
// global object-to-group map ((tenant, key) -> group) under its own lock, and per-shard group-member
// maps (tenant -> group -> member keys) in the shard chosen by a hash of tenant and group. Writes
// change an object in place under its shard's lock. A Get takes the shard lock exclusively, since it
// writes the lease. A batch locks every shard it touches, in shard order, for the whole batch, so
// unrelated keys that share a shard wait for each other.
//
// It holds the same metadata per object as the store (size, writer, put start, pins, data type,
// replicas of the same Replica type, lease) and keeps the same read semantics: a Get leases the
// object and, for a group member whose lease is within half a ttl of expiry or whose group gained a
// member since the last refresh, every member of the group. Only the operations the benchmarks use
// exist: put (a completed object), get, batch get/write, census scan. Where a choice had to be made
// it was made in the baseline's favour: shards are padded to a cache line, an object carries a
// `grouped` bit (in padding, no extra bytes) so a singleton Get never touches the global map, member
// keys share the object keys' bytes, a batch write does its upsert start and end in one lock hold,
// and no request is validated.

const (
	baseShardCount = 1024
	baseLeaseTTL   = int64(10 * 1e9) // DefaultConfig().LeaseTTL
	cacheLine      = 64
)

var (
	errBaseNotFound     = errors.New("baseline: object not found")
	errBaseNotReady     = errors.New("baseline: no COMPLETE replica")
	errBaseInvalidWrite = errors.New("baseline: invalid write")
	errBaseIllegal      = errors.New("baseline: illegal client")
	errBaseExists       = errors.New("baseline: object already exists")
)

var baseSeed = maphash.MakeSeed()

// baseObject is one object of the old design, changed in place under its shard's lock.
type baseObject struct {
	size            uint64
	writer          alloc.ID
	putStart        int64
	softPinTTL      int64
	softPinDeadline int64
	lease           int64 // leader soft state, written by every Get and every completed write
	dataType        uint32
	hardPin         bool
	grouped         bool // set when the object is a member of an explicit group
	replicas        []Replica
}

// baseGroup is a group's record in its shard's member map: the member keys and the generation
// counters that decide a group-wide lease refresh (the same rule as the store's).
type baseGroup struct {
	members   []string
	gen       uint64 // +1 each time a member joins
	leasedGen uint64 // gen at the last group-wide lease refresh
}

type baseShard struct {
	mu      sync.RWMutex
	objects map[string]map[string]*baseObject // tenant -> key -> object
	groups  map[string]map[string]baseGroup   // tenant -> group -> members
	_       [cacheLine - unsafe.Sizeof(sync.RWMutex{}) - 16]byte
}

// baseKey names an object in the global object-to-group map.
type baseKey struct{ tenant, key string }

type baseline struct {
	shards [baseShardCount]baseShard

	o2gMu sync.RWMutex
	o2g   map[baseKey]string // (tenant, key) -> group, explicit members only
}

func newBaseline() *baseline {
	b := &baseline{o2g: make(map[baseKey]string)}
	for i := range b.shards {
		b.shards[i].objects = make(map[string]map[string]*baseObject)
		b.shards[i].groups = make(map[string]map[string]baseGroup)
	}
	return b
}

// baseShardIndex is the shard of (tenant, name): a key's shard for objects, a group's for members.
func baseShardIndex(tenant, name string) int {
	h := maphash.String(baseSeed, name) ^ maphash.String(baseSeed, tenant)*0x9e3779b97f4a7c15
	return int(h % baseShardCount)
}

// put inserts a completed object (the end state of PutStart and PutEnd), joining group if not empty.
// Object shard, then the object-to-group map, then the group's shard: one lock at a time.
func (b *baseline) put(tenant, key, group string, o *baseObject) error {
	o.grouped = group != ""
	sh := &b.shards[baseShardIndex(tenant, key)]
	sh.mu.Lock()
	tm := sh.objects[tenant]
	if tm == nil {
		tm = make(map[string]*baseObject)
		sh.objects[tenant] = tm
	}
	if _, ok := tm[key]; ok {
		sh.mu.Unlock()
		return errBaseExists
	}
	tm[key] = o
	sh.mu.Unlock()
	if group == "" {
		return nil
	}
	b.o2gMu.Lock()
	b.o2g[baseKey{tenant, key}] = group
	b.o2gMu.Unlock()
	gs := &b.shards[baseShardIndex(tenant, group)]
	gs.mu.Lock()
	gm := gs.groups[tenant]
	if gm == nil {
		gm = make(map[string]baseGroup)
		gs.groups[tenant] = gm
	}
	g := gm[group]
	g.members = append(g.members, key)
	g.gen++
	gm[group] = g
	gs.mu.Unlock()
	return nil
}

// readLocked is the body of a Get under the object's shard lock (held exclusively): the COMPLETE
// replicas, and the lease extended. It returns the lease the object had before.
func (o *baseObject) readLocked(now int64) ([]Replica, int64, error) {
	var reps []Replica
	for _, r := range o.replicas {
		if r.Status == Complete {
			reps = append(reps, r)
		}
	}
	if reps == nil {
		return nil, 0, errBaseNotReady
	}
	old := o.lease
	o.lease = max(o.lease, now+baseLeaseTTL)
	return reps, old, nil
}

// get is Get: the key's shard lock, exclusively, for the lookup and the lease; then, for a group
// member, the two-level lookup (object-to-group map, then the group's shard's member map) that
// decides, and if needed does, the group-wide lease refresh.
func (b *baseline) get(now int64, tenant, key string) ([]Replica, error) {
	sh := &b.shards[baseShardIndex(tenant, key)]
	sh.mu.Lock()
	o := sh.objects[tenant][key]
	if o == nil {
		sh.mu.Unlock()
		return nil, errBaseNotFound
	}
	reps, old, err := o.readLocked(now)
	grouped := o.grouped
	sh.mu.Unlock()
	if err == nil && grouped {
		b.refreshGroup(now, tenant, key, old)
	}
	return reps, err
}

// refreshGroup is the two-level lookup of a read member: its group from the object-to-group map, the
// group's record from the member map in the group's shard; when the member's old lease is within
// half a ttl of expiry or the group gained a member since the last refresh, it leases every member,
// one shard lock at a time.
func (b *baseline) refreshGroup(now int64, tenant, key string, old int64) {
	b.o2gMu.RLock()
	group, ok := b.o2g[baseKey{tenant, key}]
	b.o2gMu.RUnlock()
	if !ok {
		return
	}
	gs := &b.shards[baseShardIndex(tenant, group)]
	var buf [8]string
	gs.mu.RLock()
	g := gs.groups[tenant][group]
	members := append(buf[:0], g.members...)
	gs.mu.RUnlock()
	if old >= now+baseLeaseTTL/2 && g.gen == g.leasedGen {
		return
	}
	until := now + baseLeaseTTL
	for _, m := range members {
		sh := &b.shards[baseShardIndex(tenant, m)]
		sh.mu.Lock()
		if o := sh.objects[tenant][m]; o != nil {
			o.lease = max(o.lease, until)
		}
		sh.mu.Unlock()
	}
	gs.mu.Lock()
	if gm := gs.groups[tenant]; gm != nil {
		if cur, ok := gm[group]; ok && cur.leasedGen < g.gen {
			cur.leasedGen = g.gen
			gm[group] = cur
		}
	}
	gs.mu.Unlock()
}

// upsertStartLocked is UpsertStart of the same size, in place (shard lock held): every replica turns
// PROCESSING and the write's fields are reset, as the store's UpsertStart does. It returns a copy
// of the replicas for the writer.
func (o *baseObject) upsertStartLocked(now int64, client alloc.ID, size uint64) ([]Replica, error) {
	if size != o.size {
		return nil, errBaseInvalidWrite // the benchmarks only overwrite with the same size
	}
	for _, r := range o.replicas {
		if r.Status == Processing {
			return nil, errBaseInvalidWrite
		}
	}
	o.writer = client
	o.putStart = now
	o.hardPin = false
	o.dataType = 0
	o.softPinTTL, o.softPinDeadline = 0, 0
	for i := range o.replicas {
		o.replicas[i].Status = Processing
	}
	return slices.Clone(o.replicas), nil
}

// upsertEndLocked is UpsertEnd (= PutEnd for every tier), in place (shard lock held).
func (o *baseObject) upsertEndLocked(now int64, client alloc.ID) error {
	if o.writer != client {
		return errBaseIllegal
	}
	hadComplete, processing := false, 0
	for _, r := range o.replicas {
		switch r.Status {
		case Complete:
			hadComplete = true
		case Processing:
			processing++
		}
	}
	if processing == 0 {
		if len(o.replicas) > 0 {
			o.lease = max(o.lease, now)
			return nil
		}
		return errBaseInvalidWrite
	}
	for i := range o.replicas {
		o.replicas[i].Status = Complete
	}
	if !hadComplete && o.softPinTTL > 0 {
		o.softPinDeadline = now + o.softPinTTL
		o.softPinTTL = 0
	}
	o.lease = max(o.lease, now) // a write stamps its time, as the store's PutEnd does
	return nil
}

// baseBatchResult is a batch's per-key outcome: replicas of each read (what a Get returns) and of
// each write (what UpsertStart returns), and one error per key, reads first.
type baseBatchResult struct {
	reads  [][]Replica
	writes [][]Replica
	errs   []error
}

// batch runs one batch of one tenant: a Get of each read key and an overwrite of the same size
// (UpsertStart then UpsertEnd) of each write key. It locks every shard the batch touches, in shard
// order, exclusively (reads write the lease), for the whole batch. Group-wide lease refreshes of read
// members run after the shard locks are released.
func (b *baseline) batch(now int64, tenant string, client alloc.ID, size uint64, reads, writes []string) baseBatchResult {
	var idxBuf [64]int
	idx := idxBuf[:0]
	for _, k := range reads {
		idx = append(idx, baseShardIndex(tenant, k))
	}
	for _, k := range writes {
		idx = append(idx, baseShardIndex(tenant, k))
	}
	readIdx, writeIdx := idx[:len(reads)], idx[len(reads):]
	var lockBuf [64]int
	locks := append(lockBuf[:0], idx...)
	slices.Sort(locks)
	locks = slices.Compact(locks)
	for _, i := range locks {
		b.shards[i].mu.Lock()
	}
	res := baseBatchResult{
		reads:  make([][]Replica, len(reads)),
		writes: make([][]Replica, len(writes)),
		errs:   make([]error, len(reads)+len(writes)),
	}
	var oldBuf [64]int64
	olds := oldBuf[:len(reads)]
	var grouped uint64 // bit i: read i is a group member (batches are at most 64 keys here)
	for i, k := range reads {
		o := b.shards[readIdx[i]].objects[tenant][k]
		if o == nil {
			res.errs[i] = errBaseNotFound
			continue
		}
		res.reads[i], olds[i], res.errs[i] = o.readLocked(now)
		if res.errs[i] == nil && o.grouped {
			grouped |= 1 << i
		}
	}
	for i, k := range writes {
		o := b.shards[writeIdx[i]].objects[tenant][k]
		if o == nil {
			res.errs[len(reads)+i] = errBaseNotFound
			continue
		}
		reps, err := o.upsertStartLocked(now, client, size)
		if err == nil {
			err = o.upsertEndLocked(now, client)
		}
		res.writes[i], res.errs[len(reads)+i] = reps, err
	}
	for j := len(locks) - 1; j >= 0; j-- {
		b.shards[locks[j]].mu.Unlock()
	}
	for i := range reads {
		if grouped&(1<<i) != 0 {
			b.refreshGroup(now, tenant, reads[i], olds[i])
		}
	}
	return res
}

// census is the plain scan: every shard under its read lock, every object read in place. fn must not
// lock the baseline.
func (b *baseline) census(fn func(tenant, key string, o *baseObject)) {
	for i := range b.shards {
		sh := &b.shards[i]
		sh.mu.RLock()
		for t, tm := range sh.objects {
			for k, o := range tm {
				fn(t, k, o)
			}
		}
		sh.mu.RUnlock()
	}
}

// TestBaselineMatchesStore runs the same small workload on the store and the baseline and checks
// that both give the same answers and end in the same object state, so the benchmarks compare the
// same work.
func TestBaselineMatchesStore(t *testing.T) {
	s := newTestStore(t)
	seg := mount(t, s, 1, alloc.TierMemory, 1<<20)
	if _, err := s.RegisterTenant("t1", 0); err != nil {
		t.Fatal(err)
	}
	b := newBaseline()
	const size = 100
	var off uint64
	add := func(tenant, key, group string) {
		reps := put(t, s, sec, tenant, key, group, size)
		rep := Replica{ID: reps[0].ID, Extent: alloc.Extent{Segment: seg, Offset: off, Size: alloc.RoundUp(size)},
			Tier: alloc.TierMemory, Status: Complete}
		off += alloc.RoundUp(size)
		if err := b.put(tenant, key, group, &baseObject{size: size, writer: client1, putStart: sec, lease: sec,
			replicas: []Replica{rep}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 8 {
		add("default", "s"+itoa(uint64(i)), "")
		add("t1", "m"+itoa(uint64(i)), "G")
	}
	if err := b.put("default", "s0", "", &baseObject{}); !errors.Is(err, errBaseExists) {
		t.Fatalf("second put: %v", err)
	}

	now := 2 * sec
	for _, k := range []string{"s0", "s5"} {
		got, err := s.Get(now, "default", k)
		if err != nil {
			t.Fatal(err)
		}
		bgot, err := b.get(now, "default", k)
		if err != nil || !slices.Equal(got.Replicas, bgot) {
			t.Fatalf("get %s: store %v, baseline %v %v", k, got.Replicas, bgot, err)
		}
	}
	if _, err := b.get(now, "default", "nope"); !errors.Is(err, errBaseNotFound) {
		t.Fatalf("get of an absent key: %v", err)
	}
	// A member's first read leases the whole group, in both designs.
	if _, err := s.Get(now, "t1", "m3"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.get(now, "t1", "m3"); err != nil {
		t.Fatal(err)
	}

	// A batch: reads of s1, s2, m1; overwrites of s3, s4.
	now = 3 * sec
	reads, writes := []string{"s1", "s2"}, []string{"s3", "s4"}
	res := b.batch(now, "default", client2, size, reads, writes)
	for _, err := range res.errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	_, errs := s.BatchGet(now, "default", reads)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range writes {
		if _, err := s.UpsertStart(now, 1, PutStartRequest{Tenant: "default", Client: client2, Key: k, Size: size,
			Config: ReplicaConfig{Memory: 1}}); err != nil {
			t.Fatal(err)
		}
		if err := s.UpsertEnd(now, PutEndRequest{Tenant: "default", Client: client2, Key: k}); err != nil {
			t.Fatal(err)
		}
	}
	mres := b.batch(now, "t1", client1, size, []string{"m1"}, nil)
	if mres.errs[0] != nil {
		t.Fatal(mres.errs[0])
	}
	if _, err := s.Get(now, "t1", "m1"); err != nil {
		t.Fatal(err)
	}

	// Same state everywhere: replicas, writer, put start, lease (to the millisecond the store keeps).
	n := 0
	b.census(func(tenant, key string, o *baseObject) {
		n++
		err := s.WithObject(tenant, key, func(lo *LockedObject) error {
			st := lo.State()
			if !slices.Equal(st.Replicas, o.replicas) || st.Writer != o.writer || st.PutStart != o.putStart ||
				st.Size != o.size {
				t.Errorf("%s/%s: store %+v, baseline %+v", tenant, key, st, o)
			}
			if lease := lo.e.leaseLocked(); lease != o.lease {
				t.Errorf("%s/%s: store lease %d, baseline %d", tenant, key, lease, o.lease)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	})
	if n != 16 {
		t.Fatalf("census saw %d objects, want 16", n)
	}
}
