package store

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
	"time"

	"pgregory.net/rapid"

	"metad/store/alloc"
)

// Model-based property test: random operation sequences run against the store and against a small
// reference model written from SEMANTICS sections 1-7 in plain maps. After every step the store's
// reason must be the model's, and the visible state (tenants, objects, replicas, groups, leases,
// quotas, segment usage) must be the model's.
//
// The model does not predict placement offsets. It learns each replica's extent from the store's
// answer and checks it independently: the count of replicas per tier is min(asked, segments of the
// tier with a free span large enough before the placement), every replica is on a distinct segment
// that could hold it, a preferred segment that could hold it comes first, and NO_AVAILABLE_HANDLE is
// accepted only when no segment of a tier asked for has a large enough free span. The segments'
// free spans "before the placement" come from a clone of the segment registry, replayed with the
// model's own frees and the store's reported extents.

var (
	mTenantNames = []string{"default", "a", "b"} // "a" has a small quota
	mKeys        = []string{"k1", "k2", "k3", "k4", "k5"}
	mGroupNames  = []string{"G1", "G2", "G3"}
	mSizes       = []uint64{1, 64, 65, 100, 200, 500, 700, 1500}
)

const (
	mQuotaA   = 1500
	mTTL      = int64(10 * time.Second)
	mDiscard  = int64(DefaultDiscardAfter)
	mStartNow = 1000 * sec
)

type mSegDef struct {
	n    byte
	tier alloc.Tier
	size uint64
}

// Segments: three MEMORY (one small) and one NOF; sizes chosen so that placements fail sometimes.
var mSegDefs = []mSegDef{
	{1, alloc.TierMemory, 4096},
	{2, alloc.TierMemory, 2048},
	{3, alloc.TierMemory, 512},
	{4, alloc.TierNOF, 2048},
}

func mSegment(d mSegDef, owner alloc.ID) alloc.Segment {
	return alloc.Segment{ID: segID(d.n), Name: "seg", Base: 1 << 30 * uint64(d.n), Size: d.size,
		Endpoint: "127.0.0.1:7000", Tier: d.tier, Owner: owner}
}

// ---- the reference model -------------------------------------------------------------------------

type mReplica struct {
	id     uint64
	tier   alloc.Tier
	ext    alloc.Extent // learned from the store's answer
	status ReplicaStatus
}

type mObject struct {
	id, version  uint64 // id 0: not learned yet (learned at the next state check)
	group        string
	size         uint64
	writer       alloc.ID
	putStart     int64
	softTTL      int64 // staged soft pin
	softDeadline int64
	hardPin      bool
	reps         []mReplica
	lease        int64 // leader soft state
}

func (o *mObject) hasComplete() bool {
	return slices.ContainsFunc(o.reps, func(r mReplica) bool { return r.status == Complete })
}

func (o *mObject) hasProcessing() bool {
	return slices.ContainsFunc(o.reps, func(r mReplica) bool { return r.status == Processing })
}

func (o *mObject) memBytes() uint64 {
	n := uint64(0)
	for _, r := range o.reps {
		if r.tier == alloc.TierMemory {
			n++
		}
	}
	return n * o.size
}

type mGroup struct {
	joined bool // gained a member since the last group-wide lease refresh
}

type mTenant struct {
	instance  uint64
	requested uint64
	objects   map[string]*mObject
	groups    map[string]*mGroup
	seenIDs   map[uint64]bool // object ids handed out to this instance
	maxRepID  uint64
}

func (t *mTenant) charged() uint64 {
	var c uint64
	for _, o := range t.objects {
		c += o.memBytes()
	}
	return c
}

func (t *mTenant) members(g string) []string {
	var ks []string
	for k, o := range t.objects {
		if o.group == g {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

type refModel struct {
	tenants      map[string]*mTenant
	nextInstance uint64
	mounted      map[alloc.ID]mSegDef
	floor        int64 // lease floor set by ResetSoftState
}

func newRefModel() *refModel {
	m := &refModel{tenants: map[string]*mTenant{}, mounted: map[alloc.ID]mSegDef{}}
	m.register("default", 0)
	return m
}

func (m *refModel) register(name string, quota uint64) uint64 {
	m.nextInstance++
	m.tenants[name] = &mTenant{instance: m.nextInstance, requested: quota,
		objects: map[string]*mObject{}, groups: map[string]*mGroup{}, seenIDs: map[uint64]bool{}}
	return m.nextInstance
}

// erase drops an object and, with its last member, its group.
func (m *refModel) erase(t *mTenant, key string) {
	o := t.objects[key]
	delete(t.objects, key)
	if o.group != "" && len(t.members(o.group)) == 0 {
		delete(t.groups, o.group)
	}
}

func (m *refModel) leased(o *mObject, now int64) bool { return now < max(o.lease, m.floor) }

func (m *refModel) capacity(tier alloc.Tier) uint64 {
	var c uint64
	for _, d := range m.mounted {
		if d.tier == tier {
			c += d.size
		}
	}
	return c
}

// effective computes SEMANTICS section 6 independently of alloc.EffectiveQuotas.
func (m *refModel) effective() map[string]uint64 {
	capacity := m.capacity(alloc.TierMemory)
	names := slices.Sorted(maps.Keys(m.tenants))
	out := map[string]uint64{}
	sum := new(big.Int)
	for _, n := range names {
		sum.Add(sum, new(big.Int).SetUint64(m.tenants[n].requested))
	}
	if sum.Cmp(new(big.Int).SetUint64(capacity)) <= 0 {
		for _, n := range names {
			out[n] = m.tenants[n].requested
		}
		return out
	}
	type share struct {
		name string
		rem  *big.Int
	}
	var shares []share
	given := uint64(0)
	for _, n := range names {
		r := m.tenants[n].requested
		if r == 0 {
			out[n] = 0
			continue
		}
		num := new(big.Int).Mul(new(big.Int).SetUint64(capacity), new(big.Int).SetUint64(r))
		q, rem := new(big.Int).QuoRem(num, sum, new(big.Int))
		out[n] = q.Uint64()
		given += out[n]
		shares = append(shares, share{n, rem})
	}
	slices.SortStableFunc(shares, func(a, b share) int {
		if c := b.rem.Cmp(a.rem); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	for i := uint64(0); i < capacity-given; i++ {
		out[shares[i].name]++
	}
	return out
}

// ---- modelHarness -------------------------------------------------------------------------------------

type modelHarness struct {
	rt    *rapid.T
	s     *Store
	m     *refModel
	now   int64
	evict bool // a MEMORY placement that eviction could help failed this step (the store's eviction flag must say so)
	step  int
	stats map[string]int // outcomes seen, per operation (logged with -v)
}

func (h *modelHarness) fatalf(format string, args ...any) {
	h.rt.Helper()
	h.rt.Fatalf("step %d (now %ds): %s", h.step, (h.now-mStartNow)/sec, fmt.Sprintf(format, args...))
}

func (h *modelHarness) want(what string, err error, r Reason) {
	h.rt.Helper()
	if h.stats != nil {
		h.stats[strings.SplitN(what, " [", 2)[0]+" "+r.String()]++
	}
	if got := ReasonOf(err); got != r {
		h.fatalf("%s: reason %s (%v), model says %s", what, got, err, r)
	}
}

// segmentsThatFit returns the segments of tier in reg with a free span that holds size.
func segmentsThatFit(reg *alloc.Registry, tier alloc.Tier, size uint64) map[alloc.ID]bool {
	out := map[alloc.ID]bool{}
	need := alloc.RoundUp(size)
	for _, info := range reg.List() {
		if info.Tier != tier {
			continue
		}
		spans, _ := reg.FreeSpans(info.ID)
		for _, sp := range spans {
			if sp.Size >= need {
				out[info.ID] = true
				break
			}
		}
	}
	return out
}

// segmentLargeEnough reports whether some segment of tier is at least size bytes (rounded) in all.
func segmentLargeEnough(reg *alloc.Registry, tier alloc.Tier, size uint64) bool {
	return slices.ContainsFunc(reg.List(), func(s alloc.SegmentInfo) bool {
		return s.Tier == tier && s.Size >= alloc.RoundUp(size)
	})
}

func (h *modelHarness) softTTL(c ReplicaConfig) int64 {
	if c.SoftPin != SoftPinEnable {
		return 0
	}
	if c.SoftPinTTL == 0 {
		return int64(DefaultSoftPin)
	}
	return int64(c.SoftPinTTL)
}

// checkPlacement checks a successful placement against sim (the segments just before it) and
// reserves its extents in sim. It returns the model replicas.
func (h *modelHarness) checkPlacement(what string, sim *alloc.Registry, t *mTenant, req PutStartRequest, reps []Replica) []mReplica {
	h.rt.Helper()
	memFit := segmentsThatFit(sim, alloc.TierMemory, req.Size)
	nofFit := segmentsThatFit(sim, alloc.TierNOF, req.Size)
	wantMem := min(req.Config.Memory, len(memFit))
	wantNOF := min(req.Config.NOF, len(nofFit))
	if len(reps) != wantMem+wantNOF {
		h.fatalf("%s: %d replicas, model expects %d MEMORY + %d NOF (fit: %d MEMORY, %d NOF segments)",
			what, len(reps), wantMem, wantNOF, len(memFit), len(nofFit))
	}
	seen := map[alloc.ID]bool{}
	var out []mReplica
	for i, r := range reps {
		tier, fit := alloc.TierMemory, memFit
		if i >= wantMem {
			tier, fit = alloc.TierNOF, nofFit
		}
		if r.Tier != tier || r.Status != Processing {
			h.fatalf("%s: replica %d is %s/%s, want %s/PROCESSING", what, i, r.Tier, r.Status, tier)
		}
		if !fit[r.Extent.Segment] || seen[r.Extent.Segment] {
			h.fatalf("%s: replica %d on segment %s: not a distinct segment that could hold it", what, i, r.Extent.Segment)
		}
		seen[r.Extent.Segment] = true
		if r.Extent.Size != alloc.RoundUp(req.Size) {
			h.fatalf("%s: replica %d extent size %d, want %d", what, i, r.Extent.Size, alloc.RoundUp(req.Size))
		}
		if r.ID <= t.maxRepID {
			h.fatalf("%s: replica id %d not fresh (last %d)", what, r.ID, t.maxRepID)
		}
		t.maxRepID = r.ID
		if err := sim.Reserve(r.Extent); err != nil {
			h.fatalf("%s: replica %d extent %+v was not free: %v", what, i, r.Extent, err)
		}
		out = append(out, mReplica{id: r.ID, tier: r.Tier, ext: r.Extent, status: Processing})
	}
	// A preferred segment that could hold the replica is used first.
	if len(req.Config.Preferred) > 0 {
		p := req.Config.Preferred[0]
		for i, r := range reps {
			first := i == 0 || (i == wantMem && r.Tier == alloc.TierNOF)
			if first && (r.Tier == alloc.TierMemory && memFit[p] || r.Tier == alloc.TierNOF && nofFit[p]) && r.Extent.Segment != p {
				h.fatalf("%s: first %s replica on %s, preferred %s could hold it", what, r.Tier, r.Extent.Segment, p)
			}
		}
	}
	return out
}

// modelPutStart applies a PutStart (or UpsertStart) to the model and checks the store's answer.
// sim holds the segments' state just before this request and is kept up to date.
func (h *modelHarness) modelPutStart(what string, sim *alloc.Registry, req PutStartRequest, upsert bool, reps []Replica, err error) {
	h.rt.Helper()
	name := NormalizeTenant(req.Tenant)
	t := h.m.tenants[name]
	if t == nil {
		h.want(what, err, TenantNotRegistered)
		return
	}
	o := t.objects[req.Key]
	replace := false
	if o != nil {
		if upsert {
			switch {
			case o.group != req.Group:
				h.want(what, err, ObjectAlreadyExists)
				return
			case o.hasProcessing():
				h.want(what, err, InvalidWrite)
				return
			case o.size == req.Size:
				h.want(what, err, OK)
				if len(reps) != len(o.reps) {
					h.fatalf("%s: same-size upsert returned %d replicas, object has %d", what, len(reps), len(o.reps))
				}
				for i := range o.reps {
					o.reps[i].status = Processing
					r := reps[i]
					if r.ID != o.reps[i].id || r.Extent != o.reps[i].ext || r.Tier != o.reps[i].tier || r.Status != Processing {
						h.fatalf("%s: same-size upsert replica %d = %+v, want the old extent %+v PROCESSING", what, i, r, o.reps[i])
					}
				}
				h.restart(o, req)
				return
			}
			replace = true
		} else {
			if o.hasComplete() || h.now-o.putStart <= mDiscard {
				h.want(what, err, ObjectAlreadyExists)
				return
			}
			// A stale attempt: discarded, then the put proceeds (whatever its outcome).
			for _, r := range o.reps {
				if err := sim.Free(r.ext); err != nil {
					h.fatalf("%s: model discard: free %+v: %v", what, r.ext, err)
				}
			}
			h.m.erase(t, req.Key)
			o = nil
		}
	}
	wantCharge := uint64(req.Config.Memory) * req.Size
	if t.requested != 0 && t.charged()+wantCharge > h.m.effective()[name] {
		h.want(what, err, TenantQuotaExceeded)
		return
	}
	memFit := segmentsThatFit(sim, alloc.TierMemory, req.Size)
	nofFit := segmentsThatFit(sim, alloc.TierNOF, req.Size)
	if len(memFit) == 0 || (req.Config.NOF > 0 && len(nofFit) == 0) {
		h.want(what, err, NoAvailableHandle)
		// Memory eviction is wanted only when MEMORY had no room and freeing some could help.
		h.evict = h.evict || (len(memFit) == 0 && segmentLargeEnough(sim, alloc.TierMemory, req.Size))
		return
	}
	h.want(what, err, OK)
	nr := h.checkPlacement(what, sim, t, req, reps)
	if replace {
		for _, r := range o.reps {
			if err := sim.Free(r.ext); err != nil {
				h.fatalf("%s: model upsert: free %+v: %v", what, r.ext, err)
			}
		}
		o.size = req.Size
		o.reps = nr
		h.restart(o, req)
		return
	}
	o = &mObject{group: req.Group, size: req.Size, version: 1, reps: nr}
	h.restart(o, req)
	o.version = 1
	t.objects[req.Key] = o
	if req.Group != "" {
		g := t.groups[req.Group]
		if g == nil {
			g = &mGroup{}
			t.groups[req.Group] = g
		}
		g.joined = true
	}
}

// restart sets the fields a write (re)start sets and bumps the version.
func (h *modelHarness) restart(o *mObject, req PutStartRequest) {
	o.writer = req.Client
	o.putStart = h.now
	o.hardPin = req.Config.HardPin
	o.softTTL = h.softTTL(req.Config)
	o.softDeadline = 0
	o.version++
}

func (h *modelHarness) modelPutEnd(what string, req PutEndRequest, revoke bool, err error) {
	h.rt.Helper()
	t := h.m.tenants[NormalizeTenant(req.Tenant)]
	if t == nil {
		h.want(what, err, TenantNotRegistered)
		return
	}
	o := t.objects[req.Key]
	if o == nil {
		h.want(what, err, ObjectNotFound)
		return
	}
	if o.writer != req.Client {
		h.want(what, err, IllegalClient)
		return
	}
	selected, processing := 0, 0
	for _, r := range o.reps {
		if req.Tier == 0 || r.tier == req.Tier {
			selected++
			if r.status == Processing {
				processing++
			}
		}
	}
	if revoke {
		if processing == 0 {
			h.want(what, err, InvalidWrite)
			return
		}
		h.want(what, err, OK)
		var keep []mReplica
		for _, r := range o.reps {
			if !((req.Tier == 0 || r.tier == req.Tier) && r.status == Processing) {
				keep = append(keep, r)
			}
		}
		if len(keep) == 0 {
			h.m.erase(t, req.Key)
			return
		}
		o.reps = keep
		o.version++
		return
	}
	if processing == 0 {
		if selected > 0 {
			h.want(what, err, OK) // repeated PutEnd
			o.lease = max(o.lease, h.now)
		} else {
			h.want(what, err, InvalidWrite)
		}
		return
	}
	h.want(what, err, OK)
	had := o.hasComplete()
	for i := range o.reps {
		if req.Tier == 0 || o.reps[i].tier == req.Tier {
			o.reps[i].status = Complete
		}
	}
	if !had && o.softTTL > 0 {
		o.softDeadline = h.now + o.softTTL
		o.softTTL = 0
	}
	o.version++
	o.lease = max(o.lease, h.now) // ranks the object by its write time; protects nothing
}

// modelRead is Get/Exist: the reason, and on success the lease (with group coalescing).
func (h *modelHarness) modelRead(tenant, key string) (Reason, *mObject) {
	t := h.m.tenants[NormalizeTenant(tenant)]
	if t == nil {
		return ObjectNotFound, nil
	}
	o := t.objects[key]
	if o == nil {
		return ObjectNotFound, nil
	}
	if !o.hasComplete() {
		return ReplicaIsNotReady, nil
	}
	until := h.now + mTTL
	old := o.lease
	o.lease = max(o.lease, until)
	if o.group != "" {
		g := t.groups[o.group]
		if old < h.now+mTTL/2 || g.joined {
			for _, k := range t.members(o.group) {
				m := t.objects[k]
				m.lease = max(m.lease, until)
			}
			g.joined = false
		}
	}
	return OK, o
}

func (h *modelHarness) modelGet(what, tenant, key string, res GetResult, err error) {
	h.rt.Helper()
	r, o := h.modelRead(tenant, key)
	h.want(what, err, r)
	if r != OK {
		return
	}
	if res.LeaseTTL != time.Duration(mTTL) {
		h.fatalf("%s: lease ttl %s", what, res.LeaseTTL)
	}
	var want []Replica
	for _, mr := range o.reps {
		if mr.status == Complete {
			want = append(want, Replica{ID: mr.id, Extent: mr.ext, Tier: mr.tier, Status: Complete})
		}
	}
	if !slices.Equal(res.Replicas, want) {
		h.fatalf("%s: replicas %+v, model %+v", what, res.Replicas, want)
	}
}

// removable is the leader's check of Remove (and of each member for RemoveGroup).
func (h *modelHarness) removable(o *mObject, force bool) Reason {
	if o.hasProcessing() {
		return ReplicaIsNotReady
	}
	if !force && h.m.leased(o, h.now) {
		return ObjectHasLease
	}
	return OK
}

func (h *modelHarness) modelRemove(what, tenant, key string, force bool, err error) {
	h.rt.Helper()
	t := h.m.tenants[NormalizeTenant(tenant)]
	if t == nil {
		h.want(what, err, TenantNotRegistered)
		return
	}
	o := t.objects[key]
	if o == nil {
		h.want(what, err, ObjectNotFound)
		return
	}
	r := h.removable(o, force)
	h.want(what, err, r)
	if r == OK {
		h.m.erase(t, key)
	}
}

// modelUnmount drops the model's replicas on the gone segments; an object left with none is erased.
func (h *modelHarness) modelUnmount(gone map[alloc.ID]bool) UnmountResult {
	var r UnmountResult
	for id := range gone {
		delete(h.m.mounted, id)
	}
	for _, t := range h.m.tenants {
		for _, k := range slices.Sorted(maps.Keys(t.objects)) {
			o := t.objects[k]
			var keep []mReplica
			for _, rep := range o.reps {
				if gone[rep.ext.Segment] {
					r.Replicas++
				} else {
					keep = append(keep, rep)
				}
			}
			switch {
			case len(keep) == len(o.reps):
			case len(keep) == 0:
				h.m.erase(t, k)
				r.Erased++
			default:
				o.reps = keep
				o.version++
			}
		}
	}
	return r
}
