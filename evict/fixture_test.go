package evict

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"metad/fsm"
	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
)

// A single store behind a fake node whose proposer applies each command through a real fsm.FSM, so
// the kernel and the replicated apply (store.EvictUnits) are tested without Raft.

const (
	slot  = 64 << 10 // one object: 64 KiB, one MEMORY replica
	slots = 100      // the MEMORY segment holds 100 objects
	t0    = int64(1_700_000_000) * int64(time.Second)
)

var (
	client = alloc.ID{0xc1, 15: 1}
	memSeg = alloc.ID{0x5e, 15: 1}
	nofSeg = alloc.ID{0x5e, 15: 2}
)

type fakeNode struct {
	f           *fsm.FSM
	mu          sync.Mutex // apply is single-threaded, as Raft's apply goroutine is
	index       uint64
	leader      atomic.Bool
	noSlot      atomic.Bool
	fail        atomic.Int32 // failNone, failDefinite, failUnknown, failUnknownApplied
	beforeApply func(cmd *metadv1.Command)
	clock       *atomic.Int64
	proposals   atomic.Int64
}

func (n *fakeNode) Store() *store.Store { return n.f.Store() }
func (n *fakeNode) IsLeader() bool      { return n.leader.Load() }

func (n *fakeNode) TryReserve() (Slot, bool) {
	if !n.leader.Load() || n.noSlot.Load() {
		return nil, false
	}
	return &fakeSlot{n: n}, true
}

type fakeSlot struct {
	n    *fakeNode
	used bool
}

func (s *fakeSlot) Release() { s.used = true }

func (s *fakeSlot) Propose(ctx context.Context, cmd *metadv1.Command) (store.Result, error) {
	if s.used {
		panic("slot used twice")
	}
	s.used = true
	n := s.n
	n.proposals.Add(1)
	if n.beforeApply != nil {
		n.beforeApply(cmd)
	}
	switch n.fail.Load() {
	case failDefinite:
		return store.Result{}, fmt.Errorf("fake: refused before the log: %w", ha.ErrNotLeader)
	case failUnknown:
		return store.Result{}, fmt.Errorf("fake: %w", ha.ErrUnknown)
	case failUnknownApplied:
		n.apply(cmd)
		return store.Result{}, fmt.Errorf("fake: %w", ha.ErrUnknown)
	}
	return n.apply(cmd), nil
}

// Proposal outcomes the fake proposer can be told to produce.
const (
	failNone           = iota
	failDefinite       // refused before reaching the log
	failUnknown        // outcome unknown, and in fact never applied
	failUnknownApplied // outcome unknown, and in fact applied
)

// apply appends cmd as one log entry and applies it.
func (n *fakeNode) apply(cmd *metadv1.Command) store.Result {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.index++
	data, err := fsm.EncodeEnvelope(&metadv1.Envelope{LeaderTimeUnixNano: n.clock.Load(), Seed: n.index, Commands: []*metadv1.Command{cmd}})
	if err != nil {
		panic(err)
	}
	res := n.f.Apply(&raft.Log{Index: n.index, Term: 1, Type: raft.LogCommand, Data: data}).(*fsm.EntryResult)
	return res.Results[0]
}

type fixture struct {
	t     *testing.T
	node  *fakeNode
	ev    *Evictor
	s     *store.Store
	clock atomic.Int64
}

func newFixture(t *testing.T, tweak func(*Config)) *fixture {
	t.Helper()
	f, err := fsm.New(store.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	x := &fixture{t: t}
	x.clock.Store(t0)
	x.node = &fakeNode{f: f, clock: &x.clock}
	x.node.leader.Store(true)
	cfg := DefaultConfig()
	if tweak != nil {
		tweak(&cfg)
	}
	if x.ev, err = New(cfg, x.node, prometheus.NewRegistry(), nil); err != nil {
		t.Fatal(err)
	}
	x.ev.now = x.clock.Load
	x.s = f.Store()
	x.mount(memSeg, alloc.TierMemory, slots*slot)
	return x
}

func (x *fixture) mount(id alloc.ID, tier alloc.Tier, size uint64) {
	x.t.Helper()
	if _, err := x.s.MountSegment(alloc.Segment{ID: id, Name: "seg", Base: 1 << 32 * uint64(id[15]), Size: size,
		Endpoint: "127.0.0.1:7000", Tier: tier, Owner: client}); err != nil {
		x.t.Fatal(err)
	}
}

type putOpt func(*store.PutStartRequest)

func softPinned(r *store.PutStartRequest) {
	r.Config.SoftPin, r.Config.SoftPinTTL = store.SoftPinEnable, 24*time.Hour
}
func hardPinned(r *store.PutStartRequest) { r.Config.HardPin = true }
func inGroup(g string) putOpt             { return func(r *store.PutStartRequest) { r.Group = g } }
func ofTenant(t string) putOpt            { return func(r *store.PutStartRequest) { r.Tenant = t } }
func withNOF(r *store.PutStartRequest)    { r.Config.NOF = 1 }

// start runs PutStart of one slot-sized object at t0.
func (x *fixture) start(key string, opts ...putOpt) store.PutStartRequest {
	x.t.Helper()
	req := store.PutStartRequest{Client: client, Key: key, Size: slot, Config: store.ReplicaConfig{Memory: 1}}
	for _, o := range opts {
		o(&req)
	}
	if _, err := x.s.PutStart(t0, 1, req); err != nil {
		x.t.Fatalf("PutStart %q: %v", key, err)
	}
	return req
}

// put writes one slot-sized object at t0 (PutStart and PutEnd).
func (x *fixture) put(key string, opts ...putOpt) {
	x.t.Helper()
	x.putAt(key, t0, opts...)
}

// putAt writes one slot-sized object: PutStart at t0, PutEnd at time at.
func (x *fixture) putAt(key string, at int64, opts ...putOpt) {
	x.t.Helper()
	req := x.start(key, opts...)
	if err := x.s.PutEnd(at, store.PutEndRequest{Tenant: req.Tenant, Client: client, Key: key}); err != nil {
		x.t.Fatalf("PutEnd %q: %v", key, err)
	}
}

// lease reads key at time at, which leases it until at + ttl.
func (x *fixture) lease(tenant, key string, at int64) {
	x.t.Helper()
	if _, err := x.s.Get(at, tenant, key); err != nil {
		x.t.Fatalf("Get %q: %v", key, err)
	}
}

func (x *fixture) exists(tenant, key string) bool {
	return x.s.WithObject(tenant, key, func(*store.LockedObject) error { return nil }) == nil
}

// keys returns the tenant's live keys, sorted.
func (x *fixture) keys(tenant string) []string {
	var out []string
	x.s.VisitTenantHandles(tenant, 0, func(hs []store.ObjectHandle) bool {
		for _, h := range hs {
			if h.Life() == store.Active {
				out = append(out, h.Key())
			}
		}
		return true
	})
	slices.Sort(out)
	return out
}

func (x *fixture) usedSlots() uint64 { return x.s.Segments().Used(alloc.TierMemory) / slot }

// check verifies the store's invariants and that no unlink mark is left.
func (x *fixture) check() {
	x.t.Helper()
	if err := x.s.CheckInvariants(); err != nil {
		x.t.Fatal(err)
	}
	if n := marks(x.s); n != 0 {
		x.t.Fatalf("%d unlink marks left", n)
	}
}

func marks(s *store.Store) int {
	n := 0
	s.VisitHandles(0, func(hs []store.ObjectHandle) bool {
		for _, h := range hs {
			if h.Marked() {
				n++
			}
		}
		return true
	})
	return n
}

// memoryRound runs one memory watermark step at the fixture's clock.
func (x *fixture) memoryRound() outcome {
	x.t.Helper()
	_, wanted := x.s.EvictionWanted()
	sp := x.ev.watermarkSpec(x.s, KindMemory, wanted)
	if sp == nil {
		return outcome{}
	}
	out, err := x.ev.round(context.Background(), x.s, sp)
	if err != nil {
		x.t.Fatalf("round: %v", err)
	}
	return out
}

func key(i int) string { return fmt.Sprintf("k%03d", i) }

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
