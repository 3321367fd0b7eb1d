package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"metad/store/alloc"
)

// Concurrency tests. They run under -race in `make test`: loops are bounded, nothing sleeps to
// synchronise, and every wait has a deadline after which the test fails with a goroutine dump.

const concDeadline = 30 * time.Second

// waitAll waits for wg, failing with every goroutine's stack if it takes longer than d.
func waitAll(t *testing.T, wg *sync.WaitGroup, d time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: not finished after %s (deadlock?); goroutines:\n%s", what, d, allStacks())
	}
}

func allStacks() []byte {
	buf := make([]byte, 1<<22)
	return buf[:runtime.Stack(buf, true)]
}

// await waits for one result with a deadline.
func await[T any](t *testing.T, ch <-chan T, d time.Duration, what string) (T, bool) {
	t.Helper()
	select {
	case v := <-ch:
		return v, true
	case <-time.After(d):
		var zero T
		t.Errorf("%s: no result after %s; goroutines:\n%s", what, d, allStacks())
		return zero, false
	}
}

// outcomes counts what the concurrent operations returned (logged with -v, to see that the mix
// really exercises every path).
type outcomes struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *outcomes) add(what string, r Reason) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[string]int{}
	}
	o.n[what+" "+r.String()]++
}

func (o *outcomes) log(t *testing.T) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ks []string
	for k := range o.n {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	for _, k := range ks {
		t.Logf("%6d  %s", o.n[k], k)
	}
}

var concOutcomes outcomes

// allowed reports an error whose reason is not in ok (goroutine-safe: Errorf). ErrUnlinkPending (a
// concurrent removal in flight: ask again) is always allowed.
func allowed(t *testing.T, what string, err error, ok ...Reason) bool {
	if errors.Is(err, ErrUnlinkPending) {
		return true
	}
	concOutcomes.add(what, ReasonOf(err))
	if r := ReasonOf(err); !slices.Contains(ok, r) {
		t.Errorf("%s: unexpected %s (%v)", what, r, err)
		return false
	}
	return true
}

// checkAccounting checks, on a quiescent store, that each tenant's charged quota is the sum of its
// objects' size x MEMORY replicas, that each segment's used bytes are its replicas' rounded sizes,
// that free + used == size, and that no live object is left marked.
func checkAccounting(t *testing.T, s *Store) {
	t.Helper()
	if err := s.CheckInvariants(); err != nil {
		t.Fatalf("CheckInvariants: %v", err)
	}
	charged := map[*TenantState]uint64{}
	used := map[alloc.ID]uint64{}
	s.VisitHandles(0, func(hs []ObjectHandle) bool {
		for _, h := range hs {
			st := h.State()
			charged[h.Tenant] += st.MemoryBytes()
			for _, r := range st.Replicas {
				used[r.Extent.Segment] += alloc.RoundUp(st.Size)
			}
			if h.Entry.Life() != Active || h.Entry.markedLocked() {
				t.Errorf("%s/%s: %s, marked %v after all work finished", h.Tenant.Name(), h.Key(), h.Entry.Life(), h.Entry.markedLocked())
			}
		}
		return true
	})
	for _, tn := range s.Tenants().List() {
		if c := tn.Quota().Charged(); c != charged[tn] {
			t.Errorf("tenant %q: charged %d, objects hold %d", tn.Name(), c, charged[tn])
		}
	}
	var tierUsed [3]uint64
	for _, info := range s.Segments().List() {
		if info.Used != used[info.ID] || info.Used > info.Size {
			t.Errorf("segment %s: used %d (size %d), replicas hold %d", info.ID, info.Used, info.Size, used[info.ID])
		}
		spans, _ := s.Segments().FreeSpans(info.ID)
		var free uint64
		for _, sp := range spans {
			free += sp.Size
		}
		if free+info.Used != info.Size {
			t.Errorf("segment %s: free %d + used %d != size %d", info.ID, free, info.Used, info.Size)
		}
		tierUsed[info.Tier] += info.Used
	}
	for _, tier := range []alloc.Tier{alloc.TierMemory, alloc.TierNOF} {
		if u := s.Segments().Used(tier); u != tierUsed[tier] {
			t.Errorf("tier %s: registry used %d, segments sum %d", tier, u, tierUsed[tier])
		}
	}
}

// TestConcurrentMixedOps runs reads, writes, removal and recreation of the same keys, removal of
// groups being filled, unregistration and registration of a tenant being written, and the census,
// all at once; afterwards the store's invariants hold and quota and segment usage add up, and after
// unregistering every tenant nothing is left allocated or charged.
func TestConcurrentMixedOps(t *testing.T) {
	s := newTestStore(t)
	for n := byte(1); n <= 3; n++ {
		mount(t, s, n, alloc.TierMemory, 1<<20)
	}
	mount(t, s, 4, alloc.TierNOF, 1<<20)
	if _, err := s.RegisterTenant("quota", 64<<10); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RegisterTenant("churn", 0); err != nil {
		t.Fatal(err)
	}
	tenants := []string{"", "quota", "churn"}
	keys := make([]string, 12)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%02d", i)
	}
	groups := []string{"", "", "G0", "G1", "G2"}

	var clock atomic.Int64
	clock.Store(100 * sec)
	tick := func() int64 { return clock.Add(int64(7 * time.Millisecond)) }
	concOutcomes = outcomes{}

	// Workers run a bounded number of iterations; background goroutines (group removal, tenant
	// churn, census) run until the workers are done (or a bound), so they overlap with all of them.
	// Every loop yields once per iteration so that the goroutines interleave finely on few cores.
	const iters = 800
	var workers, background sync.WaitGroup
	stop := make(chan struct{})
	var nextSeed uint64
	spawn := func(wg *sync.WaitGroup, n int, fn func(r *rand.Rand)) {
		for range n {
			nextSeed++ // distinct, deterministic seeds
			seed := nextSeed
			wg.Add(1)
			go func() {
				defer wg.Done()
				fn(rand.New(rand.NewPCG(seed, 1)))
			}()
		}
	}
	untilStopped := func(fn func()) {
		for range 100 * iters {
			select {
			case <-stop:
				return
			default:
			}
			fn()
			runtime.Gosched()
		}
	}

	write := func(r *rand.Rand, tenant, key, group string) {
		req := putReq(tenant, key, group, 1+uint64(r.IntN(4096)))
		req.Config.Memory = 1 + r.IntN(2)
		req.Config.NOF = r.IntN(2)
		_, err := s.PutStart(tick(), r.Uint64(), req)
		if !allowed(t, "PutStart", err, OK, ObjectAlreadyExists, TenantNotRegistered, TenantQuotaExceeded, NoAvailableHandle) || err != nil {
			return
		}
		runtime.Gosched()
		end := PutEndRequest{Tenant: tenant, Client: client1, Key: key}
		if r.IntN(10) == 0 {
			allowed(t, "PutRevoke", s.PutRevoke(tick(), end), OK, ObjectNotFound, TenantNotRegistered, InvalidWrite)
			return
		}
		allowed(t, "PutEnd", s.PutEnd(tick(), end), OK, ObjectNotFound, TenantNotRegistered)
	}
	// Writers.
	spawn(&workers, 2, func(r *rand.Rand) {
		for range iters {
			write(r, tenants[r.IntN(len(tenants))], keys[r.IntN(len(keys))], groups[r.IntN(len(groups))])
			runtime.Gosched()
		}
	})
	// Readers: every replica a Get returns is COMPLETE.
	spawn(&workers, 2, func(r *rand.Rand) {
		for range iters {
			tenant, key := tenants[r.IntN(len(tenants))], keys[r.IntN(len(keys))]
			switch r.IntN(3) {
			case 0, 1:
				res, err := s.Get(tick(), tenant, key)
				allowed(t, "Get", err, OK, ObjectNotFound, ReplicaIsNotReady)
				if err == nil && len(res.Replicas) == 0 {
					t.Errorf("Get %s/%s: OK with no replica", tenant, key)
				}
				for _, rep := range res.Replicas {
					if rep.Status != Complete {
						t.Errorf("Get %s/%s: replica %+v not COMPLETE", tenant, key, rep)
					}
				}
			default:
				_, _ = s.Exist(tick(), tenant, keys[:1+r.IntN(len(keys))])
			}
			runtime.Gosched()
		}
	})
	// Remove (force) and recreate the same keys.
	spawn(&workers, 1, func(r *rand.Rand) {
		for range iters {
			tenant, key := tenants[r.IntN(len(tenants))], keys[r.IntN(len(keys))]
			allowed(t, "Remove", s.Remove(tick(), tenant, key, true), OK, ObjectNotFound, ReplicaIsNotReady, TenantNotRegistered)
			runtime.Gosched()
			write(r, tenant, key, groups[r.IntN(len(groups))])
			runtime.Gosched()
		}
	})
	// Remove groups while the writers fill them.
	spawn(&background, 1, func(r *rand.Rand) {
		untilStopped(func() {
			tenant, group := tenants[r.IntN(len(tenants))], groups[2+r.IntN(3)]
			_, err := s.RemoveGroup(tick(), tenant, group, r.IntN(4) != 0)
			allowed(t, "RemoveGroup", err, OK, ObjectNotFound, ReplicaIsNotReady, ObjectHasLease, TenantNotRegistered, ObjectAlreadyExists)
		})
	})
	// Unregister (force) and register again the tenant being written.
	spawn(&background, 1, func(r *rand.Rand) {
		untilStopped(func() {
			n, err := s.UnregisterTenant("churn", true)
			allowed(t, "UnregisterTenant", err, OK, TenantNotRegistered)
			if n > 0 {
				concOutcomes.add("UnregisterTenant erased objects", OK)
			}
			runtime.Gosched()
			_, err = s.RegisterTenant("churn", uint64(r.IntN(2))*(128<<10))
			allowed(t, "RegisterTenant", err, OK, TenantAlreadyExists)
			for range 20 { // let the writers put something into it
				runtime.Gosched()
			}
		})
	})
	// Census: handles, tokens, and revalidation through WithToken and WithHandle.
	spawn(&background, 1, func(r *rand.Rand) {
		untilStopped(func() {
			s.VisitHandles(1+r.IntN(8), func(hs []ObjectHandle) bool {
				for _, h := range hs {
					if h.State() == nil {
						t.Errorf("census: %s has no state", h.Key())
						continue
					}
					tok, ok := h.Token()
					if !ok {
						continue
					}
					err := s.WithToken(tok, func(o *LockedObject) error {
						if o.Key() != tok.Key || o.State().ID != tok.ObjectID {
							t.Errorf("WithToken %+v reached %s id %d", tok, o.Key(), o.State().ID)
						}
						return nil
					})
					allowed(t, "WithToken", err, OK, ObjectNotFound)
					err = s.WithHandle(h, func(o *LockedObject) error {
						if o.Key() != h.Key() || o.State().ID != tok.ObjectID {
							t.Errorf("WithHandle of %s id %d reached %s id %d", h.Key(), tok.ObjectID, o.Key(), o.State().ID)
						}
						return nil
					})
					allowed(t, "WithHandle", err, OK, ObjectNotFound)
				}
				return true
			})
		})
	})
	waitAll(t, &workers, concDeadline, "mixed operations")
	close(stop)
	waitAll(t, &background, concDeadline, "background operations")
	if testing.Verbose() {
		concOutcomes.log(t)
	}
	if t.Failed() {
		t.FailNow()
	}
	checkAccounting(t, s)

	// Everything erased: nothing allocated, nothing charged.
	for _, tn := range s.Tenants().List() {
		if _, err := s.UnregisterTenant(tn.Name(), true); err != nil {
			t.Fatal(err)
		}
		if c := tn.Quota().Charged(); c != 0 {
			t.Errorf("tenant %q: %d bytes still charged after unregister", tn.Name(), c)
		}
	}
	for _, info := range s.Segments().List() {
		if info.Used != 0 {
			t.Errorf("segment %s: %d bytes still used after every tenant was unregistered", info.ID, info.Used)
		}
	}
	checkAccounting(t, s)
}

// sameShardKeys returns n keys that share the route shard of key in d.
func sameShardKeys(d *GroupDirectory, key string, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		if k := fmt.Sprintf("k%d", i); k != key && d.shard(k) == d.shard(key) {
			out = append(out, k)
		}
	}
	return out
}

// TestLockIndependence: while one object's lock is held, reads and writes of other objects whose
// keys share its route shard complete; a read of the held object itself waits for it.
func TestLockIndependence(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	mount(t, s, 2, alloc.TierNOF, 1<<20)
	const held = "held"
	d := s.Tenants().Lookup(DefaultTenant).dir
	ks := sameShardKeys(d, held, 6)
	getKey, endKey, newKey, removeKey, withKey, upsertKey := ks[0], ks[1], ks[2], ks[3], ks[4], ks[5]
	for _, k := range []string{held, getKey, removeKey, withKey, upsertKey} {
		put(t, s, sec, "", k, "", 100)
	}
	if _, err := s.PutStart(sec, 1, putReq("", endKey, "", 100)); err != nil {
		t.Fatal(err)
	}

	locked, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		holder <- s.WithObject("", held, func(o *LockedObject) error {
			close(locked)
			<-release
			return nil
		})
	}()
	<-locked
	released := false
	defer func() {
		if !released {
			close(release)
			<-holder
		}
	}()
	heldGet := make(chan error, 1)
	go func() { _, err := s.Get(2*sec, "", held); heldGet <- err }()

	ops := []struct {
		name string
		fn   func() error
	}{
		{"Get " + getKey, func() error { _, err := s.Get(2*sec, "", getKey); return err }},
		{"Exist " + getKey, func() error {
			if ex, _ := s.Exist(2*sec, "", []string{getKey}); len(ex) == 0 || !ex[0] {
				return fmt.Errorf("exist: false")
			}
			return nil
		}},
		{"PutEnd " + endKey, func() error { return s.PutEnd(2*sec, PutEndRequest{Client: client1, Key: endKey}) }},
		{"PutStart+PutEnd " + newKey, func() error {
			if _, err := s.PutStart(2*sec, 2, putReq("", newKey, "", 100)); err != nil {
				return err
			}
			return s.PutEnd(2*sec, PutEndRequest{Client: client1, Key: newKey})
		}},
		{"UpsertStart+UpsertEnd " + upsertKey, func() error {
			if _, err := s.UpsertStart(2*sec, 3, putReq("", upsertKey, "", 200)); err != nil {
				return err
			}
			return s.UpsertEnd(2*sec, PutEndRequest{Client: client1, Key: upsertKey})
		}},
		{"Remove " + removeKey, func() error { return s.Remove(2*sec, "", removeKey, true) }},
		{"WithObject " + withKey, func() error {
			return s.WithObject("", withKey, func(o *LockedObject) error { return nil })
		}},
		{"PrepareRemove+ClearMarks " + withKey, func() error {
			tok, err := s.PrepareRemove(2*sec, "", withKey, true)
			if err == nil {
				s.ClearMarks([]ObjectToken{tok})
			}
			return err
		}},
		{"census", func() error {
			n := 0
			s.VisitHandles(0, func(hs []ObjectHandle) bool { n += len(hs); return true })
			if n == 0 {
				return fmt.Errorf("census saw nothing")
			}
			return nil
		}},
	}
	for _, op := range ops {
		done := make(chan error, 1)
		go func() { done <- op.fn() }()
		err, ok := await(t, done, 10*time.Second, op.name+" while "+held+" is locked (same route shard)")
		if !ok {
			close(release) // let the blocked operation finish, so nothing leaks
			released = true
			<-holder
			<-done
			<-heldGet
			t.FailNow()
		}
		if err != nil {
			t.Errorf("%s: %v", op.name, err)
		}
	}
	select {
	case err := <-heldGet:
		t.Errorf("Get of the locked object finished while its lock was held: %v", err)
	default:
	}
	close(release)
	released = true
	if err, ok := await(t, holder, 10*time.Second, "WithObject holder"); ok && err != nil {
		t.Error(err)
	}
	if err, ok := await(t, heldGet, 10*time.Second, "Get of the released object"); ok && err != nil {
		t.Error(err)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestNoDeadlockOverlappingLocks: multi-object transactions on random overlapping key sets (in
// random order, with duplicates and absent keys), group transactions, group removal and recreation,
// reads that lease whole groups, removal and recreation of members, and group/tenant prepares, all
// at once, finish within a deadline.
func TestNoDeadlockOverlappingLocks(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<22)
	mount(t, s, 2, alloc.TierMemory, 1<<22)
	groupOf := map[string]string{}
	var keys []string
	for i := range 16 {
		k := fmt.Sprintf("o%02d", i)
		keys = append(keys, k)
		if i < 12 {
			groupOf[k] = fmt.Sprintf("G%d", i%3)
		}
		put(t, s, sec, "", k, groupOf[k], 64)
	}
	groups := []string{"G0", "G1", "G2"}
	var clock atomic.Int64
	clock.Store(10 * sec)
	tick := func() int64 { return clock.Add(int64(time.Millisecond)) }
	recreate := func(k string) {
		if _, err := s.PutStart(tick(), 1, putReq("", k, groupOf[k], 64)); err != nil {
			allowed(t, "PutStart "+k, err, ObjectAlreadyExists)
			return
		}
		allowed(t, "PutEnd "+k, s.PutEnd(tick(), PutEndRequest{Client: client1, Key: k}), OK, ObjectNotFound)
	}

	const iters = 1000
	var wg sync.WaitGroup
	spawn := func(seed uint64, fn func(r *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(rand.New(rand.NewPCG(seed, 7)))
		}()
	}
	// yield once per iteration, so that the transactions interleave finely on few cores
	yield := func() { runtime.Gosched() }
	for g := range 4 {
		spawn(uint64(g), func(r *rand.Rand) {
			for range iters {
				yield()
				set := make([]string, 1+r.IntN(6))
				for i := range set {
					if r.IntN(8) == 0 {
						set[i] = "absent"
					} else {
						set[i] = keys[r.IntN(len(keys))]
					}
				}
				err := s.WithObjects("", set, func(os []*LockedObject) error {
					for i, o := range os {
						if i > 0 && os[i-1].Key() >= o.Key() {
							t.Errorf("WithObjects %q: objects not in strict key order: %q then %q", set, os[i-1].Key(), o.Key())
						}
						if !slices.Contains(set, o.Key()) || o.State() == nil {
							t.Errorf("WithObjects %q: got %q", set, o.Key())
						}
						o.SetMark(true) // set and cleared under the lock: nobody else can see it
						o.ExtendLease(tick())
						o.SetMark(false)
					}
					return nil
				})
				if err != nil {
					t.Errorf("WithObjects: %v", err)
				}
			}
		})
	}
	for g := range 2 {
		spawn(10+uint64(g), func(r *rand.Rand) {
			for range iters {
				yield()
				group := groups[r.IntN(len(groups))]
				err := s.WithGroup("", group, func(os []*LockedObject) error {
					for i, o := range os {
						if o.Group() != group || (i > 0 && os[i-1].Key() >= o.Key()) {
							t.Errorf("WithGroup %s: member %q (group %q) out of order or foreign", group, o.Key(), o.Group())
						}
					}
					return nil
				})
				allowed(t, "WithGroup", err, OK, ObjectNotFound)
			}
		})
	}
	spawn(20, func(r *rand.Rand) { // remove groups and fill them again
		for range iters / 3 {
			yield()
			group := groups[r.IntN(len(groups))]
			_, err := s.RemoveGroup(tick(), "", group, true)
			allowed(t, "RemoveGroup", err, OK, ObjectNotFound, ReplicaIsNotReady, ObjectAlreadyExists)
			for _, k := range keys {
				if groupOf[k] == group {
					recreate(k)
				}
			}
		}
	})
	spawn(21, func(r *rand.Rand) { // reads lease whole groups: group lock, then members
		for range iters {
			yield()
			k := keys[r.IntN(len(keys))]
			_, err := s.Get(tick(), "", k)
			allowed(t, "Get", err, OK, ObjectNotFound, ReplicaIsNotReady)
		}
	})
	spawn(22, func(r *rand.Rand) { // remove and recreate members and singletons
		for range iters {
			yield()
			k := keys[r.IntN(len(keys))]
			allowed(t, "Remove", s.Remove(tick(), "", k, true), OK, ObjectNotFound, ReplicaIsNotReady)
			recreate(k)
		}
	})
	spawn(23, func(r *rand.Rand) { // prepares that are then abandoned
		for range iters / 2 {
			yield()
			if r.IntN(2) == 0 {
				_, toks, err := s.PrepareRemoveGroup(tick(), "", groups[r.IntN(len(groups))], true)
				allowed(t, "PrepareRemoveGroup", err, OK, ObjectNotFound, ReplicaIsNotReady)
				s.ClearMarks(toks)
			} else {
				toks, err := s.PrepareRemoveAll(tick(), "", true)
				allowed(t, "PrepareRemoveAll", err, OK)
				s.ClearMarks(toks)
			}
		}
	})
	spawn(24, func(r *rand.Rand) { // census and token revalidation
		for range iters / 3 {
			yield()
			s.VisitHandles(1+r.IntN(4), func(hs []ObjectHandle) bool {
				for _, h := range hs {
					if tok, ok := h.Token(); ok {
						allowed(t, "WithToken", s.WithToken(tok, func(*LockedObject) error { return nil }), OK, ObjectNotFound)
					}
				}
				return true
			})
		}
	})
	waitAll(t, &wg, concDeadline, "overlapping lock transactions")
	checkAccounting(t, s)
}

// TestHandleAndTokenFencing: a census handle and tokens kept across the erase and recreation of the
// same key, and across unregistration and registration of the tenant, can never read or change the
// new object.
func TestHandleAndTokenFencing(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)

	handleOf := func(t *testing.T, tenant, key string) ObjectHandle {
		t.Helper()
		var out ObjectHandle
		found := false
		s.VisitHandles(0, func(hs []ObjectHandle) bool {
			for _, h := range hs {
				if h.Tenant.Name() == tenant && h.Key() == key {
					out, found = h, true
				}
			}
			return true
		})
		if !found {
			t.Fatalf("census: no handle for %s/%s", tenant, key)
		}
		return out
	}
	stateOf := func(t *testing.T, tenant, key string) *ObjectState {
		t.Helper()
		var st *ObjectState
		if err := s.WithObject(tenant, key, func(o *LockedObject) error { st = o.State(); return nil }); err != nil {
			t.Fatalf("%s/%s: %v", tenant, key, err)
		}
		return st
	}
	marked := func(t *testing.T, tenant, key string) bool {
		t.Helper()
		var m bool
		if err := s.WithObject(tenant, key, func(o *LockedObject) error { m = o.Marked(); return nil }); err != nil {
			t.Fatalf("%s/%s: %v", tenant, key, err)
		}
		return m
	}
	// stale checks everything an old handle and token may try on the new object under the same key.
	stale := func(t *testing.T, h ObjectHandle, tok ObjectToken, oldID uint64) {
		t.Helper()
		tenant, key := tok.Tenant, tok.Key
		cur := stateOf(t, tenant, key)
		if h.State().ID != oldID {
			t.Errorf("handle state id %d, want the old object's %d", h.State().ID, oldID)
		}
		if htok, _ := h.Token(); htok.ObjectID != oldID || htok.Instance != tok.Instance {
			t.Errorf("handle token %+v, want the old object (id %d, instance %d)", htok, oldID, tok.Instance)
		}
		called := false
		wantReason(t, s.WithToken(tok, func(*LockedObject) error { called = true; return nil }), ObjectNotFound)
		if called {
			t.Errorf("WithToken with a stale token ran its callback on the new object")
		}
		// A mark on the new object survives ClearMarks of the old token.
		newTok, err := s.PrepareRemove(50*sec, tenant, key, true)
		if err != nil {
			t.Fatalf("PrepareRemove of the new object: %v", err)
		}
		s.ClearMarks([]ObjectToken{tok})
		if !marked(t, tenant, key) {
			t.Errorf("ClearMarks with the old token cleared the new object's mark")
		}
		s.ClearMarks([]ObjectToken{newTok})
		if marked(t, tenant, key) {
			t.Errorf("ClearMarks with the new token left the mark")
		}
		// The same through handles: the old handle's entry is not the new object's, and the new
		// object's entry with the old token is left alone too.
		if newTok, err = s.PrepareRemove(50*sec, tenant, key, true); err != nil {
			t.Fatalf("PrepareRemove of the new object: %v", err)
		}
		var nh ObjectHandle
		if err := s.WithObject(tenant, key, func(o *LockedObject) error { nh = o.Handle(); return nil }); err != nil {
			t.Fatal(err)
		}
		s.ClearHandleMarks([]ObjectHandle{h, nh}, []ObjectToken{newTok, tok})
		if !marked(t, tenant, key) {
			t.Errorf("ClearHandleMarks with the old handle or the old token cleared the new object's mark")
		}
		s.ClearHandleMarks([]ObjectHandle{nh}, []ObjectToken{newTok})
		if marked(t, tenant, key) {
			t.Errorf("ClearHandleMarks with the new object's handle and token left the mark")
		}
		// Erasing by the old token leaves the new object.
		for _, mv := range []bool{false, true} {
			wantReason(t, s.EraseTokens([]ObjectToken{tok}, mv)[0], ObjectNotFound)
		}
		if st := stateOf(t, tenant, key); st != cur {
			t.Errorf("the new object changed: %+v -> %+v", cur, st)
		}
		if _, err := s.Get(60*sec, tenant, key); err != nil {
			t.Errorf("Get of the new object: %v", err)
		}
	}

	t.Run("erase and recreate", func(t *testing.T) {
		put(t, s, sec, "", "k", "", 100)
		h := handleOf(t, DefaultTenant, "k")
		tok, _ := h.Token()
		prep, err := s.PrepareRemove(2*sec, "", "k", true)
		if err != nil {
			t.Fatal(err)
		}
		if prep.ObjectID != tok.ObjectID {
			t.Fatalf("PrepareRemove token %+v, handle token %+v", prep, tok)
		}
		if errs := s.EraseTokens([]ObjectToken{prep}, true); errs[0] != nil {
			t.Fatal(errs[0])
		}
		put(t, s, 3*sec, "", "k", "", 200)
		if nid := stateOf(t, DefaultTenant, "k").ID; nid == tok.ObjectID {
			t.Fatalf("recreated object reuses id %d", nid)
		}
		stale(t, h, tok, tok.ObjectID)
		stale(t, h, prep, tok.ObjectID)
		wantReason(t, s.RemoveObject(prep), ObjectNotFound)
		if _, err := s.Get(70*sec, "", "k"); err != nil {
			t.Errorf("RemoveObject with the old object id erased the new object: %v", err)
		}
	})

	// Tokens of a tenant instance that was unregistered and registered again. Object and group ids
	// restart with the new instance, so only the instance tells the incarnations apart.
	reregister := func(t *testing.T) (h ObjectHandle, tok, prep ObjectToken, gid GroupToken) {
		t.Helper()
		const tn = "fence"
		if _, err := s.RegisterTenant(tn, 0); err != nil {
			t.Fatal(err)
		}
		put(t, s, sec, tn, "k", "", 100)
		put(t, s, sec, tn, "m", "G", 100)
		h = handleOf(t, tn, "k")
		tok, _ = h.Token()
		var err error
		if prep, err = s.PrepareRemove(2*sec, tn, "k", true); err != nil {
			t.Fatal(err)
		}
		s.ClearMarks([]ObjectToken{prep})
		var gtoks []ObjectToken
		if gid, gtoks, err = s.PrepareRemoveGroup(2*sec, tn, "G", true); err != nil {
			t.Fatal(err)
		}
		s.ClearMarks(gtoks)
		if _, err := s.UnregisterTenant(tn, true); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RegisterTenant(tn, 0); err != nil {
			t.Fatal(err)
		}
		put(t, s, 3*sec, tn, "k", "", 200)
		put(t, s, 3*sec, tn, "m", "G", 200)
		if h.Tenant.Life() != TenantRemoved || h.Tenant == s.Tenants().Lookup(tn) {
			t.Fatalf("old handle's tenant is %s, same as the new: %v", h.Tenant.Life(), h.Tenant == s.Tenants().Lookup(tn))
		}
		return h, tok, prep, gid
	}
	cleanup := func(t *testing.T) {
		if _, err := s.UnregisterTenant("fence", true); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("unregister and register", func(t *testing.T) {
		h, tok, prep, _ := reregister(t)
		defer cleanup(t)
		stale(t, h, tok, tok.ObjectID)
		stale(t, h, prep, tok.ObjectID)
	})

	// The replicated steps of Remove and RemoveGroup name the object and group by id only; the ids
	// restart with each tenant instance, so the leader's check of the old instance must not erase
	// the new one.
	t.Run("RemoveObject across unregister and register", func(t *testing.T) {
		_, _, prep, _ := reregister(t)
		defer cleanup(t)
		err := s.RemoveObject(prep)
		if _, gerr := s.Get(80*sec, prep.Tenant, prep.Key); gerr != nil {
			t.Errorf("RemoveObject with the old instance's object id %d (%v) erased the new instance's object: Get = %v",
				prep.ObjectID, err, gerr)
		}
	})
	t.Run("EraseGroup across unregister and register", func(t *testing.T) {
		_, _, _, gid := reregister(t)
		defer cleanup(t)
		n, err := s.EraseGroup(gid)
		if keys, lerr := s.ListGroup("fence", "G"); lerr != nil || len(keys) != 1 {
			t.Errorf("EraseGroup with the old instance's group id %d (erased %d, %v) erased the new instance's group: ListGroup = %q, %v",
				gid.GroupID, n, err, keys, lerr)
		}
	})
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestGetVsPrepareRemove: a Get racing with the leader's prepare of a removal either sees the object
// and leases it (then the non-force prepare fails with OBJECT_HAS_LEASE and nothing is removed) or
// finds it gone (the prepare marked it and the removal commits); it never returns the replicas of an
// object whose removal then commits.
func TestGetVsPrepareRemove(t *testing.T) {
	const now = 10 * sec
	type outcome struct {
		res GetResult
		err error
	}
	race := func(t *testing.T, get func() (GetResult, error), remove func() (bool, error)) (outcome, bool, error) {
		t.Helper()
		start := make(chan struct{})
		gc := make(chan outcome, 1)
		rc := make(chan error, 1)
		var removed atomic.Bool
		go func() {
			<-start
			res, err := get()
			gc <- outcome{res, err}
		}()
		go func() {
			<-start
			ok, err := remove()
			removed.Store(ok)
			rc <- err
		}()
		close(start)
		g, ok1 := await(t, gc, 10*time.Second, "Get")
		r, ok2 := await(t, rc, 10*time.Second, "prepare and commit")
		if !ok1 || !ok2 {
			t.FailNow()
		}
		return g, removed.Load(), r
	}
	judge := func(t *testing.T, round int, g outcome, removed bool, rerr error) {
		t.Helper()
		switch {
		case g.err == nil && len(g.res.Replicas) > 0:
			if removed {
				t.Fatalf("round %d: Get returned %d replicas of an object whose removal then committed", round, len(g.res.Replicas))
			}
			wantReason(t, rerr, ObjectHasLease)
		case ReasonOf(g.err) == ObjectNotFound:
			if !removed || rerr != nil {
				t.Fatalf("round %d: Get found nothing, but the removal did not commit: %v", round, rerr)
			}
		default:
			t.Fatalf("round %d: Get = %d replicas, %v", round, len(g.res.Replicas), g.err)
		}
	}

	t.Run("object", func(t *testing.T) {
		s := newTestStore(t)
		mount(t, s, 1, alloc.TierMemory, 1<<20)
		seen := map[bool]int{}
		for i := range 300 {
			key := fmt.Sprintf("r%d", i)
			put(t, s, sec, "", key, "", 100)
			g, removed, rerr := race(t,
				func() (GetResult, error) { return getSettled(s, now, key) },
				func() (bool, error) {
					tok, err := s.PrepareRemove(now, "", key, false)
					if err != nil {
						return false, err
					}
					// The replicated step, as the leader proposes it after a successful prepare.
					if errs := s.EraseTokens([]ObjectToken{tok}, false); errs[0] != nil {
						s.ClearMarks([]ObjectToken{tok})
						return false, errs[0]
					}
					return true, nil
				})
			judge(t, i, g, removed, rerr)
			seen[removed]++
			_, err := s.Get(now, "", key)
			if removed {
				wantReason(t, err, ObjectNotFound)
			} else if err != nil {
				t.Fatalf("round %d: object gone after a failed removal: %v", i, err)
			}
		}
		t.Logf("removed first %d times, leased first %d times", seen[true], seen[false])
		if err := s.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("group member", func(t *testing.T) {
		s := newTestStore(t)
		mount(t, s, 1, alloc.TierMemory, 1<<20)
		for i := range 150 {
			group := fmt.Sprintf("G%d", i)
			var members []string
			for j := range 3 {
				k := fmt.Sprintf("g%d-%d", i, j)
				members = append(members, k)
				put(t, s, sec, "", k, group, 100)
			}
			key := members[i%3]
			g, removed, rerr := race(t,
				func() (GetResult, error) { return getSettled(s, now, key) },
				func() (bool, error) {
					gid, toks, err := s.PrepareRemoveGroup(now, "", group, false)
					if err != nil {
						return false, err
					}
					if _, err := s.EraseGroup(gid); err != nil {
						s.ClearMarks(toks)
						return false, err
					}
					return true, nil
				})
			judge(t, i, g, removed, rerr)
		}
		if err := s.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	})

	// The leader checked the group's members (none leased) and proposed its removal; before that
	// commits, a new member joins and is read. The commit must not erase the member that was read.
	t.Run("member joins after prepare", func(t *testing.T) {
		s := newTestStore(t)
		mount(t, s, 1, alloc.TierMemory, 1<<20)
		put(t, s, sec, "", "m1", "G", 100)
		put(t, s, sec, "", "m2", "G", 100)
		gid, toks, err := s.PrepareRemoveGroup(now, "", "G", false)
		if err != nil {
			t.Fatal(err)
		}
		put(t, s, now, "", "m3", "G", 100) // replicated before the removal commits
		res, err := s.Get(now, "", "m3")
		if err != nil || len(res.Replicas) == 0 {
			t.Fatalf("Get m3: %v", err)
		}
		n, err := s.EraseGroup(gid)
		if err != nil {
			s.ClearMarks(toks)
		}
		if _, gerr := s.Get(now+sec, "", "m3"); ReasonOf(gerr) == ObjectNotFound {
			t.Errorf("Get returned m3's replicas and leased it, then the group removal prepared before m3 joined erased it (EraseGroup = %d, %v)", n, err)
		}
		if err := s.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	})
}

// getSettled is a Get as the server serves it: asked again while the object's removal is being
// committed (ErrUnlinkPending), which ends as soon as the racing removal commits or fails.
func getSettled(s *Store, now int64, key string) (GetResult, error) {
	for {
		g, err := s.Get(now, "", key)
		if !errors.Is(err, ErrUnlinkPending) {
			return g, err
		}
		runtime.Gosched()
	}
}
