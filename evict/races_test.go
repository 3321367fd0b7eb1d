package evict

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
)

// fill95 puts 95 objects leased oldest first in key order (k000 oldest) and sets the clock past
// their leases: a memory round then wants the 10 oldest.
func fill95(x *fixture, opts func(i int) []putOpt) {
	x.t.Helper()
	for i := range 95 {
		var o []putOpt
		if opts != nil {
			o = opts(i)
		}
		x.put(key(i), o...)
	}
	for i := range 95 {
		x.lease("", key(i), t0+int64(i+1)*int64(time.Millisecond))
	}
	x.clock.Store(evalAt)
}

// TestGetAfterSelection: a Get that leases a selected object after the census and before its
// revalidation keeps it (the next oldest goes instead); a Get after the mark finds it gone.
func TestGetAfterSelection(t *testing.T) {
	x := newFixture(t, nil)
	fill95(x, nil)
	x.ev.afterCensus = func(pass1, _ []*unit) {
		if pass1[0].key() != key(0) {
			t.Errorf("oldest selected is %s", pass1[0].key())
		}
		x.lease("", key(0), evalAt)
	}
	var afterMark []error
	x.ev.beforePropose = func(toks []store.ObjectToken) {
		for _, tok := range toks {
			_, err := x.s.Get(evalAt, "", tok.Key)
			afterMark = append(afterMark, err)
		}
	}
	x.memoryRound()
	if !x.exists("", key(0)) {
		t.Fatal("an object leased after selection was evicted")
	}
	for i := 1; i <= 10; i++ {
		if x.exists("", key(i)) {
			t.Fatalf("%s should have gone in place of the leased one", key(i))
		}
	}
	if len(afterMark) != 10 {
		t.Fatalf("%d marked objects read", len(afterMark))
	}
	for _, err := range afterMark {
		if !errors.Is(err, store.ErrUnlinkPending) {
			t.Fatalf("a Get of a marked object: %v, want ErrUnlinkPending (ask again)", err)
		}
	}
	x.check()
}

// TestVersionMovedIsSkipped: a PutEnd of another tier, or an upsert, between the mark and the apply
// moves the object's version; apply skips it and it survives, unmarked. The same changes between
// census and revalidation are caught by the revalidation.
func TestVersionMovedIsSkipped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		atMark bool // change between mark and apply (else between census and revalidation)
		change func(x *fixture)
	}{
		{"PutEnd at apply", true, func(x *fixture) { x.putEndNOF(key(0)) }},
		{"upsert at apply", true, func(x *fixture) { x.upsert(key(0)) }},
		{"PutEnd before revalidation", false, func(x *fixture) { x.putEndNOF(key(0)) }},
		{"upsert before revalidation", false, func(x *fixture) { x.upsert(key(0)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newFixture(t, nil)
			x.mount(nofSeg, alloc.TierNOF, slots*slot)
			// k000 (the oldest) has a COMPLETE memory replica and a PROCESSING NOF one.
			x.start(key(0), withNOF)
			if err := x.s.PutEnd(t0, store.PutEndRequest{Client: client, Key: key(0), Tier: alloc.TierMemory}); err != nil {
				t.Fatal(err)
			}
			for i := 1; i < 95; i++ {
				x.put(key(i))
			}
			for i := range 95 {
				x.lease("", key(i), t0+int64(i+1)*int64(time.Millisecond))
			}
			x.clock.Store(evalAt)
			var version uint64
			_ = x.s.WithObject("", key(0), func(o *store.LockedObject) error { version = o.State().Version; return nil })
			done := false
			if tc.atMark {
				x.node.beforeApply = func(*metadv1.Command) {
					if !done {
						done = true
						tc.change(x)
					}
				}
			} else {
				x.ev.afterCensus = func(p1, _ []*unit) { tc.change(x) }
			}
			x.memoryRound()
			var now uint64
			if err := x.s.WithObject("", key(0), func(o *store.LockedObject) error { now = o.State().Version; return nil }); err != nil {
				t.Fatalf("%s was evicted although its version moved: %v", key(0), err)
			}
			if now == version {
				t.Fatal("the change did not move the version")
			}
			x.check()
		})
	}
}

func (x *fixture) putEndNOF(k string) {
	x.t.Helper()
	if err := x.s.PutEnd(evalAt, store.PutEndRequest{Client: client, Key: k, Tier: alloc.TierNOF}); err != nil {
		x.t.Fatalf("PutEnd NOF %q: %v", k, err)
	}
}

func (x *fixture) upsert(k string) {
	x.t.Helper()
	req := store.PutStartRequest{Client: client, Key: k, Size: slot, Config: store.ReplicaConfig{Memory: 1}}
	if _, err := x.s.UpsertStart(evalAt, 2, req); err != nil {
		// The NOF write of k000 may still be in progress: finish it first.
		x.putEndNOF(k)
		if _, err = x.s.UpsertStart(evalAt, 2, req); err != nil {
			x.t.Fatalf("UpsertStart %q: %v", k, err)
		}
	}
	if err := x.s.UpsertEnd(evalAt, store.PutEndRequest{Client: client, Key: k}); err != nil {
		x.t.Fatalf("UpsertEnd %q: %v", k, err)
	}
}

// TestEraseAndRecreateSurvives: the selected object is erased and a new one created under its key,
// between census and revalidation, or between mark and apply; the new object survives.
func TestEraseAndRecreateSurvives(t *testing.T) {
	for _, atMark := range []bool{false, true} {
		t.Run(fmt.Sprintf("at apply %v", atMark), func(t *testing.T) {
			x := newFixture(t, nil)
			fill95(x, nil)
			var oldID uint64
			_ = x.s.WithObject("", key(0), func(o *store.LockedObject) error { oldID = o.State().ID; return nil })
			recreate := func() {
				// The replicated erase ignores the leader's mark, as a RemoveObject from the log would.
				if err := x.s.RemoveObject(store.ObjectToken{Tenant: store.DefaultTenant, Key: key(0), ObjectID: oldID}); err != nil {
					t.Errorf("remove: %v", err)
				}
				x.put(key(0))
			}
			if atMark {
				once := sync.Once{}
				x.node.beforeApply = func(*metadv1.Command) { once.Do(recreate) }
			} else {
				x.ev.afterCensus = func(_, _ []*unit) { recreate() }
			}
			x.memoryRound()
			var id uint64
			if err := x.s.WithObject("", key(0), func(o *store.LockedObject) error { id = o.State().ID; return nil }); err != nil {
				t.Fatalf("the recreated object was evicted: %v", err)
			}
			if id == oldID {
				t.Fatal("not recreated")
			}
			x.check()
		})
	}
}

// TestFailedProposalClearsMarks: a proposal that fails leaves every object in place and unmarked;
// with no free slot (or not leader) the round stops holding nothing.
func TestFailedProposalClearsMarks(t *testing.T) {
	x := newFixture(t, nil)
	fill95(x, nil)
	x.node.fail.Store(failDefinite)
	sp := x.ev.watermarkSpec(x.s, KindMemory, false)
	if _, err := x.ev.round(context.Background(), x.s, sp); err == nil {
		t.Fatal("round with a failing proposer succeeded")
	}
	if len(x.keys("")) != 95 {
		t.Fatal("objects evicted by a failed proposal")
	}
	x.check()
	x.node.fail.Store(failNone)
	x.node.noSlot.Store(true)
	if _, err := x.ev.round(context.Background(), x.s, sp); !errors.Is(err, ErrNoSlot) {
		t.Fatalf("round without a slot: %v", err)
	}
	x.node.noSlot.Store(false)
	x.node.leader.Store(false)
	if _, err := x.ev.round(context.Background(), x.s, sp); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("round on a follower: %v", err)
	}
	if len(x.keys("")) != 95 {
		t.Fatal("objects evicted without a slot")
	}
	x.check()
	x.node.leader.Store(true)
	if out := x.memoryRound(); out.objects != 10 {
		t.Fatalf("after recovery: %d evicted", out.objects)
	}
	x.check()
}

// TestConcurrentReadersKeepTheirReplicas: readers Get while writers fill memory and the loop
// evicts. The clock stands still, so every lease granted holds to the end: every object a reader
// got replicas of must still exist with exactly those replicas (its extents were never freed, so
// never handed to a writer), and the store's extents never overlap.
func TestConcurrentReadersKeepTheirReplicas(t *testing.T) {
	x := newFixture(t, func(c *Config) { c.BusyInterval = time.Millisecond; c.IdleInterval = time.Millisecond })
	x.clock.Store(evalAt)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- x.ev.Run(ctx) }()

	const writers, perWriter, readers = 2, 400, 4
	var written [writers]atomic.Int64
	var held sync.Map // key -> []store.Replica a reader got
	var reads, readHits atomic.Int64
	var wg, rg sync.WaitGroup
	stop := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				k := fmt.Sprintf("w%d-%04d", w, i)
				// Under the fake node's apply lock: the store's mutations feed the FSM's event
				// sink, which (as in a member) only one applier at a time may use.
				x.node.mu.Lock()
				_, err := x.s.PutStart(t0, uint64(i), store.PutStartRequest{Client: client, Key: k, Size: slot, Config: store.ReplicaConfig{Memory: 1}})
				if err == nil {
					err = x.s.PutEnd(t0, store.PutEndRequest{Client: client, Key: k})
				}
				x.node.mu.Unlock()
				if err != nil && store.ReasonOf(err) != store.NoAvailableHandle {
					t.Errorf("put %s: %v", k, err)
				}
				written[w].Store(int64(i + 1))
			}
		}()
	}
	for r := range readers {
		rg.Add(1)
		go func() {
			defer rg.Done()
			rnd := rand.New(rand.NewPCG(uint64(r), 9))
			for {
				select {
				case <-stop:
					return
				default:
				}
				w := rnd.IntN(writers)
				n := written[w].Load()
				if n == 0 {
					continue
				}
				i := rnd.Int64N(n)
				if i%4 != 0 { // read a quarter of the keys, so the rest stay evictable
					continue
				}
				k := fmt.Sprintf("w%d-%04d", w, i)
				res, err := x.s.Get(evalAt, "", k)
				if errors.Is(err, store.ErrUnlinkPending) {
					continue // marked by a round whose proposal is in flight: read again, as the server does
				}
				reads.Add(1)
				switch store.ReasonOf(err) {
				case store.OK:
					readHits.Add(1)
					if prev, loaded := held.LoadOrStore(k, res.Replicas); loaded && !sameReplicas(prev.([]store.Replica), res.Replicas) {
						t.Errorf("%s: replicas changed under a lease", k)
					}
				case store.ObjectNotFound:
				default:
					t.Errorf("Get %s: %v", k, err)
				}
			}
		}()
	}
	wg.Wait()
	waitFor(t, "memory back under the watermark", 5*time.Second, func() bool { return x.usedSlots() <= 90 })
	// On a busy machine the writers can finish before a reader ran: let the readers lease something.
	waitFor(t, "a read that found its object", 5*time.Second, func() bool { return readHits.Load() > 0 })
	close(stop)
	rg.Wait()
	cancel()
	if err := <-runDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	checked := 0
	held.Range(func(k, v any) bool {
		checked++
		err := x.s.WithObject("", k.(string), func(o *store.LockedObject) error {
			if !sameReplicas(v.([]store.Replica), o.State().Replicas) {
				t.Errorf("%s: replicas changed", k)
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s was evicted while a reader held its lease: %v", k, err)
		}
		return true
	})
	evicted := writers*perWriter - len(x.keys(""))
	t.Logf("%d reads (%d hits), %d leased objects kept, %d objects evicted", reads.Load(), readHits.Load(), checked, evicted)
	if evicted == 0 || checked == 0 {
		t.Fatal("the test exercised nothing")
	}
	x.check()
}

func sameReplicas(a, b []store.Replica) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Extent != b[i].Extent || a[i].ID != b[i].ID {
			return false
		}
	}
	return true
}

// TestUnknownOutcomeKeepsMarks: when a proposal's outcome is unknown, the marks stay (a Get must not
// lease what the entry may still evict) until the next term's ResetSoftState; a node that no longer
// leads serves no read that looks at them, and clears them when it takes office again.
func TestUnknownOutcomeKeepsMarks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fail    int32
		leader  bool
		evicted int
		marked  int
	}{
		{"never applied, still leader", failUnknown, true, 0, 10},
		{"applied, still leader", failUnknownApplied, true, 10, 0},
		{"never applied, leadership lost", failUnknown, false, 0, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newFixture(t, nil)
			fill95(x, nil)
			x.node.fail.Store(tc.fail)
			x.node.beforeApply = func(*metadv1.Command) { x.node.leader.Store(tc.leader) }
			sp := x.ev.watermarkSpec(x.s, KindMemory, false)
			if _, err := x.ev.round(context.Background(), x.s, sp); !errors.Is(err, ha.ErrUnknown) {
				t.Fatalf("round: %v", err)
			}
			if n := 95 - len(x.keys("")); n != tc.evicted {
				t.Fatalf("%d evicted, want %d", n, tc.evicted)
			}
			if n := marks(x.s); n != tc.marked {
				t.Fatalf("%d marks, want %d", n, tc.marked)
			}
			if tc.marked > 0 {
				if _, err := x.s.Get(evalAt, "", key(0)); !errors.Is(err, store.ErrUnlinkPending) {
					t.Fatalf("a marked object was readable: %v", err)
				}
			}
			x.s.ResetSoftState(evalAt) // the next term
			x.check()
		})
	}
}
