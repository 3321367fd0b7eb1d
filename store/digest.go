package store

import (
	"encoding/binary"
	"runtime"
	"sync"

	"github.com/cespare/xxhash/v2"

	"metad/store/alloc"
)

// Digest is a 128-bit digest of a capture's replicated content: its segments (with the bytes
// each has allocated), its tenants with their id counters, and every object with its key, group,
// state, replicas and task. It leaves out the state epoch (a restore advances it), the tasks,
// drains and arenas (the snapshot header counts them, and their restore checks them against the
// objects), and what the store derives (a segment's free spans, a tenant's group count).
//
// It does not depend on the order of the segments, tenants or objects in the capture (it is a
// sum of one hash per element), so a capture need not be sorted for it, and the store a restore
// builds gives the digest of the capture it was saved from exactly when the two hold the same
// content. It finds mistakes, not attacks: xxHash64 is not cryptographic.
type Digest [16]byte

// Digest computes the capture's Digest, its objects hashed by up to GOMAXPROCS/2 goroutines.
func (c *Capture) Digest() Digest {
	var sum lanes
	h := &hasher{buf: make([]byte, 0, 256)}
	for i := range c.Segments {
		sum.add(hashSegment(h, &c.Segments[i]))
	}
	// Work units of at most digestUnit objects, each knowing its tenant's seed.
	type unit struct {
		seed uint64
		objs []CapturedObject
	}
	var units []unit
	for i := range c.Tenants {
		t := &c.Tenants[i]
		seed := hashTenant(h, t)
		sum.add(seed)
		for objs := t.Objects; len(objs) > 0; {
			n := min(len(objs), digestUnit)
			units = append(units, unit{seed, objs[:n]})
			objs = objs[n:]
		}
	}
	workers := min(max(runtime.GOMAXPROCS(0)/2, 1), len(units))
	parts := make([]lanes, workers)
	sinks := make([]uint64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			h := &hasher{buf: make([]byte, 0, 256)}
			for u := w; u < len(units); u += workers {
				objs := units[u].objs
				for len(objs) > 0 {
					batch := objs[:min(len(objs), digestBatch)]
					objs = objs[len(batch):]
					sinks[w] += touch(batch)
					for j := range batch {
						parts[w].add(hashObject(h, units[u].seed, &batch[j]))
					}
				}
			}
		})
	}
	wg.Wait()
	for _, p := range parts {
		sum.a += p.a
		sum.b += p.b
	}
	var d Digest
	binary.BigEndian.PutUint64(d[:8], sum.a)
	binary.BigEndian.PutUint64(d[8:], sum.b)
	return d
}

// digestBatch is how many objects touch reads ahead of their hashing.
const digestBatch = 32

// touch reads one word of each object's key, state and replicas, level by level, before the
// objects are hashed: the loads of a level do not depend on each other, so the processor waits
// for their cache misses together rather than one object's after another's. The result is
// meaningless; it keeps the loads from being dropped.
func touch(objs []CapturedObject) uint64 {
	var x uint64
	for i := range objs {
		if k := objs[i].Key; len(k) > 0 {
			x += uint64(k[0])
		}
		x += objs[i].State.Size
	}
	for i := range objs {
		if r := objs[i].State.Replicas; len(r) > 0 {
			x += r[0].ID
		}
	}
	return x
}

// digestUnit is how many objects one goroutine hashes before it takes the next unit.
const digestUnit = 1 << 14

// lanes sums element hashes twice, the second time through a mix, so that two changed elements
// must agree in both lanes to cancel out.
type lanes struct{ a, b uint64 }

func (l *lanes) add(h uint64) {
	l.a += h
	l.b += fmix(h ^ 0x9e3779b97f4a7c15)
}

// fmix is MurmurHash3's 64-bit finalizer: every input bit reaches every output bit.
func fmix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// hasher collects an element's fields in a fixed order, each string and slice after its length
// (so that no two different elements give the same bytes), and hashes them with xxHash64.
type hasher struct{ buf []byte }

func (h *hasher) reset(kind uint64) { h.buf = binary.LittleEndian.AppendUint64(h.buf[:0], kind) }

func (h *hasher) sum() uint64 { return xxhash.Sum64(h.buf) }

func (h *hasher) u64(v uint64) { h.buf = binary.LittleEndian.AppendUint64(h.buf, v) }

func (h *hasher) bool(v bool) {
	if v {
		h.buf = append(h.buf, 1)
	} else {
		h.buf = append(h.buf, 0)
	}
}

func (h *hasher) str(s string) {
	h.u64(uint64(len(s)))
	h.buf = append(h.buf, s...)
}

func (h *hasher) id(id alloc.ID) { h.buf = append(h.buf, id[:]...) }

// The element kinds, so that a segment and a tenant of equal words differ.
const (
	kindSegment = iota + 1
	kindTenant
	kindObject
)

func hashSegment(h *hasher, s *alloc.SegmentInfo) uint64 {
	h.reset(kindSegment)
	h.id(s.ID)
	h.str(s.Name)
	h.u64(s.Base)
	h.u64(s.Size)
	h.str(s.Endpoint)
	h.u64(uint64(s.Tier))
	h.id(s.Owner)
	h.bool(s.Offload)
	h.u64(s.Used)
	h.bool(s.Closing)
	h.u64(uint64(s.UnmountAt))
	return h.sum()
}

// hashTenant is the tenant's element hash, and the seed of each of its objects' hashes (an object
// moved to another tenant changes the digest).
func hashTenant(h *hasher, t *TenantCapture) uint64 {
	h.reset(kindTenant)
	h.str(t.Name)
	h.u64(t.Instance)
	h.u64(t.Requested)
	h.u64(t.NextObjectID)
	h.u64(t.NextGroupID)
	h.u64(t.NextReplicaID)
	return h.sum()
}

func hashObject(h *hasher, seed uint64, o *CapturedObject) uint64 {
	h.reset(kindObject)
	h.u64(seed)
	h.str(o.Key)
	group, gid := o.Group()
	h.str(group)
	h.u64(gid)
	st := o.State
	h.u64(st.ID)
	h.u64(st.Version)
	h.u64(st.Size)
	h.id(st.Writer)
	h.u64(uint64(st.PutStart))
	h.u64(uint64(st.SoftPinTTL))
	h.u64(uint64(st.SoftPinDeadline))
	h.u64(uint64(st.DataType))
	h.bool(st.HardPin)
	h.u64(uint64(len(st.Replicas)))
	for i := range st.Replicas {
		r := &st.Replicas[i]
		h.u64(r.ID)
		h.id(r.Extent.Segment)
		h.u64(r.Extent.Offset)
		h.u64(r.Extent.Size)
		h.u64(uint64(r.Tier))
		h.u64(uint64(r.Status))
	}
	if t := st.Task; t == nil {
		h.u64(0)
	} else {
		h.u64(1 + uint64(t.Kind))
		h.id(t.Client)
		h.u64(uint64(t.Started))
		h.u64(t.Source)
		h.u64(uint64(len(t.Targets)))
		for _, id := range t.Targets {
			h.u64(id)
		}
	}
	return h.sum()
}
