package store

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"metad/store/alloc"
)

// Concurrency tests of removal racing other work: handles and tokens kept across the erase and
// recreation of a key or a tenant, and a Get racing the prepare of a removal. The rules these tests
// follow and their helpers are in concurrency_test.go.

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
