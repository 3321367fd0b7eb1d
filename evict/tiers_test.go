package evict

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"metad/store"
	"metad/store/alloc"
)

var stagingSeg = alloc.ID{0x5e, 15: 9}

func prefer(seg alloc.ID) putOpt {
	return func(r *store.PutStartRequest) { r.Config.Preferred = []alloc.ID{seg} }
}

// offload records a LOCAL_DISK replica of each key on the fixture client's SSD.
func (x *fixture) offload(keys ...string) {
	x.t.Helper()
	rs := make([]store.OffloadResult, len(keys))
	for i, k := range keys {
		rs[i] = store.OffloadResult{Key: k, Size: slot, Success: true}
	}
	errs, err := x.s.OffloadDone(t0, "", client, rs)
	if err != nil {
		x.t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			x.t.Fatalf("offload %q: %v", keys[i], err)
		}
	}
}

// TestEvictionAtADiskOnlyMix is the old master's bug as a regression test: with 95 % of the objects
// on the SSD alone, a memory round over the watermark frees the asked share of memory and no
// more, evicting only memory replicas; the disk-only objects are neither counted nor touched, and an
// evicted object that has a disk copy lives on, readable from it.
func TestEvictionAtADiskOnlyMix(t *testing.T) {
	x := newFixture(t, nil)
	const diskOnly, inMemory = 1805, 95 // 95 % of 1900 objects on disk alone; memory 95 % full
	if _, _, err := x.s.MountLocalDisk(client, (diskOnly+inMemory)*slot, "127.0.0.1:9400", true); err != nil {
		t.Fatal(err)
	}
	// The disk-only objects: written through a staging segment, offloaded, and left on disk alone
	// when the staging segment goes. Their leases are older than every memory object's.
	x.mount(stagingSeg, alloc.TierMemory, diskOnly*slot)
	var disk []string
	for i := range diskOnly {
		k := fmt.Sprintf("disk-%04d", i)
		x.put(k, prefer(stagingSeg))
		disk = append(disk, k)
	}
	x.offload(disk...)
	if _, err := x.s.UnmountSegment(stagingSeg); err != nil {
		t.Fatal(err)
	}
	order := fillLeased(x, inMemory, 7, func(int) []putOpt { return []putOpt{prefer(memSeg)} })
	x.offload(order[:10]...) // the ten oldest memory objects also have a disk copy
	x.clock.Store(evalAt)
	out := x.memoryRound()
	// Over the 90 % watermark by 5 slots: target max(5, 5+5) = 10 slots, the 10 oldest leases.
	if out.objects != 10 || x.usedSlots() != inMemory-10 {
		t.Fatalf("round evicted %d objects, %d slots left; want 10 evicted, %d left", out.objects, x.usedSlots(), inMemory-10)
	}
	for _, k := range order[:10] {
		r, err := x.s.Peek("", k)
		if err != nil || len(r.Replicas) != 1 || r.Replicas[0].Tier != alloc.TierLocalDisk {
			t.Fatalf("%s after the round: %+v, %v; want its disk replica alone", k, r, err)
		}
	}
	for _, k := range order[10:] {
		if !x.exists("", k) {
			t.Fatalf("%s evicted, beyond the target", k)
		}
	}
	for _, k := range disk {
		if r, err := x.s.Peek("", k); err != nil || len(r.Replicas) != 1 {
			t.Fatalf("disk-only %s after the round: %+v, %v", k, r, err)
		}
	}
	if used := x.s.Segments().Used(alloc.TierLocalDisk); used != (diskOnly+10)*slot {
		t.Fatalf("local disk used %d, want %d", used, (diskOnly+10)*slot)
	}
	x.check()
}

// TestOffloadOnEvict: with offload on evict, a memory round over the watermark evicts no object
// its owner would offload; it queues the offloads of the oldest ones, as many as cover its target,
// instead. Once the worker has offloaded them, the next round evicts their memory replicas, and
// they live on on disk.
func TestOffloadOnEvict(t *testing.T) {
	x := newFixture(t, func(c *Config) { c.OffloadOnEvict = true })
	order := fillLeased(x, 95, 3, nil) // before the registration: no offload at write
	if _, _, err := x.s.MountLocalDisk(client, slots*slot, "127.0.0.1:9400", true); err != nil {
		t.Fatal(err)
	}
	if n := x.s.Tasks().PendingTotal(); n != 0 {
		t.Fatalf("%d tasks queued before any round", n)
	}
	x.clock.Store(evalAt)
	out := x.memoryRound()
	if out.objects != 0 || x.usedSlots() != 95 {
		t.Fatalf("the round evicted %d objects (%d slots left) while they wait for their offloads", out.objects, x.usedSlots())
	}
	// The target is 10 slots: the offloads of the 10 oldest (and the selection's spares) are queued.
	queued, err := x.s.Tasks().Fetch(evalAt, client, 1024)
	if err != nil || out.offloads != len(queued) || len(queued) < 10 {
		t.Fatalf("queued %d offloads (round says %d), %v; want the oldest 10 at least", len(queued), out.offloads, err)
	}
	oldest := map[string]bool{}
	for _, k := range order[:10] {
		oldest[k] = true
	}
	var done []store.OffloadResult
	for _, task := range queued {
		delete(oldest, task.Spec.Key)
		done = append(done, store.OffloadResult{Key: task.Spec.Key, Size: task.Spec.Size, Success: true})
	}
	if len(oldest) != 0 {
		t.Fatalf("the oldest objects %v got no offload", oldest)
	}
	if errs, err := x.s.OffloadDone(evalAt, "", client, done); err != nil || slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
		t.Fatal(errs, err)
	}
	out = x.memoryRound()
	if out.objects != 10 || x.usedSlots() != 85 {
		t.Fatalf("after the offloads the round evicted %d objects, %d slots left; want 10 and 85", out.objects, x.usedSlots())
	}
	for _, k := range order[:10] {
		if r, err := x.s.Peek("", k); err != nil || len(r.Replicas) != 1 || r.Replicas[0].Tier != alloc.TierLocalDisk {
			t.Fatalf("%s after the round: %+v, %v; want its disk replica alone", k, r, err)
		}
	}
	x.check()
}

var rootSeg, poolSeg = alloc.ID{0x5f, 15: 1}, alloc.ID{0x5f, 15: 2}

// mountFiles mounts a segment of a file tier (DISK, DFS: base 0) of n slots.
func (x *fixture) mountFiles(id alloc.ID, tier alloc.Tier, n int) {
	x.t.Helper()
	if _, err := x.s.MountSegment(alloc.Segment{ID: id, Name: "files", Size: uint64(n) * slot, Endpoint: "/mnt/shared",
		Tier: tier, Owner: client}); err != nil {
		x.t.Fatal(err)
	}
}

// tierRound runs one watermark round of kind at the fixture's clock.
func (x *fixture) tierRound(kind Kind) outcome {
	x.t.Helper()
	sp := x.ev.watermarkSpec(x.s, kind, false)
	if sp == nil {
		return outcome{}
	}
	out, err := x.ev.round(context.Background(), x.s, sp)
	if err != nil {
		x.t.Fatalf("%s round: %v", kind, err)
	}
	return out
}

func withDFS(r *store.PutStartRequest) { r.Config.DFS = 1 }

// TestDiskAndDFSRounds: a full shared root and a full DFS pool are each evicted down to their
// watermark through the one kernel, oldest lease first; a round drops only its tier's replicas,
// and the objects live on in the others; memory, under its watermark, is not touched.
func TestDiskAndDFSRounds(t *testing.T) {
	x := newFixture(t, nil)
	const n = 20
	x.mountFiles(rootSeg, alloc.TierDisk, n)
	x.mountFiles(poolSeg, alloc.TierDFS, n)
	order := fillLeased(x, n, 11, func(int) []putOpt { return []putOpt{withDFS} })
	x.clock.Store(evalAt)
	if x.tierRound(KindMemory).objects != 0 {
		t.Fatal("a memory round ran under the watermark")
	}
	// DISK: 20 of 20 slots, watermark 0.95 (19), ratio 0.05 (1): target max(1, 1+1) = 2.
	if out := x.tierRound(KindDisk); out.objects != 2 || x.s.Segments().Used(alloc.TierDisk) != (n-2)*slot {
		t.Fatalf("disk round evicted %d, %d bytes left", out.objects, x.s.Segments().Used(alloc.TierDisk))
	}
	// DFS: 20 of 20, watermark 0.90 (18), ratio 1 slot: target max(1, 2+1) = 3.
	if out := x.tierRound(KindDFS); out.objects != 3 || x.s.Segments().Used(alloc.TierDFS) != (n-3)*slot {
		t.Fatalf("dfs round evicted %d, %d bytes left", out.objects, x.s.Segments().Used(alloc.TierDFS))
	}
	for i, k := range order {
		r, err := x.s.Peek("", k)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		var tiers []alloc.Tier
		for _, rep := range r.Replicas {
			tiers = append(tiers, rep.Tier)
		}
		want := []alloc.Tier{alloc.TierMemory, alloc.TierDisk, alloc.TierDFS}
		switch {
		case i < 2:
			want = []alloc.Tier{alloc.TierMemory}
		case i < 3:
			want = []alloc.Tier{alloc.TierMemory, alloc.TierDisk}
		}
		if !slices.Equal(tiers, want) {
			t.Fatalf("%s (rank %d): tiers %v, want %v", k, i, tiers, want)
		}
	}
	if x.usedSlots() != n {
		t.Fatalf("memory holds %d slots, want %d", x.usedSlots(), n)
	}
	x.check()
}

// mountOther mounts a second MEMORY segment of slots objects, owned by a client with no SSD, so that
// an object of two MEMORY replicas has one on an offloading owner's segment and one on this.
func (x *fixture) mountOther() {
	x.t.Helper()
	if _, err := x.s.MountSegment(alloc.Segment{ID: alloc.ID{0x5e, 15: 3}, Name: "other", Base: 3 << 32, Size: slots * slot,
		Endpoint: "127.0.0.1:7001", Tier: alloc.TierMemory, Owner: alloc.ID{0xc1, 15: 2}}); err != nil {
		x.t.Fatal(err)
	}
}

// TestOffloadOnEvictDropsRedundantReplicas: with offload on evict, a memory round keeps each object
// awaiting offload on the replica its offload copies from and evicts its other MEMORY replicas
// (TIERS.md: "pins one memory replica, queues an offload task, and evicts only the redundant
// replicas"), the oldest first and as many as cover the target; no object is erased, and the kept
// replica is the offload task's source.
func TestOffloadOnEvictDropsRedundantReplicas(t *testing.T) {
	x := newFixture(t, func(c *Config) { c.OffloadOnEvict = true })
	x.mountOther()
	// 95 objects of two MEMORY replicas, one on each segment: 190 of 200 slots.
	order := fillLeased(x, 95, 5, func(int) []putOpt {
		return []putOpt{func(r *store.PutStartRequest) { r.Config.Memory = 2 }}
	})
	if _, _, err := x.s.MountLocalDisk(client, slots*slot, "127.0.0.1:9400", true); err != nil {
		t.Fatal(err)
	}
	x.clock.Store(evalAt)
	out := x.memoryRound()
	// The target is 10 % of 200 slots: the 20 oldest lose their replica on the other segment.
	if out.objects != 20 || x.usedSlots() != 170 {
		t.Fatalf("the round trimmed %d objects, %d slots left; want 20 and 170", out.objects, x.usedSlots())
	}
	for i, k := range order {
		r, err := x.s.Peek("", k)
		if err != nil {
			t.Fatalf("%s: %v (no object may be erased)", k, err)
		}
		want := 2
		if i < 20 {
			want = 1
		}
		if len(r.Replicas) != want || (want == 1 && r.Replicas[0].Extent.Segment != memSeg) {
			t.Fatalf("%s (rank %d) after the round: %+v; want %d replicas, the one on the offloading owner's segment kept", k, i, r.Replicas, want)
		}
	}
	queued, err := x.s.Tasks().Fetch(evalAt, client, 1024)
	if err != nil || len(queued) < 20 {
		t.Fatalf("queued %d offloads, %v; want the 20 oldest at least", len(queued), err)
	}
	for _, task := range queued {
		if task.Spec.Source != memSeg {
			t.Fatalf("offload of %s copies from %v, want the kept replica's segment", task.Spec.Key, task.Spec.Source)
		}
	}
	x.check()
}

// TestEvictRedundantRefusals: EvictRedundant refuses, changing nothing, an object on an SSD
// already, one with a single MEMORY replica, and a unit of several tokens; it trims a group member
// on its own.
func TestEvictRedundantRefusals(t *testing.T) {
	x := newFixture(t, func(c *Config) { c.OffloadOnEvict = true })
	x.mountOther()
	two := func(r *store.PutStartRequest) { r.Config.Memory = 2 }
	x.put("single")
	x.put("ondisk", two)
	x.put("member", two, inGroup("g"))
	x.put("member2", two, inGroup("g"))
	if _, _, err := x.s.MountLocalDisk(client, slots*slot, "127.0.0.1:9400", true); err != nil {
		t.Fatal(err)
	}
	x.offload("ondisk")
	tok := func(k string) store.ObjectToken {
		var tk store.ObjectToken
		if err := x.s.WithObject("", k, func(o *store.LockedObject) error { tk = o.Token(); return nil }); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	used := x.usedSlots()
	errs, freed := x.s.EvictRedundant([][]store.ObjectToken{{tok("single")}, {tok("ondisk")}, {tok("member"), tok("member2")}})
	for i, want := range []store.Reason{store.ObjectNotFound, store.ObjectNotFound, store.InvalidParams, store.InvalidParams} {
		if got := store.ReasonOf(errs[i]); got != want {
			t.Fatalf("token %d: %v, want %s", i, errs[i], want)
		}
	}
	if freed != 0 || x.usedSlots() != used {
		t.Fatalf("refused units freed %d bytes (%d -> %d slots)", freed, used, x.usedSlots())
	}
	errs, freed = x.s.EvictRedundant([][]store.ObjectToken{{tok("member")}})
	if errs[0] != nil || freed != slot || x.usedSlots() != used-1 {
		t.Fatalf("trim of a group member: %v, freed %d, %d -> %d slots", errs[0], freed, used, x.usedSlots())
	}
	if r, err := x.s.Peek("", "member"); err != nil || len(r.Replicas) != 1 || r.Replicas[0].Extent.Segment != memSeg {
		t.Fatalf("member after the trim: %+v, %v", r, err)
	}
	x.check()
}
