package evict

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"metad/store"
)

// evalAt is when the tests rank: every lease granted at t0 + a few ms has expired, soft pins (24 h)
// have not.
const evalAt = t0 + int64(time.Hour)

// fillLeased puts n objects and leases them in a random order; it returns the keys oldest lease first.
func fillLeased(x *fixture, n int, seed uint64, opts func(i int) []putOpt) []string {
	x.t.Helper()
	for i := range n {
		var o []putOpt
		if opts != nil {
			o = opts(i)
		}
		x.put(key(i), o...)
	}
	order := rand.New(rand.NewPCG(seed, 1)).Perm(n)
	keys := make([]string, n)
	for rank, i := range order {
		x.lease("", key(i), t0+int64(rank+1)*int64(time.Millisecond))
		keys[rank] = key(i)
	}
	return keys
}

func gone(x *fixture, keys []string) []string {
	var out []string
	for _, k := range keys {
		if !x.exists("", k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func sorted(ks []string) []string { ks = slices.Clone(ks); slices.Sort(ks); return ks }

// TestRankingOldestLeaseFirst: at low and high fill ratios a round evicts exactly the target's worth
// of objects, and exactly those with the oldest leases.
func TestRankingOldestLeaseFirst(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fill, want int // objects stored; objects the round must evict (target in slots)
		flag       bool
	}{
		{"just over the watermark", 91, 6, false},  // target max(5, 1+5)
		{"over by five", 95, 10, false},            // max(5, 5+5)
		{"nearly full", 99, 14, false},             // max(5, 9+5)
		{"full", 100, 15, false},                   // max(5, 10+5)
		{"at the watermark", 90, 0, false},         // not over: nothing
		{"allocation failed at half", 50, 5, true}, // flagged: target = ratio
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newFixture(t, nil)
			order := fillLeased(x, tc.fill, uint64(tc.fill), nil)
			if tc.flag {
				if _, err := x.s.PutStart(t0, 1, store.PutStartRequest{Client: client, Key: "too-big", Size: slots * slot,
					Config: store.ReplicaConfig{Memory: 1}}); store.ReasonOf(err) != store.NoAvailableHandle {
					t.Fatalf("oversized put: %v", err)
				}
			}
			x.clock.Store(evalAt)
			out := x.memoryRound()
			if got, want := gone(x, order), sorted(order[:tc.want]); !slices.Equal(got, want) {
				t.Fatalf("evicted %v, want the %d oldest %v", got, tc.want, want)
			}
			if out.objects != tc.want || x.usedSlots() != uint64(tc.fill-tc.want) {
				t.Fatalf("round says %d objects, %d slots used; want %d evicted", out.objects, x.usedSlots(), tc.want)
			}
			x.check()
		})
	}
}

// TestRankingFreshWriteAfterOldRead: a block just written and never read ranks by its write time,
// so blocks read (and expired) before it go first; it is not taken as the oldest of all.
func TestRankingFreshWriteAfterOldRead(t *testing.T) {
	x := newFixture(t, nil)
	ms := int64(time.Millisecond)
	var read, fresh []string
	for i := range 50 { // written at t0, read at t0 + 1..50 ms: leases end by t0 + 10.05 s
		x.put(key(i))
		read = append(read, key(i))
	}
	for i, k := range read {
		x.lease("", k, t0+int64(i+1)*ms)
	}
	for i := 50; i < 95; i++ { // written at t0 + 30 s, long after those leases expired, never read
		x.putAt(key(i), t0+30*int64(time.Second)+int64(i)*ms)
		fresh = append(fresh, key(i))
	}
	x.clock.Store(evalAt)
	out := x.memoryRound() // 95 slots: target 10
	if got := gone(x, fresh); len(got) != 0 {
		t.Fatalf("fresh objects evicted before older reads: %v", got)
	}
	if got, want := gone(x, read), sorted(read[:10]); !slices.Equal(got, want) || out.objects != 10 {
		t.Fatalf("evicted %v (%d objects), want the 10 read longest ago %v", got, out.objects, want)
	}
	x.check()
}

// TestOversizeAllocationEvictsNothing: a put larger than every MEMORY segment fails, and since no
// amount of freed memory could place it, it raises no eviction; a put that fits the segment but
// finds no room does.
func TestOversizeAllocationEvictsNothing(t *testing.T) {
	x := newFixture(t, nil)
	order := fillLeased(x, 50, 50, nil)
	x.clock.Store(evalAt)
	for _, size := range []uint64{slots*slot + 1, 1 << 40} {
		if _, err := x.s.PutStart(evalAt, 1, store.PutStartRequest{Client: client, Key: "too-big", Size: size,
			Config: store.ReplicaConfig{Memory: 1}}); store.ReasonOf(err) != store.NoAvailableHandle {
			t.Fatalf("put of %d bytes: %v", size, err)
		}
		if out := x.memoryRound(); out.objects != 0 || x.usedSlots() != 50 {
			t.Fatalf("put of %d bytes (segment %d) evicted %d objects", size, slots*slot, out.objects)
		}
	}
	if _, err := x.s.PutStart(evalAt, 1, store.PutStartRequest{Client: client, Key: "fits", Size: slots * slot,
		Config: store.ReplicaConfig{Memory: 1}}); store.ReasonOf(err) != store.NoAvailableHandle {
		t.Fatalf("put of the segment's size: %v", err)
	}
	out := x.memoryRound() // flagged: target = ratio, 5 slots
	if got, want := gone(x, order), sorted(order[:5]); !slices.Equal(got, want) || out.objects != 5 {
		t.Fatalf("after a put that fits: evicted %v (%d objects), want the 5 oldest %v", got, out.objects, want)
	}
	x.check()
}

// TestSoftPinnedLast: soft-pinned objects go only after every unpinned candidate, only when pass 1
// fell short of the lower bound, and only when allowed.
func TestSoftPinnedLast(t *testing.T) {
	t.Run("unpinned suffice", func(t *testing.T) {
		x := newFixture(t, nil)
		// The 20 oldest leases are soft-pinned; the 10 oldest unpinned must go instead.
		perm := rand.New(rand.NewPCG(7, 1)).Perm(95) // perm[i]: lease rank of key(i)
		order := make([]string, 95)
		for i, rank := range perm {
			order[rank] = key(i)
			if rank < 20 {
				x.put(key(i), softPinned)
			} else {
				x.put(key(i))
			}
		}
		for rank, k := range order {
			x.lease("", k, t0+int64(rank+1)*int64(time.Millisecond))
		}
		x.clock.Store(evalAt)
		x.memoryRound()
		if got, want := gone(x, order), sorted(order[20:30]); !slices.Equal(got, want) {
			t.Fatalf("evicted %v, want the 10 oldest unpinned %v", got, want)
		}
		x.check()
	})
	for _, allow := range []bool{true, false} {
		name := map[bool]string{true: "short of lower: soft-pinned next", false: "short of lower: not allowed"}[allow]
		t.Run(name, func(t *testing.T) {
			x := newFixture(t, func(c *Config) { c.AllowEvictSoftPinned = allow })
			// 95 objects: 3 unpinned (the youngest leases), 92 soft-pinned. target 10, lower 5:
			// pass 1 frees 3 < 5, so pass 2 takes the 7 oldest soft-pinned (when allowed).
			var order []string
			for i := range 95 {
				if i >= 92 {
					x.put(key(i))
				} else {
					x.put(key(i), softPinned)
				}
			}
			for i := range 95 {
				x.lease("", key(i), t0+int64(i+1)*int64(time.Millisecond))
				order = append(order, key(i))
			}
			x.clock.Store(evalAt)
			x.memoryRound()
			want := sorted(order[92:])
			if allow {
				want = sorted(append(slices.Clone(order[:7]), order[92:]...))
			}
			if got := gone(x, order); !slices.Equal(got, want) {
				t.Fatalf("evicted %v, want %v", got, want)
			}
			x.check()
		})
	}
}

// TestNeverHardPinnedLeasedOrProcessing: the oldest objects are hard-pinned, leased at the time of
// the round, or still PROCESSING; none of them goes, the next oldest do.
func TestNeverHardPinnedLeasedOrProcessing(t *testing.T) {
	x := newFixture(t, nil)
	for i := range 90 {
		if i < 5 {
			x.put(key(i), hardPinned)
		} else {
			x.put(key(i))
		}
	}
	for i := 90; i < 95; i++ {
		x.start(key(i)) // PROCESSING: never leased, so the oldest of all
	}
	for i := range 90 {
		x.lease("", key(i), t0+int64(i+1)*int64(time.Millisecond))
	}
	x.clock.Store(evalAt)
	for i := 5; i < 10; i++ {
		x.lease("", key(i), evalAt) // leased now
	}
	x.memoryRound()
	var want []string
	for i := 10; i < 20; i++ {
		want = append(want, key(i))
	}
	var all []string
	for i := range 95 {
		all = append(all, key(i))
	}
	if got := gone(x, all); !slices.Equal(got, want) {
		t.Fatalf("evicted %v, want %v", got, want)
	}
	x.check()
}

// TestGroupsWholeOrNotAtAll: a group with one leased member is skipped whole (younger singletons go
// instead); a group whose members are all evictable goes whole.
func TestGroupsWholeOrNotAtAll(t *testing.T) {
	x := newFixture(t, nil)
	// g-leased: 4 members with the oldest leases, one of them leased at the round.
	// g-free:   4 members with the next oldest leases, all expired.
	// then 87 singletons. 95 objects: target 10 slots = g-free (4) + the 6 oldest singletons.
	var all []string
	add := func(k string, opts ...putOpt) { x.put(k, opts...); all = append(all, k) }
	for i := range 4 {
		add("a-leased-"+key(i), inGroup("g-leased"))
	}
	for i := range 4 {
		add("b-free-"+key(i), inGroup("g-free"))
	}
	for i := range 87 {
		add(key(i))
	}
	for i, k := range all {
		x.lease("", k, t0+int64(i+1)*int64(time.Millisecond))
	}
	x.clock.Store(evalAt)
	// Lease one member alone (a Get would refresh the whole group).
	if err := x.s.WithObject("", "a-leased-"+key(2), func(o *store.LockedObject) error {
		o.ExtendLease(evalAt + int64(x.s.LeaseTTL()))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	x.memoryRound()
	want := sorted(append(slices.Clone(all[4:8]), all[8:14]...))
	if got := gone(x, all); !slices.Equal(got, want) {
		t.Fatalf("evicted %v, want %v", got, want)
	}
	if _, err := x.s.ListGroup("", "g-free"); store.ReasonOf(err) != store.ObjectNotFound {
		t.Fatalf("g-free still listed: %v", err)
	}
	if ks, err := x.s.ListGroup("", "g-leased"); err != nil || len(ks) != 4 {
		t.Fatalf("g-leased: %v %v", ks, err)
	}
	x.check()
}

// TestGroupRankedByLatestLease: a group is as recently used as its most recently leased member, so
// a group with one old and one young lease ranks after the singletons in between.
func TestGroupRankedByLatestLease(t *testing.T) {
	x := newFixture(t, nil)
	x.put("gm-old", inGroup("gm"))
	x.put("gm-young", inGroup("gm"))
	for i := range 93 {
		x.put(key(i))
	}
	ms := int64(time.Millisecond)
	// Lease members alone (a Get of a member would refresh the whole group), as a Get at t0+1ms
	// and one at t0+60ms would.
	ttl := int64(x.s.LeaseTTL())
	for k, at := range map[string]int64{"gm-old": t0 + ms, "gm-young": t0 + 60*ms} {
		if err := x.s.WithObject("", k, func(o *store.LockedObject) error { o.ExtendLease(at + ttl); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	for i := range 93 {
		x.lease("", key(i), t0+int64(i+2)*ms)
		all = append(all, key(i))
	}
	x.clock.Store(evalAt)
	x.memoryRound()
	if got, want := gone(x, append(all, "gm-old", "gm-young")), sorted(all[:10]); !slices.Equal(got, want) {
		t.Fatalf("evicted %v, want %v", got, want)
	}
	x.check()
}
