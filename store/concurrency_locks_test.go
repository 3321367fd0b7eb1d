package store

import (
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

// Concurrency tests of the locks: independence of objects sharing a route shard, and no deadlock of
// transactions on overlapping key sets. The rules these tests follow and their helpers are in
// concurrency_test.go.

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
