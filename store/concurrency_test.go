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
